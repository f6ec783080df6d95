// Markdown versions of the reports (GitHub-flavoured: tables, <br> inside cells): the same
// content as the HTML, with the timeline as a one-line sparkline per series.
#pragma once

#include <string>
#include <vector>

#include "reports/matrix/matrix_report.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/report_content.hpp"

namespace oomlab {

// Text safe inside a Markdown table cell: one line, pipes escaped, no HTML.
[[nodiscard]] std::string markdown_cell(const std::string& text);
// Rows of label and value under a two-column `heading`; a table whose first row is its header.
[[nodiscard]] std::string markdown_kv_table(const std::vector<ReportRow>& rows,
                                            const std::string& heading);
[[nodiscard]] std::string markdown_data_table(const std::vector<std::vector<std::string>>& rows);

[[nodiscard]] std::string run_markdown(const RunReport& run);
// Each cell links to "<its run folder>/report.md", relative to the matrix report.
[[nodiscard]] std::string matrix_markdown(const MatrixReport& matrix);

// `columns` characters of ▁..█: the largest value of `points` in each column, against `top`.
[[nodiscard]] std::string sparkline(const std::vector<TimelinePoint>& points,
                                    std::uint64_t first_seq, std::uint64_t last_seq,
                                    std::uint64_t top, std::size_t columns);

}  // namespace oomlab
