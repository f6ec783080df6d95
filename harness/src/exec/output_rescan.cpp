#include "exec/output_rescan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>

#include "exec/exec_outcome.hpp"
#include "exec/rank_attribution.hpp"
#include "exec/rank_lines.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {

namespace fs = std::filesystem;

namespace {

// Times of day made a clock that runs on past midnight: a step back of more than half a day is
// the next day's. Seeded, it starts on the day of the time it was seeded with.
class DayClock {
 public:
  void seed(std::uint64_t of_day) {
    if (!last_) last_ = of_day;
  }
  std::uint64_t operator()(std::uint64_t of_day) {
    constexpr std::uint64_t kDayNs = std::uint64_t{86'400} * 1'000'000'000;
    if (last_ && of_day + kDayNs / 2 < *last_) days_ += kDayNs;
    last_ = of_day;
    return days_ + of_day;
  }

 private:
  std::optional<std::uint64_t> last_;
  std::uint64_t days_ = 0;
};

// The kept log, read along the output by its lines' times (KeptLog::line_time).
class LogAlong {
 public:
  explicit LogAlong(const KeptLog* log) : log_(log) {
    if (log_ == nullptr) return;
    in_.open(log_->file, std::ios::binary);
    advance();
  }
  // The time of day its first timed line gave (the program's start), none before one.
  [[nodiscard]] std::optional<std::uint64_t> first_time() const { return first_; }
  // The log's lines written up to `t` (all that are left, where there is no time).
  template <typename Feed>
  void feed_until(std::optional<std::uint64_t> t, Feed&& feed) {
    while (has_line_ && !(t && time_ > *t)) {
      feed(line_);
      advance();
    }
  }

 private:
  void advance() {
    has_line_ = static_cast<bool>(std::getline(in_, line_));
    if (!has_line_) return;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (const auto t = log_->line_time(line_)) {
      if (!first_) first_ = *t;
      time_ = clock_(*t);
    }  // else the line before's
  }

  const KeptLog* log_;
  DayClock clock_;
  std::optional<std::uint64_t> first_;
  std::ifstream in_;
  std::string line_;
  bool has_line_ = false;
  std::uint64_t time_ = 0;
};

}  // namespace

OutputRescan rescan_output(const std::vector<fs::path>& files, const KeptLog* log) {
  OutputRescan out;
  OomScanner scanner;
  FrameworkHints hints;
  const auto feed = [&](const std::string& line) {
    hints.read(line);
    scanner.feed_line(read_rank_marks(line).text);
  };
  LogAlong along(log);
  DayClock output_clock;  // on the log's day, from its first line (the log starts first)
  if (const auto first = along.first_time()) output_clock.seed(*first);
  if (log != nullptr) out.files.push_back(log->file);
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) continue;
    out.files.push_back(file);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (log != nullptr) {
        if (const auto t = log->line_time(line)) along.feed_until(output_clock(*t), feed);
      }
      feed(line);
    }
  }
  along.feed_until(std::nullopt, feed);
  out.oom = scanner.found();
  out.oom_lines = scanner.lines_seen();
  if (out.oom && out.oom->sizing_setting.empty())
    out.oom->sizing_setting = scanner.sizing_setting();
  // XLA's own log lines do not say whether JAX or TensorFlow built it; the output does.
  if (out.oom) name_shared_reporter(*out.oom, hints);
  return out;
}

namespace {

// A framework's log kept apart in the folder (xla-log.txt), with how its lines tell their time.
std::optional<KeptLog> kept_log(const fs::path& folder) {
  for (const Framework& framework : Registry::global().frameworks()) {
    const std::optional<ProgramLog>& log = framework.program_log;
    if (!log || log->file.empty() || log->line_time == nullptr) continue;
    std::error_code ec;
    if (const fs::path file = folder / log->file; fs::is_regular_file(file, ec))
      return KeptLog{.file = file, .line_time = log->line_time};
  }
  return std::nullopt;
}

// The budget and the card of the device that ran out (the failing rank's on several).
std::pair<std::uint64_t, std::uint64_t> budget_and_card(const RunResult& run) {
  std::uint64_t budget = run.budget_bytes;
  std::uint64_t card = run.oom ? run.oom->device_total_bytes : 0;
  if (card == 0 && run.device) card = run.device->total_bytes;
  const ProgramRun& p = *run.program;
  if (const std::optional<std::size_t> failing = failing_device(p);
      failing && *failing < p.device_runs.size())
    budget = p.device_runs[*failing].budget_bytes;
  return {budget, card};
}

// The moment the run sampled: its OOM row's, or for a run that ended in error, its peak.
OomMoment sampled_moment(const RunResult& run, std::size_t lines_seen) {
  const auto [budget, card] = budget_and_card(run);
  OomMoment moment{.budget_bytes = budget, .device_total_bytes = card, .lines_seen = lines_seen};
  if (run.oom) {
    const OomRecord& o = *run.oom;
    moment.at = {.t_ns = static_cast<std::uint64_t>(o.t_ms * 1e6),
                 .program_bytes = o.live_bytes,
                 .used_bytes = o.reserved_bytes,
                 .free_bytes = o.device_free_bytes};
    moment.event = o.event;
  } else {
    const ProgramRun& p = *run.program;
    moment.at = {.program_bytes = p.peak_bytes,
                 .used_bytes = p.peak_used_bytes,
                 .free_bytes = budget > p.peak_used_bytes ? budget - p.peak_used_bytes : 0};
  }
  return moment;
}

}  // namespace

std::string rediagnose_program_output(RunResult& run, const fs::path& folder) {
  if (!run.program) return "not a program's run";
  const ProgramRun& p = *run.program;
  std::vector<fs::path> files;
  for (const std::string& name : {p.stdout_file, p.stderr_file}) {
    if (!name.empty())
      files.push_back(fs::path(name).is_absolute() ? fs::path(name) : folder / name);
  }
  const std::optional<KeptLog> log = kept_log(folder);
  const OutputRescan scan = rescan_output(files, log ? &*log : nullptr);
  if (scan.files.empty()) {
    return "the program's output was not kept in the folder: its OOM line stands as recorded";
  }
  std::vector<std::string> names;
  for (const fs::path& f : scan.files)
    names.push_back(f.filename().string());
  const std::string read = fmt::format("the program's output ({})", fmt::join(names, ", "));
  const bool ended_badly = run.outcome == Outcome::oom || run.outcome == Outcome::error;
  if (!scan.oom || !ended_badly) {
    if (run.outcome == Outcome::oom && !scan.oom)
      return read + " holds no OOM line this oomlab knows: the recorded one stands";
    return read + " read again";
  }
  ProgramOom message = *scan.oom;
  const OomMoment moment = sampled_moment(run, scan.oom_lines);
  note_budget(message, moment.budget_bytes);
  const bool was_error = run.outcome == Outcome::error;
  OomRecord record = program_oom_record(message, moment, &p);
  if (run.oom) record.step = run.oom->step;
  run.oom = std::move(record);
  run.program->oom_lines = scan.oom_lines;
  if (was_error) {
    run.outcome = Outcome::oom;
    run.error_message.clear();
    ++run.failed;
    return read +
           " read again: it holds an OOM line this oomlab knows (the run had called it "
           "an error); its moment is the program's peak";
  }
  return read + " read again";
}

}  // namespace oomlab
