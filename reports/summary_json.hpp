// summary.json, schema oomlab.run.v1 (docs/outputs.md): the contract CI and `compare` read.
// Field names are fixed; fields may be added, never renamed or removed.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record/formats.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// How this oomlab was invoked: its command line for the "oomlab" block, and what the files its
// parameters name held ("trace" -> "sha256:...", io/file_digest.hpp) for scenario.files.
struct Invocation {
  std::vector<std::string> argv;
  std::map<std::string, std::string> files;
  std::filesystem::path folder;  // the run folder: files in it are named relative to it
};

[[nodiscard]] nlohmann::ordered_json summary_json(const RunResult& result,
                                                  const Invocation& invocation);
[[nodiscard]] nlohmann::ordered_json params_json(const Params& params);
// exec: one snapshot through the model ("model" of summary.json and of frontier exec's JSON);
// its snapshot named relative to `folder` when it lies in it.
[[nodiscard]] nlohmann::ordered_json model_json(const ProgramModel& model,
                                                const std::filesystem::path& folder);
[[nodiscard]] nlohmann::ordered_json environment_json(const Environment& env,
                                                      const std::optional<DeviceFacts>& device,
                                                      bool simulated);
[[nodiscard]] nlohmann::ordered_json device_json(const DeviceFacts& device);
[[nodiscard]] nlohmann::ordered_json version_json();

}  // namespace oomlab
