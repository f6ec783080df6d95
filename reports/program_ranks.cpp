#include "reports/program_ranks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oomlab/units.hpp"

namespace oomlab {

std::string program_ranks_lines(const ProgramRun& p) {
  std::string out;
  auto it = std::back_inserter(out);
  if (p.device_runs.size() > 1) {
    for (const DeviceRun& d : p.device_runs) {
      fmt::format_to(it, "gpu {:<6} budget {} · peak {} · {} of it taken{}\n", d.index,
                     format_bytes(d.budget_bytes), format_bytes(d.peak_bytes),
                     format_bytes(d.peak_used_bytes),
                     d.full_ms ? fmt::format(" · full at {:.2f} s", *d.full_ms / 1e3) : "");
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
