// A frontier's report.html and report.md: the answer, the trials, the search's facts, laid out
// from frontier_report.cpp's content.
#include <fmt/format.h>

#include "oomlab/version.hpp"
#include "reports/searches/frontier_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/markdown_report.hpp"

namespace oomlab {

std::string frontier_html(const FrontierReport& r) {
  const std::string title = frontier_title(r);
  std::string out = html_page_start("oomlab " + title);
  out += fmt::format("<h1>oomlab {}</h1>\n<p class=\"answer{}\" id=\"answer\">{}</p>\n",
                     xml_escape(title), r.frontier_bytes ? "" : " answer-failed",
                     xml_escape(frontier_answer(r)));
  out += "<section id=\"trials\">\n<h2>The trials</h2>\n" +
         html_data_table(frontier_trials_table(r), "frontier-trials") + "</section>\n";
  out += "<section id=\"search\">\n<h2>The search</h2>\n" +
         html_kv_table(frontier_rows(r), "frontier-facts") + "</section>\n";
  return out + html_page_end(r.oomlab_version.empty() ? OOMLAB_VERSION : r.oomlab_version);
}

std::string frontier_markdown(const FrontierReport& r) {
  std::string out =
      fmt::format("# oomlab {}\n\n**{}**\n\n## The trials\n\n", markdown_cell(frontier_title(r)),
                  markdown_cell(frontier_answer(r)));
  out += markdown_data_table(frontier_trials_table(r));
  out += "## The search\n\n" + markdown_kv_table(frontier_rows(r), "Search");
  return out;
}

}  // namespace oomlab
