#include "reports/searches/fit_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/run/report_input.hpp"
#include "reports/writers/params_text.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

FitReportTrial read_fit_trial(const JsonFields& t) {
  // A program's trial says what it printed last in `message` as a scenario's says its error.
  return {.value = t.count("value"),
          .outcome = t.text("outcome"),
          .cause = t.optional_text("cause"),
          .peak_bytes = t.optional_count("peak"),
          .request_bytes = t.optional_count("request_bytes"),
          .seconds = t.optional_number("seconds").value_or(0),
          .role = t.optional_text("role"),
          .message = t.optional_text("message")};
}

std::string fit_bytes_text(std::uint64_t bytes) {
  return fmt::format("{} ({} B)", format_bytes(bytes), format_count(bytes));
}

// The prediction and what it was made from (a model's line, or a series of snapshots).
void add_prediction_rows(const JsonFields& top, const std::string& name,
                         std::vector<ReportRow>& rows) {
  if (const auto predicted = top.optional_count("predicted")) {
    const std::string note = top.optional_text("prediction");
    rows.push_back({"Predicted", fmt::format("{}={}{}", name, *predicted,
                                             note.empty() ? "" : " (" + note + ")")});
  }
  if (const auto made = top.optional_object("made_from")) {
    const std::vector<std::int64_t> values = made->integers("values");
    const std::uint64_t requests = made->optional_count("requests").value_or(0);
    rows.push_back(
        {"Made from",
         fmt::format("the snapshots at {}={}: {} of {} requests aligned ({:.1f}%), {} live inside "
                     "one call",
                     made->optional_text("name"), fmt::join(values, ","),
                     format_count(made->optional_count("matched").value_or(0)),
                     format_count(requests),
                     100.0 * made->optional_number("aligned_share").value_or(0),
                     format_count(made->optional_count("transient").value_or(0)))});
  }
}

// The confirming runs, and two runs that contradict each other.
void add_check_rows(const JsonFields& top, const std::string& name, std::vector<ReportRow>& rows) {
  if (const auto confirm = top.optional_object("confirm")) {
    const std::uint64_t runs = confirm->optional_count("runs").value_or(0);
    rows.push_back(
        {"Confirmed", fmt::format("{} of {} completed at the answer, {} of {} above it",
                                  confirm->optional_count("value_completed").value_or(0), runs,
                                  confirm->optional_count("next_completed").value_or(0), runs)});
  }
  if (const auto contradiction = top.optional_object("not_monotonic")) {
    const JsonFields failed = contradiction->object("failed");
    const JsonFields completed = contradiction->object("completed");
    rows.push_back(
        {"Not monotonic", fmt::format("{}={} failed, {}={} completed after it", name,
                                      failed.count("value"), name, completed.count("value"))});
  }
}

}  // namespace

FitReport load_fit_report(const fs::path& path) {
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / "fit.json" : path;
  const nlohmann::json doc = read_json_file(file);
  const JsonFields top(doc, file);
  if (top.optional_text("schema") != kFitSchema)
    top.fail("schema", fmt::format("\"{}\" (fit.json)", kFitSchema));
  FitReport r{.dir = file.parent_path(), .answer = top.optional_text("answer")};
  const JsonFields scenario = top.object("scenario");
  r.scenario = scenario.text("name");
  if (const auto params = scenario.optional_object("params")) r.scenario_params = params->raw();
  const JsonFields allocator = top.object("allocator");
  r.allocator = allocator.text("name");
  if (const auto options = allocator.optional_object("options"))
    r.allocator_options = options->raw();
  r.simulated = top.flag("simulated");
  const JsonFields range = top.object("range");
  r.name = range.text("name");
  r.lo = range.count("lo");
  r.hi = range.count("hi");
  r.budget_bytes = top.count("budget_bytes");
  r.value = top.optional_count("value");
  r.next_value = top.optional_count("next_value");
  r.peak_bytes = top.optional_count("peak_bytes");
  r.headroom_bytes = top.optional_count("headroom_bytes");
  r.timed_out = top.flag("timed_out");
  r.stopped = top.optional_text("stopped");
  r.cards = top.texts("cards");
  for (const JsonFields& t : top.objects("trials"))
    r.trials.push_back(read_fit_trial(t));
  add_prediction_rows(top, r.name, r.extras);
  add_check_rows(top, r.name, r.extras);
  if (const auto oomlab = top.optional_object("oomlab"))
    r.oomlab_version = oomlab->optional_text("version");
  return r;
}

std::string fit_title(const FitReport& r) {
  if (r.scenario == "exec") return "fit · a program";
  return fmt::format("fit · {} on {}{}", r.scenario, r.allocator,
                     r.simulated ? " (simulated)" : "");
}

std::vector<std::string> fit_answer(const FitReport& r) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < r.answer.size();) {
    const std::size_t end = std::min(r.answer.find('\n', at), r.answer.size());
    if (end > at) lines.push_back(r.answer.substr(at, end - at));
    at = end + 1;
  }
  if (!lines.empty()) return lines;
  const std::string budget = fit_bytes_text(r.budget_bytes);
  if (r.timed_out) {
    lines.push_back("the search stopped at a trial past its --timeout");
  } else if (!r.stopped.empty()) {
    lines.push_back("the search stopped: " + r.stopped);
  } else if (!r.value) {
    lines.push_back(fmt::format("not even {}={} completes under {}", r.name, r.lo,
                                format_bytes(r.budget_bytes)));
  } else if (!r.next_value) {
    lines.push_back(
        fmt::format("every value up to {}={} completes under {}", r.name, r.hi, budget));
  } else {
    lines.push_back(fmt::format("{}={} is the largest that completes under {}; {}={} does not",
                                r.name, *r.value, budget, r.name, *r.next_value));
  }
  return lines;
}

std::vector<std::vector<std::string>> fit_trials_table(const FitReport& r) {
  const bool program = r.scenario == "exec";
  std::vector<std::vector<std::string>> rows = {
      {"#", r.name, "why", "outcome", "cause", "peak", "asked", "time"}};
  if (program) rows.front().emplace_back("the program's last words");
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const FitReportTrial& t = r.trials[i];
    std::vector<std::string> row = {std::to_string(i + 1),
                                    format_count(t.value),
                                    t.role.empty() ? "-" : t.role,
                                    outcome_label(t.outcome),
                                    t.cause.empty() ? "-" : t.cause,
                                    t.peak_bytes ? format_bytes(*t.peak_bytes) : "-",
                                    t.request_bytes ? format_bytes(*t.request_bytes) : "-",
                                    t.seconds < 1 ? fmt::format("{:.0f} ms", t.seconds * 1e3)
                                                  : fmt::format("{:.1f} s", t.seconds)};
    if (program) row.push_back(t.message.empty() ? "-" : t.message);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ReportRow> fit_rows(const FitReport& r) {
  std::vector<ReportRow> rows;
  if (r.scenario == "exec") {
    rows.push_back({"Command", r.scenario_params.value("command", std::string("-"))});
  } else {
    rows.push_back({"Scenario", r.scenario});
    // The parameter searched is each trial's own value, not the default the file records.
    nlohmann::json params = r.scenario_params;
    if (params.is_object()) params.erase(r.name);
    rows.push_back({"Parameters", params_text(scenario_param_spec(r.scenario), params)});
    std::string allocator = r.allocator;
    if (r.allocator_options.is_object() && !r.allocator_options.empty()) {
      allocator +=
          " (" + params_text(allocator_option_spec(r.allocator), r.allocator_options) + ")";
    }
    rows.push_back({"Allocator", allocator});
    rows.push_back({"Simulated", r.simulated ? "yes (no GPU used)" : "no"});
  }
  rows.push_back({"Range", fmt::format("{}={}..{}", r.name, r.lo, r.hi)});
  rows.push_back({"Budget", fit_bytes_text(r.budget_bytes)});
  rows.push_back({"Largest value that completes",
                  r.value ? fmt::format("{}={}", r.name, *r.value) : std::string("none")});
  rows.push_back({"The value above it",
                  r.next_value ? fmt::format("{}={}", r.name, *r.next_value) : std::string("-")});
  rows.push_back({"Peak at the answer", r.peak_bytes ? format_bytes(*r.peak_bytes) : "-"});
  rows.push_back({"Headroom", r.headroom_bytes ? format_bytes(*r.headroom_bytes) : "-"});
  rows.insert(rows.end(), r.extras.begin(), r.extras.end());
  double seconds = 0;
  for (const FitReportTrial& t : r.trials)
    seconds += t.seconds;
  rows.push_back({"Trials", fmt::format("{} ({:.1f} s)", r.trials.size(), seconds)});
  if (r.timed_out) rows.push_back({"Stopped", "a trial passed its --timeout"});
  if (!r.stopped.empty()) rows.push_back({"Stopped", r.stopped});
  rows.push_back({"Cards that hold the budget", r.cards.empty()
                                                    ? std::string("-")
                                                    : fmt::format("{}", fmt::join(r.cards, ", "))});
  rows.push_back({"oomlab", r.oomlab_version.empty() ? "-" : r.oomlab_version});
  return rows;
}

}  // namespace oomlab
