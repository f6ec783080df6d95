// A fit's report.html and report.md: the answer, the trials, the search's facts, laid out from
// fit_report.cpp's content.
#include <fmt/format.h>

#include "oomlab/version.hpp"
#include "reports/searches/fit_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/markdown_report.hpp"

namespace oomlab {

std::string fit_html(const FitReport& r) {
  const std::string title = fit_title(r);
  const std::vector<std::string> answer = fit_answer(r);
  std::string out = html_page_start("oomlab " + title);
  out +=
      fmt::format("<h1>oomlab {}</h1>\n<p class=\"answer{}\" id=\"answer\">{}</p>\n",
                  xml_escape(title), r.value ? "" : " answer-failed", xml_escape(answer.front()));
  for (std::size_t i = 1; i < answer.size(); ++i)
    out += "<p>" + xml_escape(answer[i]) + "</p>\n";
  out += "<section id=\"trials\">\n<h2>The trials</h2>\n" +
         html_data_table(fit_trials_table(r), "fit-trials") + "</section>\n";
  out += "<section id=\"search\">\n<h2>The search</h2>\n" +
         html_kv_table(fit_rows(r), "fit-facts") + "</section>\n";
  return out + html_page_end(r.oomlab_version.empty() ? OOMLAB_VERSION : r.oomlab_version);
}

std::string fit_markdown(const FitReport& r) {
  const std::vector<std::string> answer = fit_answer(r);
  std::string out = fmt::format("# oomlab {}\n\n**{}**\n\n", markdown_cell(fit_title(r)),
                                markdown_cell(answer.front()));
  for (std::size_t i = 1; i < answer.size(); ++i)
    out += markdown_cell(answer[i]) + "\n\n";
  out += "## The trials\n\n" + markdown_data_table(fit_trials_table(r));
  out += "## The search\n\n" + markdown_kv_table(fit_rows(r), "Search");
  return out;
}

}  // namespace oomlab
