#include "reports/searches/frontier_report.hpp"

#include <fmt/format.h>

#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/run/report_input.hpp"
#include "reports/writers/params_text.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

FrontierReportTrial read_trial(const JsonFields& t) {
  FrontierReportTrial out{.budget_bytes = t.count("budget_bytes"),
                          .outcome = t.text("outcome"),
                          .cause = t.optional_text("cause"),
                          .duration_ms = t.optional_number("duration_ms").value_or(0),
                          .peak_bytes = t.optional_count("peak_bytes"),
                          .oom_line = t.optional_text("oom_line")};
  const auto confirm = t.raw().find("confirm");
  out.confirming = confirm != t.raw().end() && confirm->is_boolean() && confirm->get<bool>();
  return out;
}

// frontier exec's extras: what the program used, and the confirming runs.
std::vector<ReportRow> program_rows(const JsonFields& top) {
  std::vector<ReportRow> rows;
  if (const auto program = top.optional_object("program")) {
    rows.push_back(
        {"Program's first use", format_bytes(program->optional_count("first_bytes").value_or(0))});
    rows.push_back(
        {"Program's peak", format_bytes(program->optional_count("peak_bytes").value_or(0))});
    rows.push_back({"Measured by", program->optional_text("usage_source")});
  }
  if (const auto confirm = top.optional_object("confirm")) {
    const std::uint64_t runs = confirm->optional_count("runs").value_or(0);
    rows.push_back(
        {"Confirmed", fmt::format("{} of {} completed at the frontier, {} of {} under it",
                                  confirm->optional_count("frontier_completed").value_or(0), runs,
                                  confirm->optional_count("below_completed").value_or(0), runs)});
  }
  return rows;
}

std::string search_duration_text(double ms) {
  return ms < 1000 ? fmt::format("{:.0f} ms", ms) : fmt::format("{:.1f} s", ms / 1000);
}

}  // namespace

FrontierReport load_frontier_report(const fs::path& path) {
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / "frontier.json" : path;
  const nlohmann::json doc = read_json_file(file);
  const JsonFields top(doc, file);
  if (top.optional_text("schema") != kFrontierSchema)
    top.fail("schema", fmt::format("\"{}\" (frontier.json)", kFrontierSchema));
  FrontierReport r{.dir = file.parent_path(), .answer = top.optional_text("answer")};
  const JsonFields scenario = top.object("scenario");
  r.scenario = scenario.text("name");
  if (const auto params = scenario.optional_object("params")) r.scenario_params = params->raw();
  const JsonFields allocator = top.object("allocator");
  r.allocator = allocator.text("name");
  if (const auto options = allocator.optional_object("options"))
    r.allocator_options = options->raw();
  const auto simulated = doc.find("simulated");
  r.simulated = simulated != doc.end() && simulated->is_boolean() && simulated->get<bool>();
  r.upper_bytes = top.count("upper_bytes");
  r.frontier_bytes = top.optional_count("frontier_bytes");
  r.failing_bytes = top.optional_count("failing_bytes").value_or(0);
  const auto timed_out = doc.find("timed_out");
  r.timed_out = timed_out != doc.end() && timed_out->is_boolean() && timed_out->get<bool>();
  r.resolution_bytes = top.optional_count("resolution_bytes").value_or(kDevicePageBytes);
  for (const JsonFields& t : top.objects("trials"))
    r.trials.push_back(read_trial(t));
  r.program = program_rows(top);
  if (const auto oomlab = top.optional_object("oomlab"))
    r.oomlab_version = oomlab->optional_text("version");
  return r;
}

std::string frontier_title(const FrontierReport& r) {
  if (r.scenario == "exec") return "frontier · a program";
  return fmt::format("frontier · {} on {}{}", r.scenario, r.allocator,
                     r.simulated ? " (simulated)" : "");
}

std::string frontier_answer(const FrontierReport& r) {
  if (!r.answer.empty()) return r.answer;
  if (r.timed_out) return "the search stopped at a trial past its --timeout";
  if (!r.frontier_bytes) {
    return fmt::format("does not complete even at {} ({} B)", format_bytes(r.upper_bytes),
                       format_count(r.upper_bytes));
  }
  return fmt::format("frontier {} ({} B): completes there and above, not at {} B",
                     format_bytes(*r.frontier_bytes), format_count(*r.frontier_bytes),
                     format_count(r.failing_bytes));
}

std::vector<std::vector<std::string>> frontier_trials_table(const FrontierReport& r) {
  const bool program = r.scenario == "exec";
  std::vector<std::vector<std::string>> rows = {
      {"#", "budget (bytes)", "budget", "outcome", "cause", "time"}};
  if (program) {
    rows.front().emplace_back("peak");
    rows.front().emplace_back("the program's OOM line");
  }
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const FrontierReportTrial& t = r.trials[i];
    std::vector<std::string> row = {fmt::format("{}{}", i + 1, t.confirming ? " (confirm)" : ""),
                                    format_count(t.budget_bytes),
                                    format_bytes(t.budget_bytes),
                                    outcome_label(t.outcome),
                                    t.cause.empty() ? "-" : t.cause,
                                    search_duration_text(t.duration_ms)};
    if (program) {
      row.push_back(t.peak_bytes ? format_bytes(*t.peak_bytes) : "-");
      row.push_back(t.oom_line.empty() ? "-" : t.oom_line);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ReportRow> frontier_rows(const FrontierReport& r) {
  const bool program = r.scenario == "exec";
  std::vector<ReportRow> rows;
  if (program) {
    rows.push_back({"Command", r.scenario_params.value("command", std::string("-"))});
  } else {
    rows.push_back({"Scenario", r.scenario});
    rows.push_back({"Parameters", params_text(scenario_param_spec(r.scenario), r.scenario_params)});
    std::string allocator = r.allocator;
    if (r.allocator_options.is_object() && !r.allocator_options.empty()) {
      allocator +=
          " (" + params_text(allocator_option_spec(r.allocator), r.allocator_options) + ")";
    }
    rows.push_back({"Allocator", allocator});
    rows.push_back({"Simulated", r.simulated ? "yes (no GPU used)" : "no"});
  }
  rows.push_back({"Frontier", r.frontier_bytes
                                  ? fmt::format("{} ({} B)", format_bytes(*r.frontier_bytes),
                                                format_count(*r.frontier_bytes))
                                  : std::string("none found")});
  rows.push_back({"Largest budget that failed",
                  r.failing_bytes == 0 ? std::string("-")
                                       : fmt::format("{} ({} B)", format_bytes(r.failing_bytes),
                                                     format_count(r.failing_bytes))});
  rows.push_back({"Largest budget tried", fmt::format("{} ({} B)", format_bytes(r.upper_bytes),
                                                      format_count(r.upper_bytes))});
  rows.push_back({"Resolution", format_bytes(r.resolution_bytes)});
  double seconds = 0;
  for (const FrontierReportTrial& t : r.trials)
    seconds += t.duration_ms / 1e3;
  rows.push_back({"Trials", fmt::format("{} ({:.1f} s)", r.trials.size(), seconds)});
  if (r.timed_out) rows.push_back({"Stopped", "a trial passed its --timeout"});
  rows.insert(rows.end(), r.program.begin(), r.program.end());
  rows.push_back({"oomlab", r.oomlab_version.empty() ? "-" : r.oomlab_version});
  return rows;
}

}  // namespace oomlab
