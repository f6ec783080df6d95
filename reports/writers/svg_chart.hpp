// The run timeline as inline SVG: live and reserved bytes over events, the budget line, device
// free memory at the OOM where the record has it, and the OOM itself (id "oom-marker").
#pragma once

#include <string>
#include <vector>

#include "reports/run/run_report.hpp"

namespace oomlab {

inline constexpr const char* kOomColour = "#d62728";

// A complete <svg> element, sized by its viewBox (it scales to the page's width).
[[nodiscard]] std::string timeline_svg(const RunReport& run);

// Round axis values from 0 to at least `max` (about `target` steps of 1, 2, 2.5 or 5 x 10^k).
[[nodiscard]] std::vector<double> nice_ticks(double max, int target);

}  // namespace oomlab
