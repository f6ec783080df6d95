#include "reports/run/program_ranks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reports/run/program_devices.hpp"

namespace oomlab {

std::string program_ranks_lines(const ProgramRun& p) {
  std::string out;
  auto it = std::back_inserter(out);
  if (p.device_runs.size() > 1) {
    for (const DeviceRun& d : p.device_runs) {
      fmt::format_to(it, "gpu {:<6} {}\n", d.index, device_figures(d));
    }
  }
  if (!p.failing_rank) return out;
  const FailingRank& f = *p.failing_rank;
  fmt::format_to(it, "rank       {}\n", f.verdict);
  for (const std::string& e : f.evidence)
    fmt::format_to(it, "           {}\n", e);
  for (const RankRun& r : p.ranks) {
    if (r.rank == f.rank || r.last_lines.empty()) continue;
    fmt::format_to(it, "rank {:<5} its last line: {}\n", r.rank, r.last_lines.back());
  }
  if (p.waiting_ended_after_s) {
    fmt::format_to(it,
                   "ended      the job was left waiting: no output and no device's memory moved "
                   "for {:g} s, so oomlab ended it\n",
                   *p.waiting_ended_after_s);
  }
  return out;
}

}  // namespace oomlab
