#include "reports/run/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <string_view>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/run/program_devices.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/run_extras.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/run/verdict_changes.hpp"
#include "reports/writers/device_timelines.hpp"

namespace oomlab {

namespace {

constexpr std::size_t kEventsColumns = 12;

struct Extremes {
  TimelinePoint min;
  TimelinePoint max;
  void merge(const Extremes& other) {
    if (other.min.bytes < min.bytes) min = other.min;
    if (other.max.bytes > max.bytes) max = other.max;
  }
};

struct Bucket {
  Extremes live;
  Extremes reserved;
};

// Buckets of `width` consecutive events; when `limit` buckets are full, neighbours merge and
// the width doubles, so one pass serves any number of rows.
class TimelineBuilder {
 public:
  explicit TimelineBuilder(std::size_t limit) : limit_(std::max<std::size_t>(2, limit & ~1U)) {}

  void add(std::uint64_t seq, std::uint64_t live, std::uint64_t reserved) {
    const Bucket one{{{seq, live}, {seq, live}}, {{seq, reserved}, {seq, reserved}}};
    if (in_bucket_ == 0) {
      current_ = one;
    } else {
      current_.live.merge(one.live);
      current_.reserved.merge(one.reserved);
    }
    if (++in_bucket_ < width_) return;
    full_.push_back(current_);
    in_bucket_ = 0;
    if (full_.size() == limit_) halve();
  }

  void finish(Timeline& timeline) {
    if (in_bucket_ != 0) full_.push_back(current_);
    for (const Bucket& b : full_) {
      append(timeline.live, b.live);
      append(timeline.reserved, b.reserved);
    }
  }

 private:
  void halve() {
    for (std::size_t i = 0; i < full_.size() / 2; ++i) {
      Bucket merged = full_[2 * i];
      merged.live.merge(full_[2 * i + 1].live);
      merged.reserved.merge(full_[2 * i + 1].reserved);
      full_[i] = merged;
    }
    full_.resize(full_.size() / 2);
    width_ *= 2;
  }

  static void append(std::vector<TimelinePoint>& series, const Extremes& e) {
    const bool min_first = e.min.seq <= e.max.seq;
    series.push_back(min_first ? e.min : e.max);
    if (e.min.seq != e.max.seq) series.push_back(min_first ? e.max : e.min);
  }

  std::size_t limit_;
  std::uint64_t width_ = 1;
  std::uint64_t in_bucket_ = 0;
  Bucket current_;
  std::vector<Bucket> full_;
};

// RFC 4180 fields of one row (quotes left in place: the fields we read are never quoted).
std::size_t split_row(std::string_view row, std::array<std::string_view, kEventsColumns>& fields) {
  std::size_t count = 0;
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= row.size(); ++i) {
    if (i < row.size() && row[i] == '"') quoted = !quoted;
    if (i < row.size() && (quoted || row[i] != ',')) continue;
    if (count == kEventsColumns) return count + 1;
    fields[count++] = row.substr(start, i - start);
    start = i + 1;
  }
  return count;
}

std::uint64_t number_field(std::string_view text, const char* column, const std::string& name,
                           std::uint64_t line) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw Error(ErrorKind::input,
                fmt::format("{}:{}: {} '{}' is not a whole number", name, line, column, text));
  }
  return value;
}

// The next logical row: a quoted field may hold a line break.
bool next_row(std::istream& in, std::string& row, std::uint64_t& line) {
  if (!std::getline(in, row)) return false;
  ++line;
  std::string more;
  while (std::count(row.begin(), row.end(), '"') % 2 == 1 && std::getline(in, more)) {
    ++line;
    row += '\n';
    row += more;
  }
  if (!row.empty() && row.back() == '\r') row.pop_back();
  return true;
}

// On several devices the OOM's figures are the failing device's own, as its events file read them
// at the OOM: a summary.json written before exec kept them so held the devices summed (9.33 GiB
// "live on GPU 1" for two devices of 4.98 GiB each).
void take_failing_device_figures(RunReport& report) {
  if (!report.oom || !report.program) return;
  const DeviceRun* device = headline_device(*report.program);
  if (device == nullptr) return;
  for (const RunReport::DeviceTimeline& d : report.device_timelines) {
    if (d.device != device->index || d.timeline.failed_seqs.empty()) continue;
    report.oom->live_bytes = d.timeline.oom_live_bytes;
    report.oom->reserved_bytes = d.timeline.oom_reserved_bytes;
    report.oom->diagnosis.free_bytes = device->budget_bytes > d.timeline.oom_reserved_bytes
                                           ? device->budget_bytes - d.timeline.oom_reserved_bytes
                                           : 0;
  }
}

}  // namespace

Timeline read_timeline(std::istream& in, const std::string& name, std::size_t buckets,
                       std::optional<TimelineQuery> query, std::optional<std::uint64_t> oom_seq) {
  Timeline timeline;
  std::string row;
  std::uint64_t line = 0;
  if (!next_row(in, row, line)) {
    timeline.missing = "events.csv is empty: no events were recorded";
    return timeline;
  }
  if (row != kEventsCsvHeader) {
    throw Error(ErrorKind::input,
                fmt::format("{}:1: not an oomlab events.csv (the header is not '{}')", name,
                            kEventsCsvHeader));
  }
  TimelineBuilder builder(buckets);
  std::array<std::string_view, kEventsColumns> fields;
  bool past_oom = false;
  while (next_row(in, row, line)) {
    if (row.empty()) continue;
    if (split_row(row, fields) != kEventsColumns) {
      throw Error(ErrorKind::input,
                  fmt::format("{}:{}: expected {} columns", name, line, kEventsColumns));
    }
    const std::uint64_t seq = number_field(fields[0], "seq", name, line);
    if (past_oom) {
      ++timeline.after_oom;
      continue;
    }
    past_oom = oom_seq && seq == *oom_seq && fields[4] == "oom";
    const std::uint64_t live = number_field(fields[10], "live_bytes", name, line);
    const std::uint64_t reserved = number_field(fields[11], "reserved_bytes", name, line);
    if (timeline.events == 0) timeline.first_seq = seq;
    timeline.last_seq = seq;
    ++timeline.events;
    timeline.peak_live_bytes = std::max(timeline.peak_live_bytes, live);
    timeline.peak_reserved_bytes = std::max(timeline.peak_reserved_bytes, reserved);
    if (fields[4] == "oom" && timeline.failed_seqs.empty()) {
      timeline.oom_live_bytes = live;
      timeline.oom_reserved_bytes = reserved;
    }
    if (fields[4] == "oom" && timeline.failed_seqs.size() < kMaxFailedMarks) {
      timeline.failed_seqs.push_back(seq);
    }
    if (query && seq <= query->entry + 1 && (fields[4] == "alloc" || fields[4] == "oom") &&
        number_field(fields[5], "bytes", name, line) == query->bytes) {
      timeline.program_failure_seq = seq;
    }
    builder.add(seq, live, reserved);
  }
  if (timeline.events == 0) timeline.missing = "events.csv has a header but no events";
  builder.finish(timeline);
  return timeline;
}

std::string cuda_version_text(int version) {
  if (version <= 0) return "-";
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

ReportEnvironment read_environment(const JsonFields& top) {
  ReportEnvironment env;
  if (const auto oomlab = top.optional_object("oomlab")) {
    env.oomlab_version = oomlab->optional_text("version");
    env.oomlab_git = oomlab->optional_text("git");
    const auto dirty = oomlab->raw().find("git_dirty");
    if (dirty != oomlab->raw().end() && dirty->is_boolean() && dirty->get<bool>()) {
      env.oomlab_git += "-dirty";
    }
  }
  const JsonFields environment = top.object("environment");
  const auto simulated = environment.raw().find("simulated");
  env.simulated =
      simulated != environment.raw().end() && simulated->is_boolean() && simulated->get<bool>();
  if (const auto device = environment.optional_object("device")) {
    env.gpu = fmt::format("{} (device {}, cc {})", device->optional_text("name"),
                          device->optional_count("index").value_or(0), device->optional_text("cc"));
  } else {
    env.gpu = env.simulated ? "none (simulated)" : "none";
  }
  env.driver = environment.optional_text("driver");
  if (env.driver.empty()) env.driver = "-";
  env.cuda_runtime = static_cast<int>(environment.optional_integer("cuda_runtime").value_or(0));
  env.cuda_driver_api =
      static_cast<int>(environment.optional_integer("cuda_driver_api").value_or(0));
  env.host = environment.optional_text("host");
  return env;
}

RunReport read_run_summary(const JsonFields& summary, const std::filesystem::path& folder) {
  RunReport r;
  static_cast<RunResult&>(r) = read_summary(summary, folder);
  r.platform = read_environment(summary);
  SummaryParams params = summary_params(summary);
  r.scenario_params = std::move(params.scenario);
  r.allocator_options = std::move(params.allocator);
  return r;
}

RunReport load_run_report(const std::filesystem::path& path) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(path, ec);
  const std::filesystem::path summary_path = is_dir ? path / "summary.json" : path;
  const nlohmann::json doc = read_json_file(summary_path);
  RunReport report = read_run_summary(JsonFields(doc, summary_path), summary_path.parent_path());
  report.dir = summary_path.parent_path();
  if (std::string line = other_version_line(report); !line.empty())
    report.provenance.push_back(std::move(line));
  if (std::filesystem::exists(report.dir / "soak.json", ec))
    report.soak = read_soak(report.dir / "soak.json");
  const std::filesystem::path events = report.dir / "events.csv";
  std::ifstream in(events, std::ios::binary);
  if (!in) {
    report.timeline.missing = "events.csv is missing: no timeline to draw";
    return report;
  }
  // The chart ends at the OOM: what follows is the run giving back what it held.
  const std::optional<std::uint64_t> oom_seq = report.outcome == Outcome::oom && report.oom
                                                   ? std::optional(report.oom->event)
                                                   : std::nullopt;
  report.timeline =
      read_timeline(in, events.string(), kTimelineBuckets, program_failure_query(report), oom_seq);
  read_device_timelines(report);
  take_failing_device_figures(report);
  return report;
}

}  // namespace oomlab
