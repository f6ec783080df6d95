#include "reports/writers/device_timelines.hpp"

#include <fmt/format.h>

#include <fstream>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/svg_chart.hpp"

namespace oomlab {

namespace {

constexpr std::size_t kDeviceBuckets = 400;

// The run as one device saw it: its timeline, its budget, the OOM only where it happened.
RunReport as_device(const RunReport& run, const RunReport::DeviceTimeline& d) {
  RunReport one = run;
  one.timeline = d.timeline;
  one.budget_bytes = d.budget_bytes;
  one.trials.clear();
  one.device_timelines.clear();
  if (d.failing && one.oom && !d.timeline.failed_seqs.empty()) {
    one.oom->event = d.timeline.failed_seqs.front();
  } else {
    one.oom.reset();
  }
  return one;
}

std::string heading(const RunReport& run, const RunReport::DeviceTimeline& d) {
  std::string text =
      fmt::format("GPU {} · budget {} · peak {}", d.device, format_bytes(d.budget_bytes),
                  format_bytes(d.timeline.peak_live_bytes));
  if (d.failing && run.program && run.program->failing_rank &&
      !run.program->failing_rank->verdict.empty())
    text += " · " + run.program->failing_rank->verdict;
  return text;
}

}  // namespace

RunReport devices_together(const RunReport& run) {
  if (run.device_timelines.empty()) return run;
  RunReport together = run;
  together.budget_bytes = 0;
  if (together.oom) {  // marked on its device's chart, with that device's figures
    std::erase(together.timeline.failed_seqs, together.oom->event);
    together.oom.reset();
  }
  return together;
}

std::string timeline_heading(const RunReport& run) {
  if (run.device_timelines.empty() || !run.program) return "Memory over the run";
  return fmt::format("Memory over the run: the {} devices together",
                     run.program->device_runs.size());
}

void read_device_timelines(RunReport& report) {
  if (!report.program || report.program->device_runs.size() < 2) return;
  const std::optional<FailingRank>& rank = report.program->failing_rank;
  // The failing rank's device, -1 for none (no device has that index).
  const int failing = rank && rank->device ? *rank->device : -1;
  for (const DeviceRun& d : report.program->device_runs) {
    if (d.events_file.empty()) continue;
    RunReport::DeviceTimeline device;
    device.device = d.index;
    device.budget_bytes = d.budget_bytes;
    device.failing = failing == device.device;
    const std::filesystem::path file = report.dir / d.events_file;
    std::ifstream in(file, std::ios::binary);
    if (!in) continue;
    try {
      device.timeline =
          read_timeline(in, file.string(), kDeviceBuckets, std::nullopt, std::nullopt);
    } catch (const Error&) {
      continue;  // the summed timeline is drawn; this device is left out
    }
    report.device_timelines.push_back(std::move(device));
  }
}

std::string device_timelines_html(const RunReport& run) {
  if (run.device_timelines.empty()) return "";
  std::string out =
      "<section id=\"devices\">\n<h2>Memory on each device</h2>\n<p class=\"caption\">One "
      "chart per device on the same axis (the sample number: every device is read at each "
      "tick), each against its own budget.</p>\n";
  for (const RunReport::DeviceTimeline& d : run.device_timelines) {
    out += fmt::format("<h3 id=\"gpu-{}\"{}>{}</h3>\n", d.device,
                       d.failing ? " class=\"failing\"" : "", xml_escape(heading(run, d)));
    out += timeline_svg(as_device(run, d));
  }
  return out + "</section>\n";
}

std::string device_timelines_md(const RunReport& run) {
  if (run.device_timelines.empty()) return "";
  std::string out = "## Memory on each device\n\n";
  for (const RunReport::DeviceTimeline& d : run.device_timelines)
    out += fmt::format("- {}{}\n", heading(run, d), d.failing ? " (marked)" : "");
  return out + "\nThe charts, one per device on the same axis, are in report.html.\n\n";
}

}  // namespace oomlab
