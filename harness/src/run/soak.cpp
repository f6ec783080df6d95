#include "run/soak.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace oomlab {

std::uint64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
  }
  return 0;
}

std::size_t SoakResult::ooms() const {
  return static_cast<std::size_t>(std::count_if(
      cycles.begin(), cycles.end(), [](const SoakCycle& c) { return c.outcome == Outcome::oom; }));
}

std::int64_t SoakResult::rss_growth_bytes() const {
  if (cycles.empty()) return 0;
  const std::size_t settled = std::min(cycles.size() - 1, cycles.size() / 10);
  return static_cast<std::int64_t>(cycles.back().rss_bytes) -
         static_cast<std::int64_t>(cycles[settled].rss_bytes);
}

std::int64_t SoakResult::worst_device_shortfall_bytes() const {
  std::int64_t worst = 0;
  for (const SoakCycle& c : cycles) {
    // With other processes on the device a shortfall may be theirs (the run says so).
    if (c.cleanup && c.cleanup->not_counted.empty())
      worst = std::max(worst, c.cleanup->difference());
  }
  return worst;
}

std::size_t SoakResult::unbalanced_cycles() const {
  return static_cast<std::size_t>(std::count_if(
      cycles.begin(), cycles.end(), [](const SoakCycle& c) { return c.allocations != c.frees; }));
}

SoakResult soak(const RunConfig& config, std::uint32_t cycles,
                const std::function<void(std::uint32_t, const SoakCycle&)>& on_cycle) {
  SoakResult soak;
  // The soak's own record, made whole now: its pages would otherwise count as growth as it fills.
  soak.cycles.resize(cycles);
  soak.rss_before_bytes = resident_bytes();
  // events.csv for the first cycle only: what writing it leaves in the process (the writer
  // thread's heap) is then there before the figures settle, not a jump at the end.
  RunConfig quiet = config;
  quiet.events_csv.clear();
  // The model `auto` became for the trace is said by the first cycle alone.
  quiet.allocator_notice.clear();
  std::string events_error;  // the first cycle's: the record the last cycle's summary carries
  for (std::uint32_t i = 0; i < cycles; ++i) {
    RunResult r = run_scenario(i == 0 ? config : quiet);
    if (!quiet.trace) quiet.trace = r.input_trace;  // the cycles after the first adopt its trace
    if (i == 0) events_error = r.events_error;
    r.events_error = events_error;
    SoakCycle c{.outcome = r.outcome,
                .oom_live_bytes = r.oom ? r.oom->live_bytes : 0,
                .events = r.events,
                .allocations = r.allocations,
                .frees = r.frees,
                .rss_bytes = 0,
                .cleanup = r.cleanup,
                .duration_ms = r.duration_ms};
    const bool stop = r.outcome == Outcome::interrupted || r.outcome == Outcome::timeout;
    soak.last = std::move(r);  // the previous cycle's record goes before the reading below
    c.rss_bytes = resident_bytes();
    soak.cycles[i] = c;
    if (on_cycle) on_cycle(i, c);
    if (stop) {
      soak.stopped = i + 1 < cycles;
      soak.cycles.resize(i + 1);
      break;
    }
  }
  return soak;
}

}  // namespace oomlab
