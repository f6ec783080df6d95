// A temporary folder for a run's PyTorch snapshots that must outlive the run (the model reads
// them after it: a frontier search's top run, an exec with no run folder), removed with this.
#pragma once

#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp is POSIX

#include <filesystem>
#include <string>
#include <system_error>

namespace oomlab {

class SnapshotFolder {
 public:
  SnapshotFolder() {
    std::error_code ec;
    std::string pattern =
        (std::filesystem::temp_directory_path(ec) / "oomlab-snapshots-XXXXXX").string();
    if (!ec && ::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~SnapshotFolder() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  SnapshotFolder(const SnapshotFolder&) = delete;
  SnapshotFolder& operator=(const SnapshotFolder&) = delete;
  SnapshotFolder(SnapshotFolder&&) = delete;
  SnapshotFolder& operator=(SnapshotFolder&&) = delete;
  // Empty when none could be made: the run then keeps no snapshot for the model.
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace oomlab
