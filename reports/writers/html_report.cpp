#include "reports/writers/html_report.hpp"

#include <fmt/format.h>

#include "reports/run/oom_place_text.hpp"
#include "reports/run/program_devices.hpp"
#include "reports/run/run_answer.hpp"
#include "reports/writers/device_timelines.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/report_content.hpp"
#include "reports/writers/svg_chart.hpp"

namespace oomlab {

namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 0 auto; padding: 24px 32px 48px; max-width: 1200px; line-height: 1.45; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 10px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.headline { font-size: 16px; color: #444; margin: 0 0 8px; }
.answer { font-size: 21px; font-weight: 600; margin: 6px 0 6px; }
.finding { font-size: 15px; margin: 8px 0; }
.answer-failed { color: #b82222; }
.soak-passed { border-left: 5px solid #2ca02c; background: #eef8ee; padding: 8px 16px; border-radius: 4px; }
.soak-failed { border-left: 5px solid #b82222; background: #fdf1f1; padding: 8px 16px; border-radius: 4px; }
table.data { border-collapse: collapse; font-size: 14px; }
table.data th { text-align: left; font-weight: 600; color: #555; border-bottom: 1px solid #ccc;
                padding: 3px 16px 3px 0; }
table.data td { padding: 3px 16px 3px 0; border-bottom: 1px solid #eee; }
.counts { font-size: 17px; font-weight: 600; margin: 6px 0 10px; }
.badge { display: inline-block; padding: 1px 10px; border-radius: 10px; font-weight: 600;
         font-size: 14px; color: #fff; background: #6c757d; vertical-align: 3px; }
.badge-oom { background: #1f5fa8; } .badge-completed { background: #2ca02c; }
.badge-error { background: #b82222; } .badge-crash { background: #6f42c1; }
.badge-timeout { background: #e8710a; }
table.kv { border-collapse: collapse; font-size: 14px; }
table.kv th { text-align: left; font-weight: 600; padding: 3px 18px 3px 0; color: #555;
              vertical-align: top; white-space: nowrap; }
table.kv td { padding: 3px 0; }
.env { display: flex; flex-wrap: wrap; gap: 6px 28px; font-size: 14px; background: #f6f7f9;
       border: 1px solid #e4e6ea; border-radius: 6px; padding: 10px 14px; }
.env span b { color: #555; font-weight: 600; margin-right: 4px; }
.oom-box { border-left: 5px solid #b82222; background: #fdf1f1; padding: 10px 16px; border-radius: 4px; }
.advice { margin: 10px 0 0; font-size: 15px; }
svg.chart { width: 100%; height: auto; border: 1px solid #e4e6ea; border-radius: 6px; background: #fff; }
.caption { font-size: 13px; color: #555; margin: 4px 0 0; }
.note { background: #fff8e1; border: 1px solid #f0d98c; padding: 8px 12px; border-radius: 4px; }
table.grid { border-collapse: separate; border-spacing: 6px; font-size: 13px; }
table.grid th { text-align: left; padding: 4px 8px; }
td.cell { width: 290px; border-radius: 6px; padding: 8px 10px; vertical-align: top;
                     border-left: 6px solid #999; background: #f2f2f2; }
td.cell a { color: inherit; text-decoration: none; display: block; }
td.cell a:hover .outcome { text-decoration: underline; }
td.cell .outcome { font-weight: 700; font-size: 14px; display: block; margin-bottom: 2px; }
td.cell .line { display: block; color: #333; }
td.cell .runs a { display: inline; margin-right: 6px; text-decoration: underline; }
.cell.outcome-oom, .legend .outcome-oom { background: #e3edf8; border-left-color: #1f5fa8; }
.cell.outcome-completed, .legend .outcome-completed { background: #e1f3e1; border-left-color: #2ca02c; }
.cell.outcome-error, .legend .outcome-error { background: #fbe0e0; border-left-color: #b82222; }
.cell.outcome-crash, .legend .outcome-crash { background: #ece3f7; border-left-color: #6f42c1; }
.cell.outcome-timeout, .legend .outcome-timeout { background: #fde6cc; border-left-color: #e8710a; }
.cell.outcome-interrupted, .legend .outcome-interrupted { background: #e9eaec; border-left-color: #6c757d; }
.cell.outcome-none, .legend .outcome-none { background: #fafafa; border-left-color: #ddd; color: #888; }
.legend { display: flex; gap: 14px; font-size: 13px; margin: 6px 0 10px; }
.legend span { padding: 2px 10px; border-left: 6px solid; border-radius: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
td.cell .open { color: #1a5fb4; font-size: 12px; margin-top: 3px; }
pre { background: #f6f7f9; padding: 8px 12px; border-radius: 4px; font-size: 12px; overflow-x: auto; }
footer { margin-top: 36px; font-size: 12px; color: #777; }
)";

std::string page_start(const std::string& title) {
  return html_page_start(title);
}

std::string page_end(const ReportEnvironment& env) {
  return html_page_end(env.oomlab_version);
}

std::string environment_html(const ReportEnvironment& env) {
  std::string out = "<section id=\"environment\" class=\"env\">\n";
  for (const ReportRow& row : environment_rows(env)) {
    out += fmt::format("<span><b>{}</b>{}</span>\n", xml_escape(row.label), xml_escape(row.value));
  }
  return out + "</section>\n";
}

std::string badge(const std::string& outcome) {
  return fmt::format("<span class=\"badge badge-{}\">{}</span>", xml_escape(outcome),
                     xml_escape(outcome_label(outcome)));
}

// What the run answers, before the timeline: the soak's verdict, the error and its last events,
// the precision table, which trial the OOM came from, where a replayed program failed.
std::string answer_sections(const RunReport& run) {
  std::string out;
  if (run.soak) {
    out += fmt::format(
        "<section id=\"soak\">\n<h2>The soak (soak.json)</h2>\n<div class=\"soak-{}\">\n{}</div>\n"
        "</section>\n",
        run.soak->passed ? "passed" : "failed", html_kv_table(soak_rows(*run.soak), "soak-facts"));
  }
  if ((run.outcome == Outcome::error || run.outcome == Outcome::timeout) &&
      !run.last_events.empty()) {
    out += fmt::format(
        "<section id=\"error\">\n<h2>The last events before the {}</h2>\n{}</section>\n",
        to_string(run.outcome), html_data_table(last_events_table(run), "last-events"));
  }
  if (!precision_rows(run).empty()) {
    out += "<section id=\"precisions\">\n<h2>Max batch by precision</h2>\n" +
           html_data_table(precision_table(run), "precision-table") + "</section>\n";
  }
  for (const std::string& line : {oom_trial_line(run), program_failure_line(run)}) {
    if (!line.empty()) out += fmt::format("<p class=\"finding\">{}</p>\n", xml_escape(line));
  }
  return out;
}

// exec: the model's answers from the program's snapshot.
// The first keeps the ids of a one-device report; the others' name their device.
std::string model_section(const RunResult& run, const ProgramModel& model, bool first) {
  const std::string suffix =
      first || !model.device ? std::string() : fmt::format("-gpu{}", *model.device);
  std::string out = fmt::format("<section id=\"model{}\">\n<h2>{}</h2>\n", suffix,
                                xml_escape(model_heading(run, model))) +
                    html_kv_table(model_rows(model), ("model-facts" + suffix).c_str()) +
                    html_data_table(model_table(model), ("model-whatif" + suffix).c_str());
  const std::vector<std::string> caveats = model_caveats(model);
  if (!caveats.empty()) {
    out += "<ul class=\"caveats\">\n";
    for (const std::string& line : caveats)
      out += "<li>" + xml_escape(line) + "</li>\n";
    out += "</ul>\n";
  }
  return out + "</section>\n";
}

std::string oom_section(const OomRecord& oom) {
  std::vector<ReportRow> rows = oom_rows(oom);
  std::string advice;
  std::erase_if(rows, [&](const ReportRow& row) {
    if (row.label != "Advice") return false;
    advice = row.value;
    return true;
  });
  std::string out =
      "<section id=\"oom\">\n<h2>The out-of-memory error</h2>\n<div class=\"oom-box\">\n";
  out += html_kv_table(rows, "oom-record");
  if (!advice.empty()) {
    out += fmt::format("<p class=\"advice\"><b>Advice:</b> {}</p>\n", xml_escape(advice));
  }
  out += "</div>\n";
  if (!oom.frames.empty()) {
    out += "<h3>The failing request's stack (innermost first)</h3>\n<ol id=\"oom-frames\">\n";
    for (const std::string& frame : oom.frames)
      out += "<li><code>" + xml_escape(frame) + "</code></li>\n";
    out += "</ol>\n";
  }
  if (!oom.largest_live.empty()) {
    out += "<h3>The largest live blocks then</h3>\n" +
           html_kv_table(largest_live_rows(oom), "largest-live");
  }
  if (!oom.holders.empty()) {
    out +=
        "<h3>What filled memory at the OOM (live bytes by the frame that allocated them)</h3>\n" +
        html_kv_table(holder_rows(oom), "oom-holders");
  }
  return out + "</section>\n";
}

}  // namespace

std::string html_kv_table(const std::vector<ReportRow>& rows, const char* id) {
  std::string out = fmt::format("<table class=\"kv\" id=\"{}\">\n", id);
  for (const ReportRow& row : rows) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(row.label),
                       xml_escape(row.value));
  }
  return out + "</table>\n";
}

std::string html_data_table(const std::vector<std::vector<std::string>>& rows, const char* id) {
  if (rows.size() < 2) return "";  // a header without rows is no table
  std::string out = fmt::format("<table class=\"data\" id=\"{}\">\n", id);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += "<tr>";
    for (const std::string& cell : rows[r])
      out += r == 0 ? "<th>" + xml_escape(cell) + "</th>" : "<td>" + xml_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string html_page_start(const std::string& title, std::string_view extra_css) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}{}</style>\n</head>\n<body>\n",
      xml_escape(title), kStyle, extra_css);
}

std::string html_page_end(const std::string& oomlab_version) {
  return fmt::format(
      "<footer>Written by oomlab {}. One self-contained file: no scripts, nothing "
      "loaded from elsewhere.</footer>\n</body>\n</html>\n",
      xml_escape(oomlab_version));
}

namespace {

// Whose verdicts these are (the first line), and what a re-diagnosis changed (the rest).
std::string provenance_html(const std::vector<std::string>& lines) {
  if (lines.empty()) return {};
  std::string out =
      fmt::format("<div class=\"note provenance\">\n<p>{}</p>\n", xml_escape(lines.front()));
  if (lines.size() > 1) out += "<ul>\n";
  for (std::size_t i = 1; i < lines.size(); ++i)
    out += "<li>" + xml_escape(lines[i]) + "</li>\n";
  if (lines.size() > 1) out += "</ul>\n";
  return out + "</div>\n";
}

}  // namespace

std::string run_html(const RunReport& run) {
  std::string out = page_start("oomlab: " + run_title(run));
  out += fmt::format("<h1>oomlab · {} {}</h1>\n", xml_escape(run_title(run)),
                     badge(std::string(to_string(run.outcome))));
  if (const auto answer = run_answer(run)) {
    const bool failed = run.outcome == Outcome::error || run.outcome == Outcome::timeout ||
                        (run.soak && !run.soak->passed);
    out += fmt::format("<p class=\"answer{}\" id=\"answer\">{}</p>\n",
                       failed ? " answer-failed" : "", xml_escape(*answer));
  }
  out += fmt::format("<p class=\"headline\">{}</p>\n", xml_escape(run_headline(run)));
  out += provenance_html(run.provenance);
  out += environment_html(run.platform);
  out += answer_sections(run);
  out += fmt::format("<section id=\"timeline\">\n<h2>{}</h2>\n", timeline_heading(run));
  if (!run.timeline.missing.empty()) {
    out += fmt::format("<p class=\"note\">{}</p>\n", xml_escape(run.timeline.missing));
  }
  out += timeline_svg(devices_together(run));
  out += fmt::format("<p class=\"caption\">{}</p>\n</section>\n",
                     xml_escape(timeline_caption(run.timeline)));
  out += device_timelines_html(run);
  if (run.oom) out += oom_section(*run.oom);
  const std::vector<const ProgramModel*> models = shown_models(run);
  for (const ProgramModel* model : models)
    out += model_section(run, *model, model == models.front());
  out += "<section id=\"run\">\n<h2>The run</h2>\n" + html_kv_table(run_rows(run), "run-facts");
  if (!run.metrics.empty()) {
    out += "<h2>Scenario metrics</h2>\n" + html_kv_table(metric_rows(run), "metrics");
  }
  if (const std::vector<std::string> notices = run_notices(run); !notices.empty()) {
    out += "<h2>Notices</h2>\n<ul>\n";
    for (const std::string& notice : notices)
      out += "<li>" + xml_escape(notice) + "</li>\n";
    out += "</ul>\n";
  }
  out += "</section>\n";
  return out + page_end(run.platform);
}

namespace {

// "runs: 1 2 3", each a link to that repeat's report where it has one.
std::string repeat_links(const std::vector<std::string>& dirs) {
  std::string out = "<span class=\"line runs\">runs: ";
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    if (dirs[i].empty()) {
      out += fmt::format("<span>{}</span> ", i + 1);
    } else {
      out += fmt::format("<a href=\"{}/report.html\">{}</a>", xml_escape(url_path(dirs[i])), i + 1);
    }
  }
  return out + "</span>";
}

std::string cell_html(const MatrixReportCell* cell) {
  if (cell == nullptr) return "<td class=\"cell outcome-none\">not run</td>\n";
  std::string body =
      fmt::format("<span class=\"outcome\">{}</span>", xml_escape(outcome_label(cell->outcome)));
  for (const std::string& line : cell_lines(*cell)) {
    body += fmt::format("<span class=\"line\">{}</span>", xml_escape(line));
  }
  std::string out = fmt::format(R"(<td class="cell outcome-{}" id="cell-{}">)",
                                xml_escape(cell->outcome), xml_escape(cell->id));
  if (cell->report_dir.empty()) {
    out += body;
  } else {
    out += fmt::format(
        "<a href=\"{}/report.html\">{}<span class=\"line open\">run report →</span></a>",
        xml_escape(url_path(cell->report_dir)), body);
  }
  if (!cell->repeat_report_dirs.empty()) out += repeat_links(cell->repeat_report_dirs);
  return out + "</td>\n";
}

std::string grid_html(const MatrixReport& matrix) {
  std::string out = "<table class=\"grid\" id=\"matrix-grid\">\n<tr><th>scenario \\ allocator</th>";
  for (const std::string& allocator : matrix.allocators)
    out += "<th>" + xml_escape(allocator) + "</th>";
  out += "</tr>\n";
  for (const std::string& scenario : matrix.scenarios) {
    out += "<tr><th>" + xml_escape(scenario) + "</th>\n";
    for (const std::string& allocator : matrix.allocators)
      out += cell_html(find_cell(matrix, scenario, allocator));
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string failures_html(const MatrixReport& matrix) {
  std::string out;
  for (const MatrixReportCell& cell : matrix.cells) {
    if (cell.last_lines.empty() || cell.outcome == "oom" || cell.outcome == "completed") continue;
    std::string lines;
    for (const std::string& line : cell.last_lines)
      lines += xml_escape(line) + "\n";
    out += fmt::format("<h3>{} ({})</h3>\n<pre>{}</pre>\n", xml_escape(cell.id),
                       xml_escape(cell.outcome), lines);
  }
  return out.empty() ? out
                     : "<section id=\"failures\">\n<h2>Cells that failed: their last lines</h2>\n" +
                           out + "</section>\n";
}

}  // namespace

std::string matrix_html(const MatrixReport& matrix) {
  const std::string title = fmt::format("oomlab matrix · {} scenarios × {} allocators",
                                        matrix.scenarios.size(), matrix.allocators.size());
  std::string out = page_start(title);
  out += fmt::format(
      "<h1>{}</h1>\n<p class=\"counts\" id=\"counts\">{}</p>\n"
      "<p class=\"headline\">budget {} · each cell links to its run's report</p>\n",
      xml_escape(title), xml_escape(matrix_counts_line(matrix)),
      xml_escape(matrix.budget.empty() ? "-" : matrix.budget));
  out += environment_html(matrix.environment);
  out += "<section id=\"cells\">\n<h2>Outcomes</h2>\n<div class=\"legend\">";
  for (const std::string_view outcome : kOutcomes) {
    out += fmt::format("<span class=\"outcome-{}\">{}</span>", outcome,
                       xml_escape(outcome_legend(outcome)));
  }
  out += "</div>\n" + grid_html(matrix) + "</section>\n";
  out += failures_html(matrix);
  out += "<section id=\"config\">\n<h2>The matrix</h2>\n" +
         html_kv_table(matrix_config_rows(matrix), "matrix-config");
  out += "</section>\n";
  return out + page_end(matrix.environment);
}

}  // namespace oomlab
