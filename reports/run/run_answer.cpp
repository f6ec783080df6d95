#include "reports/run/run_answer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>

#include "oomlab/units.hpp"
#include "reports/run/run_extras.hpp"
#include "reports/run/soak_report.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

namespace {

constexpr std::array<const char*, 4> kPrecisions = {"fp32", "fp16", "bf16", "fp8"};

std::optional<std::uint64_t> count_metric(const RunReport& run, const std::string& name) {
  const auto value = run_metric(run, name);
  if (!value || *value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*value);
}

std::string signed_bytes(std::int64_t bytes) {
  const std::uint64_t magnitude =
      bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  return fmt::format("{}{}", bytes < 0 ? "-" : "+", format_bytes(magnitude));
}

// "fp8 batch 90" -> 90; none when the label does not end in a number.
std::optional<std::uint64_t> label_batch(const std::string& label) {
  const auto space = label.rfind(' ');
  const std::string_view digits = std::string_view(label).substr(space + 1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::string soak_answer(const ReportSoak& soak) {
  if (!soak.passed) return fmt::format("Soak FAILED: {}", fmt::join(soak.problems, "; "));
  return fmt::format("Soak passed: {} of {} cycles, and everything came back after every cycle",
                     soak.cycles, soak.cycles_asked);
}

std::string batch_answer(const RunReport& run, std::uint64_t max_batch) {
  if (max_batch == 0)
    return fmt::format("Not even batch 1 fits in {}", format_bytes(run.budget_bytes));
  std::string text =
      fmt::format("Max batch {} in a budget of {}", max_batch, format_bytes(run.budget_bytes));
  if (const auto analytic = count_metric(run, "analytic_max_batch");
      analytic && *analytic != max_batch)
    text += fmt::format(" (the model's arithmetic alone says {})", *analytic);
  if (run.oom) {
    text += fmt::format(": batch {} ran out of memory ({})", max_batch + 1,
                        to_string(run.oom->diagnosis.cause));
  }
  return text;
}

std::string precision_answer(const std::vector<PrecisionRow>& rows) {
  std::vector<std::string> parts;
  parts.reserve(rows.size());
  for (const PrecisionRow& row : rows) {
    parts.push_back(row.ratio_to_fp32 ? fmt::format("{} {} ({:.2f}x fp32)", row.precision,
                                                    row.max_batch, *row.ratio_to_fp32)
                                      : fmt::format("{} {}", row.precision, row.max_batch));
  }
  return fmt::format("Max batch by precision: {}", fmt::join(parts, " · "));
}

}  // namespace

std::optional<std::string> run_answer(const RunReport& run) {
  if (run.soak) return soak_answer(*run.soak);
  if (run.outcome == Outcome::error || run.outcome == Outcome::timeout) {
    return fmt::format("{}: {}", run.outcome == Outcome::error ? "Error" : "Timed out",
                       run.error_message.empty() ? "no message recorded" : run.error_message);
  }
  if (const std::vector<PrecisionRow> rows = precision_rows(run); !rows.empty())
    return precision_answer(rows);
  if (const auto max_batch = count_metric(run, "max_batch")) return batch_answer(run, *max_batch);
  if (run.outcome == Outcome::completed && program_failure_query(run)) {
    return fmt::format("The replay completes in {} on {}, where the program itself failed",
                       format_bytes(run.budget_bytes), run.allocator);
  }
  return std::nullopt;
}

std::vector<PrecisionRow> precision_rows(const RunReport& run) {
  std::vector<PrecisionRow> rows;
  for (const char* precision : kPrecisions) {
    const std::string name(precision);
    const auto max_batch = count_metric(run, "max_batch_" + name);
    if (!max_batch) continue;
    rows.push_back({.precision = name,
                    .max_batch = *max_batch,
                    .ratio_to_fp32 = run_metric(run, "ratio_" + name),
                    .analytic_max_batch = count_metric(run, "analytic_max_batch_" + name),
                    .bytes_at_max_batch = count_metric(run, "bytes_at_max_batch_" + name)});
  }
  return rows;
}

std::vector<std::vector<std::string>> precision_table(const RunReport& run) {
  std::vector<std::vector<std::string>> table = {
      {"precision", "max batch", "vs fp32", "by the arithmetic", "peak live at max batch"}};
  for (const PrecisionRow& row : precision_rows(run)) {
    table.push_back({row.precision, format_count(row.max_batch),
                     row.precision == "fp32" ? "1.00x"
                     : row.ratio_to_fp32     ? fmt::format("{:.2f}x", *row.ratio_to_fp32)
                                             : "-",
                     row.analytic_max_batch ? format_count(*row.analytic_max_batch) : "-",
                     row.bytes_at_max_batch ? format_bytes(*row.bytes_at_max_batch) : "-"});
  }
  return table;
}

const TrialSpan* oom_trial(const RunReport& run) {
  if (!run.oom) return nullptr;
  for (const TrialSpan& t : run.trials) {
    if (t.first_event <= run.oom->event && run.oom->event <= t.last_event) return &t;
  }
  return nullptr;
}

std::string oom_trial_line(const RunReport& run) {
  const TrialSpan* trial = oom_trial(run);
  if (trial == nullptr) return {};
  std::string text =
      fmt::format("The recorded OOM came from trial '{}' (events {}..{}), trial {} of {}",
                  trial->label, format_count(trial->first_event), format_count(trial->last_event),
                  trial - run.trials.data() + 1, run.trials.size());
  const std::string precision = trial->label.substr(0, trial->label.find(' '));
  auto fitted = count_metric(run, "max_batch_" + precision);
  if (!fitted) fitted = count_metric(run, "max_batch");
  const auto batch = label_batch(trial->label);
  if (fitted && batch && *batch == *fitted + 1)
    text += fmt::format(": the batch just past the largest that fitted ({})", *fitted);
  return text;
}

std::string program_failure_line(const RunReport& run) {
  const auto query = program_failure_query(run);
  if (!query) return {};
  const auto failures = count_metric(run, "trace_failures").value_or(1);
  std::string text = fmt::format(
      "The program itself failed at trace entry {}, asking for {} ({} failed request{} in the "
      "trace)",
      format_count(query->entry), format_bytes(query->bytes), failures, failures == 1 ? "" : "s");
  if (run.outcome == Outcome::completed) text += "; the replay did not fail there: it completed";
  if (run.oom) text += fmt::format("; the replay ran out of memory at {}", oom_where(*run.oom));
  if (run.timeline.program_failure_seq) text += " (marked on the timeline)";
  return text;
}

std::vector<std::vector<std::string>> last_events_table(const RunReport& run) {
  std::vector<std::vector<std::string>> table = {
      {"event", "op", "bytes", "status", "phase", "step", "live"}};
  for (const RunResult::RecentEvent& e : run.last_events) {
    table.push_back({format_count(e.seq), e.op, format_bytes(e.bytes), e.status,
                     e.phase.empty() ? "-" : e.phase, format_count(e.step),
                     format_bytes(e.live_bytes)});
  }
  return table;
}

std::vector<ReportRow> soak_rows(const ReportSoak& soak) {
  std::vector<ReportRow> rows = {
      {"Verdict", soak.passed ? "passed: everything came back after every cycle"
                              : fmt::format("FAILED: {}", fmt::join(soak.problems, "; "))},
      {"Cycles", fmt::format("{} of {}{}", soak.cycles, soak.cycles_asked,
                             soak.stopped_early ? " (stopped early)" : "")}};
  std::string ooms = format_count(soak.ooms);
  if (soak.ooms > 0) {
    ooms += fmt::format(" · live at the OOM {} / {} / {} (min / median / max)",
                        format_bytes(soak.oom_live_min), format_bytes(soak.oom_live_median),
                        format_bytes(soak.oom_live_max));
  }
  rows.push_back({"OOMs", ooms});
  rows.push_back(
      {"Resident memory",
       fmt::format("{} before the first cycle, {} after the last; {} after the first tenth of "
                   "the cycles (limit {})",
                   format_bytes(soak.rss_before_bytes), format_bytes(soak.rss_after_last_bytes),
                   signed_bytes(soak.rss_growth_bytes), format_bytes(kSoakRssGrowthLimit))});
  rows.push_back(
      {"Device free memory", soak.device_measured
                                 ? fmt::format("worst shortfall after a cycle {} (limit {})",
                                               signed_bytes(soak.worst_device_shortfall_bytes),
                                               format_bytes(kSoakDeviceShortfallLimit))
                                 : std::string("not measured: no device (simulated)")});
  rows.push_back({"Blocks left allocated",
                  fmt::format("after {} of {} cycles", soak.unbalanced_cycles, soak.cycles)});
  rows.push_back({"What is drawn",
                  "the timeline is the first cycle's (events.csv), the run's facts the last "
                  "cycle's (summary.json)"});
  return rows;
}

}  // namespace oomlab
