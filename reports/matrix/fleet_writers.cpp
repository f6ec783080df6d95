// The fleet table written out: for the terminal, Markdown for a CI job summary, JSON
// (oomlab.fleet.v1) for machines, JUnit testcases (one a comparison) for CI dashboards.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/matrix/fleet.hpp"
#include "reports/matrix/table_text.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

using ojson = nlohmann::ordered_json;

namespace {

// "7.81 GiB @ step 128", "7.81 GiB @ event 125,000", "completed", "crash".
std::string point_text(const CompareCell& cell) {
  if (!cell.oom) return cell.outcome;
  return cell.oom->step == 0 ? fmt::format("{} @ event {}", format_bytes(cell.oom->live_bytes),
                                           format_count(cell.oom->event))
                             : fmt::format("{} @ step {}", format_bytes(cell.oom->live_bytes),
                                           format_count(cell.oom->step));
}

// What the table shows where row meets environment: the point, and the verdict against the
// previous version ("-" where the row did not run there).
std::string slot_text(const Fleet& fleet, std::size_t row, std::size_t environment) {
  const std::optional<CompareCell>& cell = fleet.rows[row].cells[environment];
  const FleetStep* step = fleet.step_at(row, environment);
  std::string text = cell ? point_text(*cell) : "-";
  if (step != nullptr) text += fmt::format(" ({})", to_string(step->verdict.verdict));
  return text;
}

std::string column_name(std::size_t environment) {
  return fmt::format("E{}", environment + 1);
}

std::string runners_text(const FleetEnvironment& e) {
  return fmt::format("{} runner{}: {}", e.runners.size(), e.runners.size() == 1 ? "" : "s",
                     fmt::join(e.runners, ", "));
}

ojson step_json(const Fleet& fleet, const FleetStep& s) {
  const auto point = [](const std::optional<CompareCell>& cell) -> ojson {
    if (!cell) return nullptr;
    ojson j = {{"outcome", cell->outcome}};
    j["oom"] = cell->oom ? ojson{{"live_bytes", cell->oom->live_bytes},
                                 {"step", cell->oom->step},
                                 {"event", cell->oom->event}}
                         : ojson(nullptr);
    if (!cell->why.empty()) j["why"] = cell->why;
    return j;
  };
  return {
      {"cell", fleet.rows[s.row].name},
      {"from", s.from ? ojson(*s.from) : ojson(nullptr)},
      {"to", s.to},
      {"from_versions", s.from ? ojson(fleet.environments[*s.from].versions()) : ojson(nullptr)},
      {"to_versions", fleet.environments[s.to].versions()},
      {"another_runner", s.same_environment},
      {"verdict", to_string(s.verdict.verdict)},
      {"regression", is_regression(s.verdict.verdict)},
      {"reason", s.verdict.reason},
      {"before", point(s.verdict.baseline)},
      {"after", point(s.verdict.current)}};
}

}  // namespace

std::string fleet_table(const Fleet& fleet) {
  std::string out = fmt::format(
      "oomlab compare --fleet · {} input{} · {} environment{} · "
      "tolerance {}\n{}\n\nenvironments (on each GPU model, in version "
      "order; each compared with the one before it):\n",
      fleet.inputs.size(), fleet.inputs.size() == 1 ? "" : "s", fleet.environments.size(),
      fleet.environments.size() == 1 ? "" : "s", tolerance_text(fleet.tolerance),
      fleet_conclusion(fleet));
  for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
    fmt::format_to(std::back_inserter(out), "  {:<4} {}  ({})\n", column_name(e),
                   fleet.environments[e].label(), runners_text(fleet.environments[e]));
  }
  std::size_t name_width = std::string_view("cell").size();
  for (const FleetRow& row : fleet.rows)
    name_width = std::max(name_width, row.name.size());
  std::vector<std::size_t> widths;
  for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
    std::size_t w = column_name(e).size();
    for (std::size_t r = 0; r < fleet.rows.size(); ++r)
      w = std::max(w, slot_text(fleet, r, e).size());
    widths.push_back(w);
  }
  auto it = std::back_inserter(out);
  const auto write_line = [&](const std::string& name, const auto& text_of) {
    std::string line = fmt::format("{:<{}}", name, name_width);
    for (std::size_t e = 0; e < widths.size(); ++e)
      line += fmt::format("  {:<{}}", text_of(e), widths[e]);
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + '\n';
  };
  out += '\n';
  write_line("cell", column_name);
  for (std::size_t r = 0; r < fleet.rows.size(); ++r)
    write_line(fleet.rows[r].name, [&](std::size_t e) { return slot_text(fleet, r, e); });
  bool first = true;
  for (const FleetStep& s : fleet.steps) {
    if (!is_regression(s.verdict.verdict)) continue;
    fmt::format_to(it, "{}  {}\n", first ? "\nregressions:\n" : "", fleet_step_text(fleet, s));
    first = false;
  }
  std::vector<std::string> counts;
  for (const Verdict verdict : kVerdicts) {
    if (const std::size_t n = fleet.count(verdict); n > 0)
      counts.push_back(fmt::format("{} {}", n, to_string(verdict)));
  }
  fmt::format_to(it, "\nverdicts: {}\n{}\n",
                 counts.empty() ? "none" : fmt::format("{}", fmt::join(counts, ", ")),
                 fleet_conclusion(fleet));
  return out;
}

std::string fleet_markdown(const Fleet& fleet) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "# oomlab fleet\n\n**{}** · {} input{} · tolerance {} on the OOM point\n\n",
                 markdown_cell(fleet_conclusion(fleet)), fleet.inputs.size(),
                 fleet.inputs.size() == 1 ? "" : "s", tolerance_text(fleet.tolerance));
  bool first = true;
  for (const FleetStep& s : fleet.steps) {
    if (!is_regression(s.verdict.verdict)) continue;
    fmt::format_to(it, "{}- **{}**\n", first ? "Regressions:\n\n" : "",
                   markdown_cell(fleet_step_text(fleet, s)));
    first = false;
  }
  out += first ? "" : "\n";
  out += "| | GPU | versions | runners |\n| --- | --- | --- | --- |\n";
  for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
    const FleetEnvironment& env = fleet.environments[e];
    fmt::format_to(it, "| {} | {} | {} | {} |\n", column_name(e), markdown_cell(env.gpu),
                   markdown_cell(env.versions()),
                   markdown_cell(fmt::format("{}", fmt::join(env.runners, ", "))));
  }
  out += "\n| cell |";
  for (std::size_t e = 0; e < fleet.environments.size(); ++e)
    fmt::format_to(it, " {} |", column_name(e));
  out += "\n| --- |";
  for (std::size_t e = 0; e < fleet.environments.size(); ++e)
    out += " --- |";
  out += '\n';
  for (std::size_t r = 0; r < fleet.rows.size(); ++r) {
    fmt::format_to(it, "| {} |", markdown_cell(fleet.rows[r].name));
    for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
      const FleetStep* step = fleet.step_at(r, e);
      const bool bad = step != nullptr && is_regression(step->verdict.verdict);
      fmt::format_to(it, " {}{}{} |", bad ? "**" : "", markdown_cell(slot_text(fleet, r, e)),
                     bad ? "**" : "");
    }
    out += '\n';
  }
  return out;
}

ojson fleet_json(const Fleet& fleet) {
  ojson j = {{"schema", kFleetSchema}, {"oomlab", version_json()}};
  j["inputs"] = fleet.inputs;
  j["tolerance"] = fleet.tolerance;
  j["environments"] = ojson::array();
  for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
    const FleetEnvironment& env = fleet.environments[e];
    j["environments"].push_back({{"id", column_name(e)},
                                 {"gpu", env.gpu},
                                 {"driver", env.driver},
                                 {"cuda_runtime", env.cuda_runtime},
                                 {"framework", env.framework},
                                 {"runners", env.runners}});
  }
  j["cells"] = ojson::array();
  for (std::size_t r = 0; r < fleet.rows.size(); ++r) {
    ojson steps = ojson::array();
    for (const FleetStep& s : fleet.steps) {
      if (s.row == r) steps.push_back(step_json(fleet, s));
    }
    j["cells"].push_back({{"name", fleet.rows[r].name},
                          {"key", ojson::parse(fleet.rows[r].key.dump())},
                          {"comparisons", steps}});
  }
  ojson totals = {{"comparisons", fleet.steps.size()}, {"regressions", fleet.regressions()}};
  for (const Verdict verdict : kVerdicts)
    totals[std::string(to_string(verdict))] = fleet.count(verdict);
  j["totals"] = totals;
  j["regression"] = fleet.regressions() > 0;
  j["conclusion"] = fleet_conclusion(fleet);
  return j;
}

std::vector<JUnitCase> fleet_junit_cases(const Fleet& fleet) {
  std::vector<JUnitCase> cases;
  for (const FleetStep& s : fleet.steps) {
    const FleetEnvironment& to = fleet.environments[s.to];
    JUnitCase c;
    c.classname = fmt::format("oomlab.fleet.{}", fleet.rows[s.row].name);
    c.name = s.from && !s.same_environment
                 ? fmt::format("{}: {} → {}", to.gpu, fleet.environments[*s.from].versions(),
                               to.versions())
                 : fmt::format("{}: {}{}", to.gpu, to.versions(),
                               s.same_environment ? " (another runner)" : "");
    c.seconds = s.verdict.current ? s.verdict.current->duration_ms / 1000.0 : 0.0;
    c.message = fmt::format("{}: {}", to_string(s.verdict.verdict), s.verdict.reason);
    c.details = fleet_step_text(fleet, s);
    if (is_regression(s.verdict.verdict)) {
      c.result = JUnitCase::Result::failure;
    } else if (s.verdict.verdict == Verdict::missing) {
      c.result = JUnitCase::Result::skipped;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace oomlab
