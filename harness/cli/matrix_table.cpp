// The matrix as people read it: one line per cell, the OOM point and its spread.
#include <fmt/format.h>

#include <algorithm>

#include "cli/matrix_plan.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab::cli {

using json = nlohmann::ordered_json;

namespace {

// A cell's summary's OOM record, read as reports and compare read it (none when it has none or
// it is malformed: the table then shows "-").
std::optional<OomRecord> oom_of(const json& summary) {
  if (!summary.is_object() || !summary.contains("oom") || !summary["oom"].is_object())
    return std::nullopt;
  const nlohmann::json oom = summary["oom"];
  try {
    return read_oom(JsonFields(oom, "summary.json", "oom"));
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A cell's peak: a scenario's live bytes, a program's own (0 when its summary is malformed).
std::uint64_t peak_of(const json& summary) {
  if (!summary.is_object()) return 0;
  const nlohmann::json doc = summary;
  try {
    const RunResult run = read_summary(JsonFields(doc, "summary.json"));
    return run.is_program() ? run.program->peak_bytes : run.peak_live_bytes;
  } catch (const Error&) {
    return 0;
  }
}

std::optional<OomRecord> shown_oom(const MatrixCell& cell) {
  if (cell.repeats.empty()) return std::nullopt;
  return oom_of(cell.repeats[representative_repeat(cell)].summary);
}

// "±1.2%" of the OOM point's live bytes over the repeats that OOMed, "" for a single run.
std::string spread_text(const MatrixCell& cell) {
  const std::optional<CellSpread> spread = cell_spread(cell);
  if (!spread) return "";
  if (spread->oom_runs < 2 || !spread->oom_live_bytes) {
    return fmt::format("{}/{} oom", spread->oom_runs, spread->runs);
  }
  const RepeatSpread& live = *spread->oom_live_bytes;
  const auto median = static_cast<double>(live.median);
  const double half_range = static_cast<double>(live.max - live.min) / 2.0;
  return fmt::format("±{:.1f}% ({}/{})", median > 0 ? 100.0 * half_range / median : 0.0,
                     spread->oom_runs, spread->runs);
}

std::string last_line(const MatrixCell& cell, const std::string& outcome) {
  for (const MatrixRepeat& r : cell.repeats) {
    if (r.outcome == outcome && !r.last_lines.empty()) return r.last_lines.back();
  }
  return "(it printed nothing)";
}

}  // namespace

std::string cell_line(const MatrixCell& cell) {
  const std::string outcome = cell_outcome(cell);
  if (outcome == "crash") {
    const auto r = std::find_if(cell.repeats.begin(), cell.repeats.end(),
                                [](const MatrixRepeat& x) { return x.outcome == "crash"; });
    return fmt::format("crash ({}): {}", r->signal.value_or("exit " + std::to_string(r->exit_code)),
                       last_line(cell, outcome));
  }
  if (outcome == "timeout") return fmt::format("timeout: {}", last_line(cell, outcome));
  if (outcome == "error" || outcome == "interrupted")
    return fmt::format("{}: {}", outcome, last_line(cell, outcome));
  if (const std::optional<OomRecord> oom = shown_oom(cell)) {
    return fmt::format("oom at {} live (request {}, {})", format_bytes(oom->live_bytes),
                       format_bytes(oom->request_bytes),
                       std::string(to_string(oom->diagnosis.cause)));
  }
  if (cell.repeats.empty()) return "not run";
  return fmt::format("completed, peak {} live",
                     format_bytes(peak_of(cell.repeats.front().summary)));
}

std::string matrix_table(const std::vector<MatrixCell>& cells) {
  std::size_t scenario_width = 8;
  std::size_t allocator_width = 9;
  for (const MatrixCell& c : cells) {
    scenario_width = std::max(scenario_width, c.scenario.size());
    allocator_width = std::max(allocator_width, c.allocator.size());
  }
  std::string table = fmt::format(
      "{:<{}}  {:<{}}  {:>3}  {:<11}  {:>11}  {:>11}  {:>6}  {:>9}  {:<15}  {:<14}  {:>8}\n",
      "scenario", scenario_width, "allocator", allocator_width, "dev", "outcome", "oom live",
      "request", "step", "event", "cause", "spread", "time");
  for (const MatrixCell& c : cells) {
    const std::string outcome = cell_outcome(c);
    const std::optional<OomRecord> oom = shown_oom(c);
    double seconds = 0;
    for (const MatrixRepeat& r : c.repeats)
      seconds += r.duration_ms / 1e3;
    table += fmt::format(
        "{:<{}}  {:<{}}  {:>3}  {:<11}  {:>11}  {:>11}  {:>6}  {:>9}  {:<15}  {:<14}  {:>7.2f}s\n",
        c.scenario, scenario_width, c.allocator, allocator_width, c.device, outcome,
        oom ? format_bytes(oom->live_bytes) : "-", oom ? format_bytes(oom->request_bytes) : "-",
        oom ? std::to_string(oom->step) : "-", oom ? format_count(oom->event) : "-",
        oom ? (std::string(to_string(oom->diagnosis.cause))) : "-", spread_text(c), seconds);
  }
  for (const MatrixCell& c : cells) {  // what went wrong, where it did
    const std::string outcome = cell_outcome(c);
    if (outcome == "crash" || outcome == "timeout" || outcome == "error" ||
        outcome == "interrupted")
      table += fmt::format("  {} on {}: {}\n", c.scenario, c.allocator, cell_line(c));
  }
  return table;
}

}  // namespace oomlab::cli
