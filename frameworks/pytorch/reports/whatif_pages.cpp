// whatif's report.md and report.html: the answer and the table first, then the notes and the
// facts of the replay, laid out from the same cells as the terminal's table.
#include <fmt/format.h>

#include "oomlab/units.hpp"
#include "oomlab/version.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/markdown_report.hpp"
#include "reports/writers/report_content.hpp"

namespace oomlab::torch {

namespace {

constexpr const char* kWhatIfStyle = R"(
table.whatif { border-collapse: collapse; font-size: 14px; margin: 6px 0 10px; }
table.whatif th { text-align: left; font-weight: 600; color: #555; padding: 4px 16px 4px 0;
                  border-bottom: 1px solid #ccc; }
table.whatif td { padding: 4px 16px 4px 0; border-bottom: 1px solid #eee; }
table.whatif td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.whatif tr.best td:first-child { font-weight: 700; }
table.whatif tr.best { background: #e1f3e1; }
table.whatif td.fits { color: #2ca02c; font-weight: 600; }
table.whatif td.oom { color: #b82222; font-weight: 600; }
.answer { font-size: 17px; border-left: 5px solid #2ca02c; background: #f1f8f1; padding: 10px 16px;
          border-radius: 4px; margin: 8px 0 16px; }
)";

std::vector<ReportRow> facts(const WhatIfResult& r) {
  std::vector<ReportRow> rows = {
      {"Snapshot", r.trace.string()},
      {"Entries", format_count(r.entries)},
      {"Budget",
       r.budget_bytes
           ? fmt::format(
                 "{} ({} B, {})", format_bytes(*r.budget_bytes), format_count(*r.budget_bytes),
                 r.budget_source == WhatIfBudgetSource::given ? "--budget" : "from the snapshot")
           : std::string("not known")},
      {"Allocator", "torch over the sim (a model of PyTorch's caching allocator; no GPU)"},
      {"Modelled card", format_bytes(r.upper_bytes)},
      {"Resolution", format_bytes(kDevicePageBytes)},
      {"Duration", fmt::format("{:.0f} ms", r.duration_ms)}};
  // Native's options in full; every other row's as what it changes (the same in any order).
  const Params* native = r.native ? &r.rows[*r.native].options : nullptr;
  for (const WhatIfRow& row : r.rows) {
    std::string options;
    for (const auto& [name, value] : row.options.values()) {
      if (native != nullptr && &row.options != native && native->values().at(name) == value)
        continue;
      options +=
          fmt::format("{}{}={}", options.empty() ? "" : ", ", name, format_param_value(value));
    }
    const bool changed = native != nullptr && &row.options != native;
    rows.push_back(
        {"Options: " + row.setting,
         changed ? "native's with " + (options.empty() ? "no change" : options) : options});
  }
  return rows;
}

std::string cell_class(const WhatIfTable& table, std::size_t column, const std::string& text) {
  if (column == 1 || column == 2) return " class=\"num\"";
  if (column == 3 && table.header.size() > 3) {
    if (text == "fits") return " class=\"fits\"";
    if (text.starts_with("OOM")) return " class=\"oom\"";
  }
  return "";
}

std::string table_html(const WhatIfResult& r) {
  const WhatIfTable table = whatif_table(r);
  std::string out = "<table class=\"whatif\" id=\"whatif-table\">\n<tr>";
  for (const std::string& h : table.header)
    out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr>\n";
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    out += r.best && *r.best == i ? "<tr class=\"best\">" : "<tr>";
    for (std::size_t c = 0; c < table.rows[i].size(); ++c) {
      const std::string& text = table.rows[i][c];
      out += fmt::format("<td{}>{}</td>", cell_class(table, c, text), xml_escape(text));
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string whatif_markdown(const WhatIfResult& r) {
  std::string out =
      fmt::format("# oomlab whatif · {}\n\n**{}**\n\n{}\n\n", markdown_cell(whatif_subject(r)),
                  markdown_cell(whatif_answer(r)), markdown_cell(whatif_heading(r)));
  const WhatIfTable table = whatif_table(r);
  out += "|";
  for (const std::string& h : table.header)
    out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < table.header.size(); ++c)
    out += c == 1 || c == 2 ? " ---: |" : " --- |";
  out += "\n";
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    out += "|";
    for (std::size_t c = 0; c < table.rows[i].size(); ++c) {
      const bool bold = c == 0 && r.best && *r.best == i;
      const std::string cell = markdown_cell(table.rows[i][c]);
      out += bold ? " **" + cell + "** |" : " " + cell + " |";
    }
    out += "\n";
  }
  out += "\n## Notes\n\n";
  for (const std::string& note : r.notes)
    out += "- " + markdown_cell(note) + "\n";
  out += "\n## The replays\n\n| | |\n| --- | --- |\n";
  for (const ReportRow& row : facts(r))
    out += fmt::format("| {} | {} |\n", markdown_cell(row.label), markdown_cell(row.value));
  return out;
}

std::string whatif_html(const WhatIfResult& r) {
  const std::string name = whatif_subject(r);
  std::string out = html_page_start("oomlab whatif: " + name, kWhatIfStyle);
  out += fmt::format("<h1>oomlab whatif · {}</h1>\n<p class=\"answer\" id=\"answer\">{}</p>\n",
                     xml_escape(name), xml_escape(whatif_answer(r)));
  out += fmt::format("<section id=\"settings\">\n<p class=\"headline\">{}</p>\n{}</section>\n",
                     xml_escape(whatif_heading(r)), table_html(r));
  out += "<section id=\"notes\">\n<h2>Notes</h2>\n<ul>\n";
  for (const std::string& note : r.notes)
    out += "<li>" + xml_escape(note) + "</li>\n";
  out += "</ul>\n</section>\n<section id=\"replays\">\n<h2>The replays</h2>\n";
  out += "<table class=\"kv\" id=\"whatif-facts\">\n";
  for (const ReportRow& row : facts(r)) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(row.label),
                       xml_escape(row.value));
  }
  out += "</table>\n</section>\n";
  return out + html_page_end(OOMLAB_VERSION);
}

}  // namespace oomlab::torch
