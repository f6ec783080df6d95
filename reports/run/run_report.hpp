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

#include "run/run_result.hpp"

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
  // What the first op=oom row read: the memory at the OOM, as this log saw it.
  std::uint64_t oom_live_bytes = 0;
  std::uint64_t oom_reserved_bytes = 0;
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

inline constexpr std::size_t kTimelineBuckets = 1000;  // so at most 2000 points per series
inline constexpr std::size_t kMaxFailedMarks = 200;

// A run folder read back: its summary.json as the schema's RunResult
// (reports/run/summary_json.hpp), with what a report needs beside it: the environment as shown, the
// parameters as written, the soak's verdict, and the timelines drawn from its events.
struct RunReport : RunResult {
  std::filesystem::path dir;  // the run folder
  ReportEnvironment platform;
  nlohmann::json scenario_params = nlohmann::json::object();  // as written (types are the spec's)
  nlohmann::json allocator_options = nlohmann::json::object();
  std::optional<ReportSoak> soak;  // soak.json, when the folder holds one
  Timeline timeline;
  // exec on several devices: each one's own timeline (events-gpuN.csv), drawn one under another.
  struct DeviceTimeline {
    int device = 0;
    std::uint64_t budget_bytes = 0;
    Timeline timeline;
    bool failing = false;  // the rank that ran out of memory first ran here
  };
  std::vector<DeviceTimeline> device_timelines;
  // Whose verdicts these are, when not this oomlab's: the oomlab that wrote the record, and after
  // `report --remodel`, what this one's re-diagnosis changed (reports/run/verdict_changes.hpp).
  std::vector<std::string> provenance;
};

// The environment of a summary.json or matrix.json (its "oomlab" and "environment" blocks).
[[nodiscard]] ReportEnvironment read_environment(const JsonFields& top);
// An oomlab.run.v1 summary (read_summary); Error(input) naming `fields.file()` when it is not one.
[[nodiscard]] RunReport read_run_summary(const JsonFields& summary,
                                         const std::filesystem::path& folder = {});
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
