// Self-contained HTML reports: one file, inline CSS, the chart as inline SVG, no script, no
// fonts or anything else fetched from elsewhere.
#pragma once

#include <string>

#include "reports/matrix_report.hpp"
#include "reports/run_report.hpp"

namespace oomlab {

[[nodiscard]] std::string run_html(const RunReport& run);
// Each cell links to "<its run folder>/report.html", relative to the matrix report.
[[nodiscard]] std::string matrix_html(const MatrixReport& matrix);

}  // namespace oomlab
