// Self-contained HTML reports: one file, inline CSS, the chart as inline SVG, no script, no
// fonts or anything else fetched from elsewhere.
#pragma once

#include <string>
#include <string_view>

#include "reports/matrix/matrix_report.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/report_content.hpp"

namespace oomlab {

// The page every report shares: the inline CSS (with `extra_css` after it), and the footer.
[[nodiscard]] std::string html_page_start(const std::string& title,
                                          std::string_view extra_css = {});
[[nodiscard]] std::string html_page_end(const std::string& oomlab_version);
// Rows of label and value; a table whose first row is its header (`id`: the element's id).
[[nodiscard]] std::string html_kv_table(const std::vector<ReportRow>& rows, const char* id);
[[nodiscard]] std::string html_data_table(const std::vector<std::vector<std::string>>& rows,
                                          const char* id);

[[nodiscard]] std::string run_html(const RunReport& run);
// Each cell links to "<its run folder>/report.html", relative to the matrix report.
[[nodiscard]] std::string matrix_html(const MatrixReport& matrix);

}  // namespace oomlab
