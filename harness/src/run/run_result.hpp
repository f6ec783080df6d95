// Everything a run produced, typed: summary.json's schema. The reports layer writes these types
// to summary.json and reads them back (reports/run/summary_json.hpp), the CLI turns them into an
// exit code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "analysis/oom_analysis.hpp"
#include "device/device.hpp"
#include "oomlab/params.hpp"
#include "oomlab/program_replay.hpp"
#include "oomlab/scenario.hpp"
#include "run/framework_model.hpp"
#include "run/program_run.hpp"
#include "run/verify_mode.hpp"

namespace oomlab {

// ProgramBlock is the plugin API's (oomlab/scenario.hpp); comparing it is the schema's concern.
[[nodiscard]] inline bool operator==(const ProgramBlock& a, const ProgramBlock& b) {
  return a.bytes == b.bytes && a.trace_index == b.trace_index && a.frames == b.frames;
}

struct OomRecord {
  std::uint64_t event = 0;  // seq of the oom event in events.csv (a replay: see trace_entry)
  std::uint64_t step = 0;
  std::string phase;
  double t_ms = 0.0;
  std::uint64_t request_bytes = 0;
  std::string request_label;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_count = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocator_used_bytes = 0;  // the allocator's own count (pools), 0 where it has none
  std::uint64_t device_free_bytes = 0;
  std::uint64_t device_total_bytes = 0;
  std::optional<std::uint64_t> largest_free_bytes;
  std::uint64_t granularity_bytes = kDevicePageBytes;  // the backend's (BackendInfo), for 0 above
  Diagnosis diagnosis;
  // A caching allocator's own account (torch): what PyTorch's OutOfMemoryError would say.
  std::optional<CacheState> cache;
  // A replay: where the failing request stands in the trace (0-based entry; the line for text
  // formats), the program's stack there, and its largest blocks then.
  std::optional<std::uint64_t> trace_entry;
  std::optional<std::uint64_t> trace_line;
  std::vector<std::string> frames;
  // "snapshot" (PyTorch's stacks), "traceback" (the program's), "compiled" (a compiled step's
  // metadata: where the program called it), ""
  std::string frames_from;
  std::string user_frame;  // the innermost frame in the user's own files (one of `frames`)
  std::string user_line;   // the code there, if known
  std::vector<ProgramBlock> largest_live;
  std::vector<trace::MemoryHolder> holders;  // what filled memory then, by allocating frame
  std::optional<ProgramMessage> program;     // exec: the program's own words
  std::vector<SettingAnswer> remedies;       // torch replays: each setting at the run's budget
  // "driver" | "budget-cap" | "fraction" (a framework's own cap) | a model's own name
  // (BackendInfo::oom_source)
  std::string source;
  std::optional<std::string> error;  // the CUDA error's name; none for budget-cap
  LeakFit leak;
  bool operator==(const OomRecord&) const = default;
};

// One trial of a scenario's search (RunContext::begin_trial): its events and whether it fitted.
struct TrialSpan {
  std::string label;
  std::uint64_t first_event = 0;  // seq in events.csv
  std::uint64_t last_event = 0;
  bool fitted = false;
  bool operator==(const TrialSpan&) const = default;
};

// Device memory before the run and after everything was freed: the harness's own leak check.
struct Cleanup {
  std::uint64_t device_free_before = 0;
  std::uint64_t device_free_after = 0;
  // Other processes on the device when free memory came back short: the shortfall may be
  // theirs, so it is not called this run's leak.
  unsigned other_processes = 0;
  // Why a shortfall is reported but not counted as this run's leak (empty: it counts).
  std::string not_counted;
  [[nodiscard]] bool leaked(std::int64_t tolerance) const {
    return not_counted.empty() && difference() > tolerance;
  }
  [[nodiscard]] std::int64_t difference() const {
    return static_cast<std::int64_t>(device_free_before) -
           static_cast<std::int64_t>(device_free_after);
  }
  bool operator==(const Cleanup&) const = default;
};

// Everything a run produced, for the reports and the exit code.
struct RunResult {
  Environment environment;
  std::optional<DeviceFacts> device;  // the device the run used, if any
  bool simulated = false;

  // A scenario run's scenario and allocator; both empty for a program run (`exec`), whose
  // command and memory are in `program`.
  std::string scenario;
  Params params;
  std::uint64_t seed = 0;
  std::string allocator;
  BackendKind backend = BackendKind::automatic;  // `allocator`, typed (automatic: none ran)
  Params allocator_options;
  // The trace the scenario replayed, as read (null: none): a later run of the same request
  // adopts it (RunConfig::trace) instead of reading the file again.
  std::shared_ptr<const trace::Trace> input_trace;
  std::uint64_t budget_bytes = 0;
  std::uint64_t ballast_bytes = 0;
  std::optional<std::uint64_t>
      cap_bytes;  // oomlab's own cap, where it enforces the budget (managed)
  std::vector<std::string> notices;

  Outcome outcome = Outcome::completed;
  std::string error_message;
  // events.csv could not be written (a full disk): the system's reason; the outcome still holds.
  std::string events_error;
  // An error or a timeout: the run's last events before it (what was it doing?).
  struct RecentEvent {
    std::uint64_t seq = 0;
    std::string op;
    std::uint64_t bytes = 0;
    std::string status;
    std::string phase;
    std::uint64_t step = 0;
    std::uint64_t live_bytes = 0;
    bool operator==(const RecentEvent&) const = default;
  };
  std::vector<RecentEvent> last_events;
  std::optional<OomRecord> oom;
  // A scenario run's peaks (0 for a program run: its peaks are program.peak_bytes and
  // program.peak_used_bytes).
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t failed = 0;
  std::uint64_t events = 0;
  VerifyMode verify = VerifyMode::off;    // what was checked (off on the sim, whatever was asked)
  std::uint64_t integrity_checked = 0;    // block verifications, at the OOM and at the end
  std::uint64_t integrity_corrupted = 0;  // of those, blocks that did not hold their pattern
  std::uint64_t integrity_corrupted_words = 0;
  std::vector<std::string> notes;  // the scenario's findings in words
  std::vector<TrialSpan> trials;   // a search's trials, in the order run
  std::vector<std::pair<std::string, double>> metrics;
  double duration_ms = 0.0;
  std::optional<Cleanup> cleanup;     // real devices only
  std::optional<ProgramRun> program;  // exec
  // exec: each PyTorch snapshot through the model, the one of the process that hit the OOM
  // first; empty without a snapshot.
  std::vector<ProgramModel> models;

  [[nodiscard]] bool is_program() const { return program.has_value(); }
};

}  // namespace oomlab
