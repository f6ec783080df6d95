// An exec run on several devices in its report: each device's own timeline (events-gpuN.csv),
// one under another on the same axis (the sample number: every device is read at each tick),
// each against its own budget, the device of the rank that ran out of memory first marked.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "reports/run/run_report.hpp"

namespace oomlab {

// From summary.json's program.device_usage and failing_rank, the files in report.dir; a file
// that is missing or malformed leaves its device out (the summed timeline still stands).
void read_device_timelines(RunReport& report);

// A section with one chart per device; empty for a run on one device.
[[nodiscard]] std::string device_timelines_html(const RunReport& run);
// The same as lines of Markdown (the charts are in report.html).
[[nodiscard]] std::string device_timelines_md(const RunReport& run);

}  // namespace oomlab
