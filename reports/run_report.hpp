// A run folder read back for a report: summary.json (oomlab.run.v1) as typed values, and
// events.csv streamed into a timeline small enough to draw (min/max per bucket, so peaks survive).
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace oomlab {

class JsonFields;

// Where a run or matrix ran: the "oomlab" and "environment" blocks.
struct ReportEnvironment {
  std::string gpu;  // "NVIDIA H100 80GB HBM3 (device 0, cc 9.0)", or "none (simulated)"
  std::string driver;
  int cuda_runtime = 0;  // 13000 means 13.0
  int cuda_driver_api = 0;
  bool simulated = false;
  std::string host;
  std::string oomlab_version;
  std::string oomlab_git;  // with "-dirty" when the tree was
};

// PyTorch's own account of an OOM (its OutOfMemoryError), where the run's allocator kept one.
struct ReportPytorch {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t reserved_unallocated_bytes = 0;
  std::uint64_t tried_to_allocate_bytes = 0;
  std::optional<std::uint64_t> allowed_bytes;  // set_per_process_memory_fraction's cap
  std::string backend;                         // "native" | "async"
  std::string message;
};

// One of a replayed program's largest live blocks at the OOM.
struct ReportBlock {
  std::uint64_t bytes = 0;
  std::uint64_t trace_index = 0;
  std::vector<std::string> frames;  // innermost first
};

struct ReportOom {
  std::uint64_t event = 0;                   // the run's own event (events.csv seq)
  std::optional<std::uint64_t> trace_entry;  // a replay: the trace's own entry, the one users see
  // "trace entry 16,794" for a replay, else "event 1,033": the one numbering a reader is shown.
  [[nodiscard]] std::string where() const;
  std::uint64_t step = 0;
  std::string phase;
  double t_ms = 0;
  std::uint64_t request_bytes = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_count = 0;
  std::uint64_t reserved_bytes = 0;
  std::optional<std::uint64_t> device_free_bytes;
  std::optional<std::uint64_t> device_total_bytes;
  std::optional<std::uint64_t> largest_free_bytes;
  std::optional<double> fragmentation;
  std::string cause;
  std::string source;
  std::string error;
  std::string advice;
  std::string evidence;
  std::optional<ReportPytorch> pytorch;
  std::vector<std::string> frames;  // the failing request's stack, innermost first
  std::vector<ReportBlock> largest_live;
  std::string program_line;  // exec: the line the program printed, with its framework
};

// One point of a timeline series: the value at event `seq`.
struct TimelinePoint {
  std::uint64_t seq = 0;
  std::uint64_t bytes = 0;
};

// Live and reserved bytes over events, at most ~2 points per bucket: each bucket keeps its
// minimum and its maximum at the events where they happened.
struct Timeline {
  std::vector<TimelinePoint> live;
  std::vector<TimelinePoint> reserved;
  std::uint64_t events = 0;  // rows read
  std::uint64_t first_seq = 0;
  std::uint64_t last_seq = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::vector<std::uint64_t> failed_seqs;  // op=oom rows (at most kMaxFailedMarks kept)
  // The event a replayed program's own first failure was re-made at (TimelineQuery), if found.
  std::optional<std::uint64_t> program_failure_seq;
  std::string missing;  // why there is no timeline ("events.csv is missing"), empty when there is
  // Rows after the run's OOM, counted but not drawn: the run freeing what it held.
  std::uint64_t after_oom = 0;
};

// A replayed program's own first failure, looked up while events.csv streams past: trace entry
// `entry` is replayed at seq 1 + entry at the latest (the phase mark comes first; an entry makes
// one event, or none), so its event is the last alloc or oom row of `bytes` at or before that.
struct TimelineQuery {
  std::uint64_t entry = 0;
  std::uint64_t bytes = 0;
};

// One trial of a search (summary.json "trials"): its events and whether it fitted.
struct ReportTrial {
  std::string label;  // "fp32 batch 24"
  std::uint64_t first_event = 0;
  std::uint64_t last_event = 0;
  bool fitted = false;
};

// One of the last events before an error (summary.json "last_events").
struct ReportEvent {
  std::uint64_t seq = 0;
  std::string op;
  std::uint64_t bytes = 0;
  std::string status;
  std::string phase;
  std::uint64_t step = 0;
  std::uint64_t live_bytes = 0;
};

// soak.json beside a run's summary (`run --repeat N`): the soak's verdict.
struct ReportSoak {
  std::uint64_t cycles = 0;
  std::uint64_t cycles_asked = 0;
  std::uint64_t ooms = 0;
  bool passed = false;
  bool stopped_early = false;
  std::vector<std::string> problems;
  std::uint64_t oom_live_min = 0;
  std::uint64_t oom_live_median = 0;
  std::uint64_t oom_live_max = 0;
  std::uint64_t rss_before_bytes = 0;
  std::uint64_t rss_after_last_bytes = 0;
  std::int64_t rss_growth_bytes = 0;
  bool device_measured = false;  // device free memory around each cycle (not on the sim)
  std::int64_t worst_device_shortfall_bytes = 0;
  std::uint64_t unbalanced_cycles = 0;
};

// exec: one setting of PyTorch's allocator on the program's snapshot (summary.json model.whatif).
struct ReportModelRow {
  std::string setting;
  std::string alloc_conf;
  bool as_ran = false;
  bool fraction_cap = false;
  bool approximate = false;
  bool completes_at_budget = false;
  std::optional<std::uint64_t> first_failure_index;
  std::optional<std::uint64_t> model_frontier_bytes;
  std::optional<std::uint64_t> frontier_bytes;  // the whole process
};

// exec: what the model said of the program's snapshot (summary.json "model").
struct ReportModel {
  std::string snapshot;
  std::optional<std::uint64_t> program_entry;
  std::optional<std::uint64_t> reproduced_entry;
  std::string reproduction;
  std::uint64_t outside_allocator_bytes = 0;
  std::string outside_measured;
  std::uint64_t budget_bytes = 0;
  bool lower_bound = false;
  std::vector<ReportModelRow> whatif;
  std::string advice;
  std::vector<std::string> caveats;
  std::vector<std::string> notes;
  std::string remedy_check;  // --check-remedy's line, "" when none was made
  std::optional<bool> remedy_held;
};

inline constexpr std::size_t kTimelineBuckets = 1000;  // so at most 2000 points per series
inline constexpr std::size_t kMaxFailedMarks = 200;

struct RunReport {
  std::filesystem::path dir;  // the run folder
  ReportEnvironment environment;
  std::string scenario;
  nlohmann::json scenario_params;  // object, possibly empty
  std::optional<std::uint64_t> seed;
  std::string allocator;
  nlohmann::json allocator_options;
  std::uint64_t budget_bytes = 0;
  std::string outcome;
  std::optional<ReportOom> oom;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t failed = 0;
  double duration_ms = 0;
  nlohmann::json metrics;                // object, possibly empty
  std::vector<std::string> notices;      // the run's own notices and notes
  std::string error;                     // the run's error, when it had one
  std::vector<ReportEvent> last_events;  // before an error or a timeout
  std::vector<ReportTrial> trials;       // a search's trials
  std::optional<ReportSoak> soak;        // soak.json, when the folder holds one
  std::optional<ReportModel> model;      // exec of a PyTorch program that left a snapshot
  Timeline timeline;
  // exec on several devices: each one's own timeline (events-gpuN.csv), drawn one under another.
  struct DeviceTimeline {
    int device = 0;
    std::uint64_t budget_bytes = 0;
    Timeline timeline;
    bool failing = false;  // the rank that ran out of memory first ran here
  };
  std::vector<DeviceTimeline> device_timelines;
  std::string failing_verdict;  // program.failing_rank.verdict, empty without one
};

// The environment of a summary.json or matrix.json (its "oomlab" and "environment" blocks).
[[nodiscard]] ReportEnvironment read_environment(const JsonFields& top);
// An oomlab.run.v1 summary; Error(input) naming `fields.file()` when it is not one.
[[nodiscard]] RunReport read_run_summary(const JsonFields& summary);
// summary.json's "model" (exec): Error(input) naming the field when it is malformed.
[[nodiscard]] ReportModel read_model(const JsonFields& model);
// summary.json's "oom" record: the one reader of it, for reports, compare and the matrix table.
[[nodiscard]] ReportOom read_oom(const JsonFields& oom);
// `path`: a run folder or its summary.json. Reads events.csv beside it when there is one.
[[nodiscard]] RunReport load_run_report(const std::filesystem::path& path);

// Streams events.csv rows into a timeline of at most 2 * `buckets` points per series.
// `name` is used in errors ("NAME:LINE: ..."). With `oom_seq`, the timeline ends at the oom row of
// that seq (the run's OOM); the rows after it are counted in after_oom.
[[nodiscard]] Timeline read_timeline(std::istream& in, const std::string& name,
                                     std::size_t buckets = kTimelineBuckets,
                                     std::optional<TimelineQuery> query = std::nullopt,
                                     std::optional<std::uint64_t> oom_seq = std::nullopt);
// A soak.json (oomlab.soak.v1); Error(input) naming the file when it is not one.
[[nodiscard]] ReportSoak read_soak(const std::filesystem::path& path);

// "13.0" for 13000; "-" for 0.
[[nodiscard]] std::string cuda_version_text(int version);

}  // namespace oomlab
