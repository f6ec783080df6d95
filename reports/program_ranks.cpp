#include "reports/program_ranks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "oomlab/units.hpp"
#include "reports/json_values.hpp"

namespace oomlab {

namespace {

using json = nlohmann::ordered_json;

json device_json(const DeviceRun& d) {
  return {{"device", d.index},
          {"uuid", d.uuid},
          {"budget_bytes", d.budget_bytes},
          {"ballast_bytes", d.ballast_bytes},
          {"peak_bytes", d.peak_bytes},
          {"peak_used_bytes", d.peak_used_bytes},
          {"first_bytes", d.first_bytes},
          {"full_at_ms", or_null(d.full_ms)},
          {"events", d.events_file.empty() ? json(nullptr) : json(d.events_file)}};
}

json rank_json(const RankRun& r) {
  return {{"rank", r.rank},
          {"local_rank", or_null(r.local_rank)},
          {"device", or_null(r.device)},
          {"ran_out", r.ran_out},
          {"oom_at_ms", or_null(r.oom_ms)},
          {"memory_rose_after_oom", or_null(r.memory_rose_after_oom)},
          {"last_lines", r.last_lines}};
}

json failing_json(const FailingRank& f) {
  return {{"rank", f.rank},
          {"local_rank", or_null(f.local_rank)},
          {"device", or_null(f.device)},
          {"t_ms", or_null(f.t_ms)},
          {"waiting", f.waiting},
          {"evidence", f.evidence},
          {"verdict", f.verdict}};
}

}  // namespace

void add_program_ranks_json(json& program, const ProgramRun& p) {
  json devices = json::array();
  for (const DeviceRun& d : p.device_runs)
    devices.push_back(device_json(d));
  json ranks = json::array();
  for (const RankRun& r : p.ranks)
    ranks.push_back(rank_json(r));
  program["device_usage"] = std::move(devices);
  program["ranks"] = std::move(ranks);
  program["failing_rank"] = p.failing_rank ? failing_json(*p.failing_rank) : json(nullptr);
  program["waiting_ended_after_s"] = or_null(p.waiting_ended_after_s);
}

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
