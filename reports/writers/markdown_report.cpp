#include "reports/writers/markdown_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "oomlab/units.hpp"
#include "reports/run/oom_place_text.hpp"
#include "reports/run/program_devices.hpp"
#include "reports/run/run_answer.hpp"
#include "reports/writers/device_timelines.hpp"
#include "reports/writers/report_content.hpp"

namespace oomlab {

namespace {

constexpr std::size_t kSparkColumns = 72;

// Text safe inside a Markdown table cell: one line, pipes escaped, no HTML.
std::string cell_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n' || c == '\r')
      out += ' ';
    else if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string environment_md(const ReportEnvironment& env) {
  return markdown_kv_table(environment_rows(env), "Environment");
}

std::string timeline_md(const RunReport& shown) {
  const RunReport run = devices_together(shown);
  std::string out = fmt::format("## {}\n\n", timeline_heading(run));
  const Timeline& t = run.timeline;
  if (t.missing.empty()) {
    const std::uint64_t top =
        std::max({run.budget_bytes, t.peak_live_bytes, t.peak_reserved_bytes});
    out += fmt::format("```\nreserved {}  peak {}\nlive     {}  peak {}\n",
                       sparkline(t.reserved, t.first_seq, t.last_seq, top, kSparkColumns),
                       format_bytes(t.peak_reserved_bytes),
                       sparkline(t.live, t.first_seq, t.last_seq, top, kSparkColumns),
                       format_bytes(t.peak_live_bytes));
    out += fmt::format("         events {} .. {}; full height = {}{}\n```\n\n",
                       format_count(t.first_seq), format_count(t.last_seq), format_bytes(top),
                       top == run.budget_bytes ? " (the budget)" : "");
  }
  out += cell_text(timeline_caption(t)) + " The chart is in report.html.\n\n";
  return out;
}

// A replayed program's stack at the failing request (a code block: frames such as "<module>"
// stay as written), and its largest live blocks then.
std::string program_md(const OomRecord& oom) {
  std::string out;
  if (!oom.frames.empty()) {
    out += "### The failing request's stack (innermost first)\n\n```\n";
    for (std::string frame : oom.frames) {
      std::replace(frame.begin(), frame.end(), '`', '\'');  // no frame may close the block
      std::replace(frame.begin(), frame.end(), '\n', ' ');
      out += frame + "\n";
    }
    out += "```\n\n";
  }
  if (!oom.largest_live.empty()) {
    out += "### The largest live blocks then\n\n| Block | Allocated at |\n| --- | --- |\n";
    for (const ReportRow& row : largest_live_rows(oom))
      out += fmt::format("| {} | {} |\n", cell_text(row.label), cell_text(row.value));
    out += "\n";
  }
  if (!oom.holders.empty()) {
    out += "### What filled memory at the OOM\n\n| Live | Allocated by |\n| --- | --- |\n";
    for (const ReportRow& row : holder_rows(oom))
      out += fmt::format("| {} | {} |\n", cell_text(row.label), cell_text(row.value));
    out += "\n";
  }
  return out;
}

}  // namespace

std::string markdown_cell(const std::string& text) {
  return cell_text(text);
}

std::string markdown_kv_table(const std::vector<ReportRow>& rows, const std::string& heading) {
  std::string out = fmt::format("| {} | |\n| --- | --- |\n", heading);
  for (const ReportRow& row : rows)
    out += fmt::format("| {} | {} |\n", cell_text(row.label), cell_text(row.value));
  return out + "\n";
}

std::string markdown_data_table(const std::vector<std::vector<std::string>>& rows) {
  if (rows.size() < 2) return "";  // a header without rows is no table
  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += "|";
    for (const std::string& cell : rows[r])
      out += " " + cell_text(cell) + " |";
    out += "\n";
    if (r == 0) {
      out += "|";
      for (std::size_t c = 0; c < rows[r].size(); ++c)
        out += " --- |";
      out += "\n";
    }
  }
  return out + "\n";
}

std::string sparkline(const std::vector<TimelinePoint>& points, std::uint64_t first_seq,
                      std::uint64_t last_seq, std::uint64_t top, std::size_t columns) {
  static constexpr std::array<const char*, 8> kBars = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (points.empty() || columns == 0) return {};
  std::vector<std::uint64_t> highest(columns, 0);
  std::vector<bool> seen(columns, false);
  const double span = static_cast<double>(std::max<std::uint64_t>(last_seq - first_seq, 1));
  for (const TimelinePoint& p : points) {
    const double at = static_cast<double>(p.seq - std::min(p.seq, first_seq)) / span;
    const auto column =
        std::min(columns - 1, static_cast<std::size_t>(at * static_cast<double>(columns)));
    highest[column] = std::max(highest[column], p.bytes);
    seen[column] = true;
  }
  std::string out;
  std::uint64_t carried = 0;
  for (std::size_t i = 0; i < columns; ++i) {
    if (seen[i]) carried = highest[i];
    const double share = top == 0 ? 0.0 : static_cast<double>(carried) / static_cast<double>(top);
    out += kBars[std::min<std::size_t>(7, static_cast<std::size_t>(std::lround(share * 7.0)))];
  }
  return out;
}

namespace {

// What the run answers, before the timeline (as in report.html).
std::string answer_md(const RunReport& run) {
  std::string out;
  if (run.soak)
    out += "## The soak (soak.json)\n\n" + markdown_kv_table(soak_rows(*run.soak), "Soak");
  if ((run.outcome == Outcome::error || run.outcome == Outcome::timeout) &&
      !run.last_events.empty()) {
    out += fmt::format("## The last events before the {}\n\n", to_string(run.outcome)) +
           markdown_data_table(last_events_table(run));
  }
  if (!precision_rows(run).empty())
    out += "## Max batch by precision\n\n" + markdown_data_table(precision_table(run));
  for (const std::string& line : {oom_trial_line(run), program_failure_line(run)}) {
    if (!line.empty()) out += cell_text(line) + ".\n\n";
  }
  return out;
}

// exec: the model's answers from the program's snapshot.
std::string model_md(const RunResult& run, const ProgramModel& model) {
  std::string out = "## " + model_heading(run, model) + "\n\n" +
                    markdown_kv_table(model_rows(model), "Model") +
                    markdown_data_table(model_table(model));
  for (const std::string& line : model_caveats(model))
    out += "- " + cell_text(line) + "\n";
  return out + "\n";
}

}  // namespace

std::string run_markdown(const RunReport& run) {
  std::string out =
      fmt::format("# oomlab · {} · {}\n\n", run_title(run), outcome_label(run.outcome));
  if (const auto answer = run_answer(run)) out += "**" + cell_text(*answer) + "**\n\n";
  out += cell_text(run_headline(run)) + "\n\n";
  for (std::size_t i = 0; i < run.provenance.size(); ++i)
    out += (i == 0 ? "> " : "> - ") + cell_text(run.provenance[i]) + "\n";
  if (!run.provenance.empty()) out += "\n";
  out += environment_md(run.platform);
  out += answer_md(run);
  out += timeline_md(run);
  out += device_timelines_md(run);
  if (run.oom) {
    std::vector<ReportRow> rows = oom_rows(*run.oom);
    std::string advice;
    std::erase_if(rows, [&](const ReportRow& row) {
      if (row.label != "Advice") return false;
      advice = row.value;
      return true;
    });
    out += "## The out-of-memory error\n\n" + markdown_kv_table(rows, "OOM record");
    if (!advice.empty()) out += "**Advice:** " + cell_text(advice) + "\n\n";
    out += program_md(*run.oom);
  }
  for (const ProgramModel* model : shown_models(run))
    out += model_md(run, *model);
  out += "## The run\n\n" + markdown_kv_table(run_rows(run), "Run");
  if (!run.metrics.empty()) {
    out += "## Scenario metrics\n\n" + markdown_kv_table(metric_rows(run), "Metric");
  }
  if (const std::vector<std::string> notices = run_notices(run); !notices.empty()) {
    out += "## Notices\n\n";
    for (const std::string& notice : notices)
      out += "- " + cell_text(notice) + "\n";
    out += "\n";
  }
  return out;
}

namespace {

std::string cell_md(const MatrixReportCell* cell) {
  if (cell == nullptr) return "not run";
  std::string out = "**" + outcome_label(cell->outcome) + "**";
  for (const std::string& line : cell_lines(*cell))
    out += "<br>" + cell_text(line);
  if (!cell->report_dir.empty())
    out += fmt::format("<br>[report]({}/report.md)", url_path(cell->report_dir));
  if (!cell->repeat_report_dirs.empty()) out += "<br>runs:";
  for (std::size_t i = 0; i < cell->repeat_report_dirs.size(); ++i) {
    const std::string& dir = cell->repeat_report_dirs[i];
    out += dir.empty() ? fmt::format(" {}", i + 1)
                       : fmt::format(" [{}]({}/report.md)", i + 1, url_path(dir));
  }
  return out;
}

}  // namespace

std::string matrix_markdown(const MatrixReport& matrix) {
  std::string out = fmt::format(
      "# oomlab matrix · {} scenarios × {} allocators\n\n**{}**\n\nbudget {}\n\n",
      matrix.scenarios.size(), matrix.allocators.size(), cell_text(matrix_counts_line(matrix)),
      matrix.budget.empty() ? "-" : cell_text(matrix.budget));
  out += environment_md(matrix.environment);
  out += "## Outcomes\n\n| scenario \\\\ allocator |";
  for (const std::string& allocator : matrix.allocators)
    out += " " + cell_text(allocator) + " |";
  out += "\n| --- |";
  for (std::size_t i = 0; i < matrix.allocators.size(); ++i)
    out += " --- |";
  out += "\n";
  for (const std::string& scenario : matrix.scenarios) {
    out += "| **" + cell_text(scenario) + "** |";
    for (const std::string& allocator : matrix.allocators) {
      out += " " + cell_md(find_cell(matrix, scenario, allocator)) + " |";
    }
    out += "\n";
  }
  out += "\n";
  for (const MatrixReportCell& cell : matrix.cells) {
    if (cell.last_lines.empty() || cell.outcome == "oom" || cell.outcome == "completed") continue;
    out += fmt::format("### {} ({})\n\n```\n", cell_text(cell.id), cell.outcome);
    for (const std::string& line : cell.last_lines)
      out += line + "\n";
    out += "```\n\n";
  }
  out += "## The matrix\n\n" + markdown_kv_table(matrix_config_rows(matrix), "Matrix");
  return out;
}

}  // namespace oomlab
