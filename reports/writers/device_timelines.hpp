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

// The run's own timeline (events.csv) as the report draws it: on several devices the devices
// summed, so drawn without one device's budget and OOM, which their own charts show; else `run`.
[[nodiscard]] RunReport devices_together(const RunReport& run);
// Its heading: "Memory over the run", with ": the 2 devices together" on several.
[[nodiscard]] std::string timeline_heading(const RunReport& run);

// A section with one chart per device; empty for a run on one device.
[[nodiscard]] std::string device_timelines_html(const RunReport& run);
// The same as lines of Markdown (the charts are in report.html).
[[nodiscard]] std::string device_timelines_md(const RunReport& run);

}  // namespace oomlab
