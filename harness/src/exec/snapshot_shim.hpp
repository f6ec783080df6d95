// exec's memory snapshots of a Python program, with no change to it: the start-up shim
// (shim/sitecustomize.py and shim/oomlab_shim.py, carried in the binary) and each registered
// framework's module (Framework::program_shim) written into a private temporary folder that goes
// first on the program's PYTHONPATH, and, once the program has ended, what the shim's status
// file says was written or why nothing was. The folder goes on every way out.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/exec_run.hpp"

namespace oomlab {

// What the shim did in the program's processes.
struct SnapshotFindings {
  std::vector<std::filesystem::path> files;  // the snapshots written, full paths, by name
  std::string note;                          // why there is none; empty when there are some
  std::vector<std::string> failures;         // the shim's own failures, each once
  std::vector<FrameworkSeen> frameworks;     // each (name, version, settings) once, as first seen
};

class SnapshotShim {
 public:
  // Snapshots go to options.folder, else `run_folder`, else a folder inside the private one
  // (removed with it). Throws Error(io) when the private folder cannot be made.
  SnapshotShim(const SnapshotOptions& options, const std::filesystem::path& run_folder);
  ~SnapshotShim();
  SnapshotShim(const SnapshotShim&) = delete;
  SnapshotShim& operator=(const SnapshotShim&) = delete;
  SnapshotShim(SnapshotShim&&) = delete;
  SnapshotShim& operator=(SnapshotShim&&) = delete;

  // What the program's environment gains: PYTHONPATH with the shim's folder first and
  // `inherited` (the PYTHONPATH it would have had) after it, and the shim's own settings.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> environment(
      const std::optional<std::string>& inherited) const;
  // Read after the program ended.
  [[nodiscard]] SnapshotFindings findings() const;
  // Where the snapshots go; whether they go with the private folder at the end.
  [[nodiscard]] const std::filesystem::path& folder() const { return snapshots_; }
  [[nodiscard]] bool temporary() const { return temporary_; }

 private:
  SnapshotOptions options_;
  std::filesystem::path private_;  // sitecustomize.py, the modules, status.jsonl
  std::string modules_;            // OOMLAB_SHIM_MODULES: the frameworks' modules, by name
  std::filesystem::path snapshots_;
  bool temporary_ = false;
};

}  // namespace oomlab
