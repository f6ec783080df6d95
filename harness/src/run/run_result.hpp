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
#include "run/verify_mode.hpp"

namespace oomlab {

// ProgramBlock is the plugin API's (oomlab/scenario.hpp); comparing it is the schema's concern.
[[nodiscard]] inline bool operator==(const ProgramBlock& a, const ProgramBlock& b) {
  return a.bytes == b.bytes && a.trace_index == b.trace_index && a.frames == b.frames;
}

enum class Outcome : std::uint8_t { oom, completed, error, interrupted, timeout };
[[nodiscard]] std::string_view to_string(Outcome outcome);

// The OOM as a program run by `exec` reported it itself: its line, and the figures it carried
// beyond the request (PyTorch: what its cache held).
struct ProgramMessage {
  std::string framework;  // "PyTorch", "JAX/XLA", ...
  std::string line;
  std::optional<std::uint64_t> process_used_bytes;
  std::optional<std::uint64_t> framework_allocated_bytes;
  std::optional<std::uint64_t> framework_cached_free_bytes;  // reserved but unallocated
  std::optional<std::uint64_t> device_free_bytes;            // what it said the device had free
  std::string sizing_setting;  // the framework sized itself from the device's total: the fix
  std::size_t lines_seen = 0;  // OOM lines in its output in all
  bool operator==(const ProgramMessage&) const = default;
};

// A setting of PyTorch's allocator replayed at the run's budget (a replay on torch that ran out
// of memory): whether the whole trace completes with it. The OOM's advice names only these.
struct SettingCheck {
  std::string setting;     // "expandable_segments", "max_split_size=128MiB", ...
  std::string alloc_conf;  // what to set: "expandable_segments:True" ("" for PyTorch's defaults)
  bool completes_at_budget = false;
  std::optional<std::uint64_t> first_failure_index;  // where it failed instead
  bool operator==(const SettingCheck&) const = default;
};

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
  Diagnosis diagnosis;
  // A caching allocator's own account (torch): what PyTorch's OutOfMemoryError would say.
  std::optional<CacheState> cache;
  // A replay: where the failing request stands in the trace (0-based entry; the line for text
  // formats), the program's stack there, and its largest blocks then.
  std::optional<std::uint64_t> trace_entry;
  std::optional<std::uint64_t> trace_line;
  std::vector<std::string> frames;
  std::string frames_from;  // "snapshot" (PyTorch's stacks), "traceback" (the program's), ""
  std::string user_frame;   // the innermost frame in the user's own files (one of `frames`)
  std::string user_line;    // the code there, if known
  std::vector<ProgramBlock> largest_live;
  std::vector<trace::MemoryHolder> holders;  // what filled memory then, by allocating frame
  std::optional<ProgramMessage> program;     // exec: the program's own words
  std::vector<SettingCheck> remedies;        // torch replays: each setting at the run's budget
  std::string source;                // "driver" | "budget-cap" | "fraction" (PyTorch's own cap)
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

// exec: one device's share of a program's run (its budget, its own timeline's figures).
struct DeviceRun {
  int index = 0;  // oomlab's numbering (nvidia-smi's)
  std::string uuid;
  std::uint64_t budget_bytes = 0;
  std::uint64_t ballast_bytes = 0;
  std::uint64_t peak_bytes = 0;       // the program's processes on it at the most (NVML)
  std::uint64_t peak_used_bytes = 0;  // the most it took of its budget (its free memory)
  std::uint64_t first_bytes = 0;
  std::optional<double> full_ms;  // when its use first came within 64 MiB of its budget
  std::string events_file;        // its own rows in the run folder; empty for one device
  bool operator==(const DeviceRun&) const = default;
};

// exec: one rank of a distributed job, as its output, torchrun and its device showed it.
struct RankRun {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> device;  // oomlab's index of the device it ran on
  bool ran_out = false;       // its output reported an OOM
  std::optional<double> oom_ms;
  std::vector<std::string> last_lines;  // its marked lines, the last few
  // Its device's memory grew after the first OOM of the job (it went on working), or not (it
  // waited); none when its device is not known.
  std::optional<bool> memory_rose_after_oom;
  bool operator==(const RankRun&) const = default;
};

// exec: the rank that ran out of memory first, and how that is known.
struct FailingRank {
  int rank = 0;
  std::optional<int> local_rank;
  std::optional<int> device;
  std::optional<double> t_ms;
  std::vector<std::string> evidence;  // each in words: the OOM line's mark, torchrun, the device
  std::vector<int> waiting;           // ranks that did not run out and whose memory stayed
  std::string verdict;                // "rank 1 (GPU 1) ran out of memory at 3.21 s; ..."
  bool operator==(const FailingRank&) const = default;
};

// A program run by `exec`: how it ended and what its device memory did.
// A framework the exec shim saw a program's Python processes import: its name ("torch", "cupy",
// "jax", "rmm"), its version as the framework reports it ("2.11.0+cu130"), and the settings of
// its allocator the process ran with, as the environment spelled them
// ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"; empty: the framework's defaults).
struct FrameworkSeen {
  std::string name;
  std::string version;
  std::string allocator_settings;
  bool operator==(const FrameworkSeen&) const = default;
};

struct ProgramRun {
  std::vector<std::string> command;
  std::vector<int> devices;
  int exit_code = -1;
  int signal = 0;                     // the signal that ended it, 0 when it exited
  bool killed = false;                // it, or what it left, needed SIGKILL
  unsigned leftovers_ended = 0;       // processes still in its group after it exited
  std::uint64_t peak_bytes = 0;       // its processes' device memory at the most (NVML)
  std::uint64_t peak_used_bytes = 0;  // the most it took of its budget (device free memory)
  std::uint64_t first_bytes = 0;      // at the first sample that saw any (its context, being made)
  std::string usage_source;  // "nvml-processes" or "device-free" (NVML cannot see its pids)
  std::uint64_t samples = 0;
  double interval_ms = 0.0;
  std::vector<std::string> last_lines;  // its output's last lines
  std::size_t oom_lines = 0;            // lines of its output that reported an OOM
  std::string stdout_file;              // in the run folder; empty without one
  std::string stderr_file;
  // PyTorch memory snapshots the exec shim wrote, one per process (full paths), and why there
  // is none when there is none ("the program never imported torch", ...).
  std::vector<std::filesystem::path> snapshots;
  std::string snapshot_note;
  std::vector<FrameworkSeen> frameworks;  // in the order first seen; empty: none, or no shim
  std::vector<DeviceRun> device_runs;     // one per device, in --devices' order
  std::vector<RankRun> ranks;             // a distributed job's ranks (empty for one process)
  std::optional<FailingRank> failing_rank;
  // The job was left waiting after an OOM and ended by oomlab (after --grace, s).
  std::optional<double> waiting_ended_after_s;
  bool operator==(const ProgramRun&) const = default;
};

// One setting of PyTorch's allocator on an exec'd program's snapshot, at the run's budget less
// the memory the process held outside PyTorch's allocator (the model's budget).
struct ModelRow {
  std::string setting;        // "native", "expandable_segments", ..., "as recorded"
  std::string alloc_conf;     // PYTORCH_CUDA_ALLOC_CONF for it ("" for PyTorch's defaults)
  bool as_ran = false;        // the settings the program ran with
  bool fraction_cap = false;  // asked under set_per_process_memory_fraction (not a card)
  bool approximate = false;   // backend=async: a model from measurements, not byte-exact
  bool completes_at_budget = false;
  std::optional<std::uint64_t> first_failure_index;   // the trace entry where it failed instead
  std::optional<std::uint64_t> model_frontier_bytes;  // the smallest budget of the allocator
  std::optional<std::uint64_t> frontier_bytes;        // the smallest card for the whole process
  bool operator==(const ModelRow&) const = default;
};

// `exec --check-remedy`: the program run again at the same budget with the setting the model
// named, and whether the model's claim (it completes) held.
struct RemedyCheck {
  std::string setting;
  std::string alloc_conf;  // PYTORCH_CUDA_ALLOC_CONF as set for the rerun (the whole variable)
  std::string replaced;    // the PYTORCH_CUDA_ALLOC_CONF oomlab was given, replaced ("" none)
  // PyTorch's allocator capped for the rerun, to leave a library beside it room: the cap, and
  // the torch.cuda.set_per_process_memory_fraction() that sets it on that card (none: no cap).
  std::optional<std::uint64_t> allocator_cap_bytes;
  double memory_fraction = 0.0;
  Outcome outcome = Outcome::completed;
  bool held = false;
  std::string line;  // its OOM line, or why it failed otherwise
  double duration_ms = 0.0;
  std::string summary;  // the whole check in one line, as the framework words it
  bool operator==(const RemedyCheck&) const = default;
};

// The program ran out of memory in a library beside PyTorch's allocator (cuBLAS, cuDNN, NCCL, a
// CUDA call of PyTorch's own): its snapshot holds no refusal, and stops where the program died.
struct LibraryOom {
  std::string library;                  // "cuBLAS", "cuDNN", "NCCL", "CUDA", ...
  std::uint64_t entry = 0;              // the trace entry of the allocator's last allocation
  std::uint64_t allocated_bytes = 0;    // PyTorch's blocks in use then
  std::uint64_t cached_free_bytes = 0;  // reserved by PyTorch but unallocated then
  bool operator==(const LibraryOom&) const = default;
};

// What the model of PyTorch's allocator says of one snapshot an exec'd program wrote: whether it
// fails where the program did, what the program held outside the allocator, and each setting.
struct ProgramModel {
  std::filesystem::path snapshot;
  std::optional<int> device;  // oomlab's index of the device its process ran on (several only)
  std::optional<std::uint64_t> program_entry;     // the trace entry of the program's own OOM
  std::optional<std::uint64_t> reproduced_entry;  // where the model failed; none: it completed
  std::optional<LibraryOom> library_oom;          // the program died beside the allocator
  std::uint64_t outside_allocator_bytes = 0;
  std::uint64_t process_bytes = 0;             // the program's memory then (NVML or its message)
  std::uint64_t allocator_reserved_bytes = 0;  // PyTorch's reserved memory at that moment
  std::string outside_measured;                // when and from what, in words
  std::uint64_t budget_bytes = 0;              // the model's: the run's less the outside
  std::vector<ModelRow> whatif;
  std::string reproduction;  // "reproduced: the model fails at entry 8,945, where PyTorch did"
  std::string advice;
  std::optional<std::size_t> advised;  // the row the advice names
  bool lower_bound = false;            // the snapshot stops at the program's OOM
  std::vector<std::string> caveats;    // what the trace cannot know (trace_caveats)
  std::vector<std::string> notes;
  std::optional<RemedyCheck> remedy_check;
  double duration_ms = 0.0;
  [[nodiscard]] bool reproduced() const {
    return !library_oom && program_entry == reproduced_entry;
  }
  bool operator==(const ProgramModel&) const = default;
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
