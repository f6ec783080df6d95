// summary.json, schema oomlab.run.v1 (docs/outputs.md): the contract CI and `compare` read.
// Field names are fixed; fields may be added, never renamed or removed. The schema's types are
// the run's own (run/run_result.hpp); each is written and read back here, the writer beside the
// reader (summary_json.cpp, summary_oom.cpp, summary_program.cpp, summary_ranks.cpp), so that
// what oomlab writes is what its reports, compare and matrix read.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "record/formats.hpp"
#include "reports/run/report_input.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// How this oomlab was invoked: its command line for the "oomlab" block, and what the files its
// parameters name held ("trace" -> "sha256:...", io/file_digest.hpp) for scenario.files.
struct Invocation {
  std::vector<std::string> argv;
  std::map<std::string, std::string> files;
  std::filesystem::path folder;  // the run folder: files in it are named relative to it
};

// summary.json's "kind": a scenario's run, or a program's (`exec`, no scenario or allocator).
enum class RunKind : std::uint8_t { scenario, program };
[[nodiscard]] std::string_view to_string(RunKind kind);

[[nodiscard]] nlohmann::ordered_json summary_json(const RunResult& result,
                                                  const Invocation& invocation);
// A summary.json read back into the schema's types: every field summary_json writes but the
// parameters' types (scenario.params and allocator.options are read as JSON: see
// summary_params), and the environment's probe-only fields (its devices, cuda_problem). Files
// the run wrote are resolved in `folder`. Summaries of older oomlab versions read too: absent
// fields keep their defaults, and an exec written as scenario "exec" is a program run.
// Error(input) naming the file and the field when a field is malformed.
[[nodiscard]] RunResult read_summary(const JsonFields& summary,
                                     const std::filesystem::path& folder = {});
// The run's kind, from "kind", or for a summary written before it, from scenario "exec".
[[nodiscard]] RunKind read_run_kind(const JsonFields& summary);
// scenario.params and allocator.options as written (objects, empty for a program run).
struct SummaryParams {
  nlohmann::json scenario = nlohmann::json::object();
  nlohmann::json allocator = nlohmann::json::object();
};
[[nodiscard]] SummaryParams summary_params(const JsonFields& summary);

[[nodiscard]] nlohmann::ordered_json oom_json(const OomRecord& oom);
// summary.json's "oom": the one reader of it, for reports, compare and the matrix table.
[[nodiscard]] OomRecord read_oom(const JsonFields& oom);
// "trace entry 16,794" for a replay, else "event 1,033": the one numbering a reader is shown.
[[nodiscard]] std::string oom_where(const OomRecord& oom);
// The framework's own out-of-memory error for an OOM whose allocator kept a cache state, in its
// words (CacheWords::message; "" where it has none).
[[nodiscard]] std::string cache_message(const OomRecord& oom);

[[nodiscard]] nlohmann::ordered_json program_json(const ProgramRun& program,
                                                  const std::filesystem::path& folder);
[[nodiscard]] ProgramRun read_program(const JsonFields& program,
                                      const std::filesystem::path& folder);
// summary.program.frameworks (what the exec shim saw imported); [] when absent (older files).
[[nodiscard]] std::vector<FrameworkSeen> read_frameworks(const JsonFields& program);
// exec: one snapshot through the model ("model" of summary.json and of frontier exec's JSON);
// its snapshot named relative to `folder` when it lies in it.
[[nodiscard]] nlohmann::ordered_json model_json(const ProgramModel& model,
                                                const std::filesystem::path& folder);
[[nodiscard]] ProgramModel read_model(const JsonFields& model,
                                      const std::filesystem::path& folder = {});

[[nodiscard]] nlohmann::ordered_json params_json(const Params& params);
// The scenario's metrics: whole numbers as integers, a metric without a value as null.
[[nodiscard]] nlohmann::ordered_json metrics_json(
    const std::vector<std::pair<std::string, double>>& metrics);
[[nodiscard]] nlohmann::ordered_json environment_json(const Environment& env,
                                                      const std::optional<DeviceFacts>& device,
                                                      bool simulated);
[[nodiscard]] nlohmann::ordered_json device_json(const DeviceFacts& device);
[[nodiscard]] DeviceFacts read_device(const JsonFields& device);
[[nodiscard]] nlohmann::ordered_json version_json();

}  // namespace oomlab
