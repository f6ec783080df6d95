// The comparison written out: a table for the terminal, Markdown for a PR comment or a job
// summary, JSON (oomlab.compare.v1) for machines, JUnit testcases for CI dashboards.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "oomlab/units.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/matrix/table_text.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

using ojson = nlohmann::ordered_json;

namespace {

bool shows_event(const CellVerdict& v, const CompareCell& cell) {
  return v.step ? v.step_is_event : cell.oom && cell.oom->step == 0;
}

// "7.81 GiB @ step 128", "7.81 GiB @ event 125,000", "completed", "crash", "-" (not there).
std::string point_text(const CellVerdict& v, const std::optional<CompareCell>& cell) {
  if (!cell) return "-";
  if (!cell->oom) return cell->outcome;
  return shows_event(v, *cell) ? fmt::format("{} @ event {}", format_bytes(cell->oom->live_bytes),
                                             format_count(cell->oom->event))
                               : fmt::format("{} @ step {}", format_bytes(cell->oom->live_bytes),
                                             format_count(cell->oom->step));
}

// Live bytes, then step (or event): "-3.1% / -2.9%".
std::string change_text(const CellVerdict& v) {
  if (!v.live_bytes || !v.step) return "-";
  return fmt::format("{} / {}", change_percent(v.live_bytes->change),
                     change_percent(v.step->change));
}

struct Row {
  std::array<std::string, 7> columns;
};

constexpr std::array<std::string_view, 7> kHeader = {"scenario",
                                                     "allocator",
                                                     "budget",
                                                     "baseline OOM point",
                                                     "current OOM point",
                                                     "change (live / step)",
                                                     "verdict"};

Row row_of(const CellVerdict& v) {
  const CompareCell& cell = v.cell();
  return {{cell.scenario, v.allocator_label(), cell.budget, point_text(v, v.baseline),
           point_text(v, v.current), change_text(v), std::string(to_string(v.verdict))}};
}

// "driver 570.86.15 → 580.159.04 (the same GPU model under two drivers)\n", or "".
std::string upgrade_line(const Comparison& comparison) {
  const std::string change = driver_change(comparison);
  return change.empty() ? "" : change + " (the same GPU model under two drivers)\n";
}

std::string input_line(std::string_view side, const CompareInput& input) {
  return fmt::format("{:<9} {} ({}, {} cell{})", side, input.path, input.kind, input.cells.size(),
                     input.cells.size() == 1 ? "" : "s");
}

ojson point_json(const std::optional<CompareCell>& cell) {
  if (!cell) return nullptr;
  ojson j = {{"outcome", cell->outcome}};
  j["oom"] = cell->oom ? ojson{{"live_bytes", cell->oom->live_bytes},
                               {"step", cell->oom->step},
                               {"event", cell->oom->event}}
                       : ojson(nullptr);
  const auto spread = [](const std::optional<Spread>& s) {
    return s ? ojson{{"min", s->min}, {"median", s->median}, {"max", s->max}} : ojson(nullptr);
  };
  j["spread"] = {{"oom_live_bytes", spread(cell->live_bytes_spread)},
                 {"oom_step", spread(cell->step_spread)},
                 {"oom_event", spread(cell->event_spread)}};
  j["duration_ms"] = cell->duration_ms;
  if (!cell->why.empty()) j["why"] = cell->why;
  return j;
}

ojson movement_json(const std::optional<Movement>& m) {
  if (!m) return nullptr;
  return {{"baseline", m->baseline},
          {"current", m->current},
          {"change", std::isfinite(m->change) ? ojson(m->change) : ojson(nullptr)},
          {"tolerance", m->tolerance}};
}

// [{"option": "page", "baseline": "2MiB", "current": "4MiB"}]; empty unless the cell is one of a
// missing and added pair that differ only there.
ojson options_differ_json(const CellVerdict& v) {
  ojson out = ojson::array();
  for (const OptionDifference& d : v.options_differ)
    out.push_back({{"option", d.option}, {"baseline", d.baseline}, {"current", d.current}});
  return out;
}

ojson input_json(const CompareInput& input) {
  return {{"path", input.path},
          {"kind", input.kind},
          {"cells", input.cells.size()},
          {"oomlab", ojson::parse(input.oomlab.dump())},
          {"environment", ojson::parse(input.environment.dump())}};
}

// Markdown table cells: no pipes, no line breaks.
// "async @ 8GiB", made unique within the suite ("async @ 8GiB #2") where keys differ in options
// or params that the label does not show.
std::vector<std::string> unique_names(const Comparison& comparison) {
  std::map<std::string, int> seen;
  std::vector<std::string> names;
  for (const CellVerdict& v : comparison.cells) {
    std::string name = fmt::format("{} @ {}", v.allocator_label(), v.cell().budget);
    const int n = ++seen[fmt::format("{}\n{}", v.cell().scenario, name)];
    if (n > 1) name += fmt::format(" #{}", n);
    names.push_back(std::move(name));
  }
  return names;
}

// The two environments side by side, rows that differ marked at the end.
void write_environments(std::string& out, const std::vector<EnvironmentRow>& rows) {
  std::size_t what = 0;
  std::size_t baseline = std::string_view("baseline").size();
  std::size_t current = std::string_view("current").size();
  for (const EnvironmentRow& r : rows) {
    what = std::max(what, r.what.size());
    baseline = std::max(baseline, r.baseline.size());
    current = std::max(current, r.current.size());
  }
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{:<{}}  {:<{}}  {}\n", "", what, "baseline", baseline, "current");
  for (const EnvironmentRow& r : rows) {
    if (r.differs) {
      fmt::format_to(it, "{:<{}}  {:<{}}  {:<{}}  <- differs\n", r.what, what, r.baseline, baseline,
                     r.current, current);
    } else {
      fmt::format_to(it, "{:<{}}  {:<{}}  {}\n", r.what, what, r.baseline, baseline, r.current);
    }
  }
}

// Why each regression is one, a line each, for the CI log; then the pairs of cells that differ
// only in allocator options, once each (from the baseline's side).
void write_regressions(std::string& out, const Comparison& comparison) {
  bool first = true;
  for (const CellVerdict& v : comparison.cells) {
    if (!is_regression(v.verdict)) continue;
    fmt::format_to(std::back_inserter(out), "{}  {}/{} @ {}: {}\n", first ? "\nregressions:\n" : "",
                   v.cell().scenario, v.allocator_label(), v.cell().budget, v.reason);
    first = false;
  }
  first = true;
  for (const CellVerdict& v : comparison.cells) {
    if (v.options_differ.empty() || !v.baseline) continue;
    fmt::format_to(
        std::back_inserter(out), "{}  {}/{} @ {}: {}\n",
        first ? "\nthe same cell with other allocator options (missing and added):\n" : "",
        v.cell().scenario, v.cell().allocator, v.cell().budget, options_differ_text(v));
    first = false;
  }
}

// The same in Markdown: each failing cell with its own message, each pair of options.
void write_markdown_reasons(std::string& out, const Comparison& comparison) {
  auto it = std::back_inserter(out);
  bool first = true;
  for (const CellVerdict& v : comparison.cells) {
    if (!is_regression(v.verdict)) continue;
    fmt::format_to(it, "{}- **{}/{} @ {}** ({}): {}\n", first ? "\nRegressions:\n\n" : "",
                   markdown_cell(v.cell().scenario), markdown_cell(v.allocator_label()),
                   markdown_cell(v.cell().budget), to_string(v.verdict), markdown_cell(v.reason));
    first = false;
  }
  first = true;
  for (const CellVerdict& v : comparison.cells) {
    if (v.options_differ.empty() || !v.baseline) continue;
    fmt::format_to(
        it, "{}- {}/{} @ {}: {}\n",
        first ? "\nThe same cell with other allocator options (missing and added):\n\n" : "",
        markdown_cell(v.cell().scenario), markdown_cell(v.cell().allocator),
        markdown_cell(v.cell().budget), markdown_cell(options_differ_text(v)));
    first = false;
  }
}

}  // namespace

std::string compare_table(const Comparison& comparison) {
  std::string out = fmt::format("oomlab compare · tolerance {}\n{}{}\n{}\n\n",
                                tolerance_text(comparison.tolerance), upgrade_line(comparison),
                                input_line("baseline", comparison.baseline),
                                input_line("current", comparison.current));
  write_environments(out, comparison.environment);
  out += '\n';
  std::vector<Row> rows;
  std::array<std::size_t, 7> widths{};
  for (std::size_t i = 0; i < widths.size(); ++i)
    widths[i] = kHeader[i].size();
  for (const CellVerdict& v : comparison.cells) {
    rows.push_back(row_of(v));
    for (std::size_t i = 0; i < widths.size(); ++i)
      widths[i] = std::max(widths[i], rows.back().columns[i].size());
  }
  const auto write_row = [&](const auto& columns) {
    std::string line;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      line += i + 1 < columns.size() ? fmt::format("{:<{}}  ", columns[i], widths[i])
                                     : std::string(columns[i]);
    }
    out += line + '\n';
  };
  write_row(kHeader);
  for (const Row& row : rows)
    write_row(row.columns);
  write_regressions(out, comparison);
  fmt::format_to(std::back_inserter(out), "\nverdicts: {}\n{}\n", verdict_counts(comparison),
                 conclusion(comparison));
  return out;
}

std::string compare_markdown(const Comparison& comparison) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(
      it, "# oomlab compare\n\n**{}** · tolerance {} on the OOM point (live bytes, step)\n\n",
      markdown_cell(conclusion(comparison)), tolerance_text(comparison.tolerance));
  if (const std::string change = driver_change(comparison); !change.empty())
    fmt::format_to(it, "**{}** (the same GPU model under two drivers)\n\n", markdown_cell(change));
  if (const std::string warning = environment_warning(comparison); !warning.empty()) {
    fmt::format_to(it, "> **Warning:** {}\n\n", markdown_cell(warning));
  }
  out += "| | baseline | current |\n| --- | --- | --- |\n";
  fmt::format_to(it, "| file | `{}` ({}, {} cells) | `{}` ({}, {} cells) |\n",
                 markdown_cell(comparison.baseline.path), comparison.baseline.kind,
                 comparison.baseline.cells.size(), markdown_cell(comparison.current.path),
                 comparison.current.kind, comparison.current.cells.size());
  for (const EnvironmentRow& r : comparison.environment) {
    const std::string_view mark = r.differs ? "**" : "";
    fmt::format_to(it, "| {} | {}{}{} | {}{}{} |\n", r.what, mark, markdown_cell(r.baseline), mark,
                   mark, markdown_cell(r.current), mark);
  }
  out += "\n| " + fmt::format("{}", fmt::join(kHeader, " | ")) + " |\n";
  out += "| --- | --- | --- | --- | --- | ---: | --- |\n";
  for (const CellVerdict& v : comparison.cells) {
    Row row = row_of(v);
    if (is_regression(v.verdict)) row.columns[6] = fmt::format("**{}**", row.columns[6]);
    std::vector<std::string> cells;
    for (const std::string& c : row.columns)
      cells.push_back(markdown_cell(c));
    fmt::format_to(it, "| {} |\n", fmt::join(cells, " | "));
  }
  write_markdown_reasons(out, comparison);
  fmt::format_to(it, "\nVerdicts: {}\n", verdict_counts(comparison));
  return out;
}

ojson compare_json(const Comparison& comparison) {
  ojson j = {{"schema", kCompareSchema}, {"oomlab", version_json()}};
  j["baseline"] = input_json(comparison.baseline);
  j["current"] = input_json(comparison.current);
  j["tolerance"] = comparison.tolerance;
  j["environments_differ"] = comparison.environments_differ();
  j["driver_change"] = driver_change(comparison);
  j["environment_differences"] = ojson::array();
  for (const EnvironmentRow& r : comparison.environment) {
    if (r.differs) {
      j["environment_differences"].push_back(
          {{"what", r.what}, {"baseline", r.baseline}, {"current", r.current}, {"warns", r.warns}});
    }
  }
  j["cells"] = ojson::array();
  for (const CellVerdict& v : comparison.cells) {
    const CompareCell& cell = v.cell();
    j["cells"].push_back(
        {{"key", ojson::parse(cell.key.dump())},
         {"scenario", cell.scenario},
         {"allocator", cell.allocator},
         {"budget", cell.budget},
         {"verdict", to_string(v.verdict)},
         {"regression", is_regression(v.verdict)},
         {"reason", v.reason},
         {"baseline", point_json(v.baseline)},
         {"current", point_json(v.current)},
         {"live_bytes", movement_json(v.live_bytes)},
         {"step", movement_json(v.step)},
         {"step_measure", v.step ? ojson(v.step_is_event ? "event" : "step") : ojson(nullptr)},
         {"options_differ", options_differ_json(v)}});
  }
  ojson totals = {{"cells", comparison.cells.size()}, {"regressions", comparison.regressions()}};
  for (const Verdict verdict : kVerdicts)
    totals[std::string(to_string(verdict))] = comparison.count(verdict);
  j["totals"] = totals;
  j["regression"] = comparison.regressions() > 0;
  j["conclusion"] = conclusion(comparison);
  return j;
}

std::vector<JUnitCase> compare_junit_cases(const Comparison& comparison) {
  const std::vector<std::string> names = unique_names(comparison);
  std::vector<JUnitCase> cases;
  for (std::size_t i = 0; i < comparison.cells.size(); ++i) {
    const CellVerdict& v = comparison.cells[i];
    JUnitCase c;
    c.classname = fmt::format("oomlab.compare.{}", v.cell().scenario);
    c.name = names[i];
    c.seconds = v.current ? v.current->duration_ms / 1000.0 : 0.0;
    c.message = fmt::format("{}: {}", to_string(v.verdict), v.reason);
    c.details =
        fmt::format("baseline: {}\ncurrent:  {}\nchange (live / step): {}\nverdict: {}",
                    point_text(v, v.baseline), point_text(v, v.current), change_text(v), c.message);
    if (is_regression(v.verdict)) {
      c.result = JUnitCase::Result::failure;
    } else if (v.verdict == Verdict::missing) {
      c.result = JUnitCase::Result::skipped;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace oomlab
