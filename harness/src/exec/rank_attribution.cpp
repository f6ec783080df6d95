#include "exec/rank_attribution.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "oomlab/units.hpp"

namespace oomlab {

namespace {

double ms(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// The device position (the program's numbering) rank `rank` ran on.
std::optional<std::size_t> position_of(const RankEvidence& ev, int rank) {
  const auto& ranks = ev.watch.ranks();
  const auto it = ranks.find(rank);
  int visible = rank;
  if (it != ranks.end() && it->second.oom_device) {
    visible = *it->second.oom_device;
  } else if (it != ranks.end() && it->second.local_rank) {
    visible = *it->second.local_rank;
  }
  if (visible < 0 || static_cast<std::size_t>(visible) >= ev.device_indices.size())
    return std::nullopt;
  return static_cast<std::size_t>(visible);
}

std::string gpu_name(const RankEvidence& ev, std::optional<std::size_t> position) {
  return position ? fmt::format("GPU {}", ev.device_indices[*position]) : "its GPU unknown";
}

// The ranks there are: those marked, those a launcher reported, one per device.
std::set<int> known_ranks(const RankEvidence& ev) {
  std::set<int> ranks;
  for (const auto& [rank, output] : ev.watch.ranks())
    ranks.insert(rank);
  for (const ExecWatch::LauncherSeen& seen : ev.watch.launchers()) {
    for (const LauncherFailure& f : seen.report->failures())
      ranks.insert(f.rank);
  }
  if (ev.device_indices.size() > 1) {
    for (std::size_t i = 0; i < ev.device_indices.size(); ++i)
      ranks.insert(static_cast<int>(i));
  }
  return ranks;
}

// The device that filled its budget first, of those that did.
std::optional<std::size_t> first_full(const RankEvidence& ev) {
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < ev.devices.size(); ++i) {
    if (!ev.devices[i].full_ns) continue;
    if (!first || *ev.devices[i].full_ns < *ev.devices[*first].full_ns) first = i;
  }
  return first;
}

// The launcher whose words tell the rank marks: the first registered, else the engine's own.
const Launcher& launcher_words(const RankEvidence& ev) {
  static const Launcher kNone{.name = "a launcher",
                              .global_mark = "a global rank's mark",
                              .local_mark = "a local rank's mark"};
  return ev.watch.launchers().empty() ? kNone : *ev.watch.launchers().front().launcher;
}

// Who ran out first, and the evidence that names it; none when nothing does.
std::optional<FailingRank> decide(const RankEvidence& ev) {
  const std::optional<OomSighting>& seen = ev.watch.first_oom();
  const LauncherFailure* root = ev.watch.root_cause().second;
  const Launcher& launcher = launcher_words(ev);
  FailingRank f;
  if (seen && (seen->rank || seen->local_rank)) {
    f.rank = seen->rank.value_or(*seen->local_rank);
    f.evidence.push_back(seen->rank ? fmt::format("its OOM line came marked [rank{}]: ({})", f.rank,
                                                  launcher.global_mark)
                                    : fmt::format("its OOM line came marked as local rank {} ({})",
                                                  *seen->local_rank, launcher.local_mark));
  } else if (seen && seen->device) {
    f.rank = *seen->device;
    f.evidence.push_back(
        fmt::format("its OOM line names GPU {} of the program's devices (local rank {} under {})",
                    *seen->device, *seen->device, launcher.name));
  } else if (root != nullptr) {
    f.rank = root->rank;
  } else if (const auto full = first_full(ev); full && ev.failed) {
    f.rank = static_cast<int>(*full);
    f.t_ms = ms(*ev.devices[*full].full_ns);
    f.evidence.push_back(fmt::format("no OOM line named a rank; GPU {} filled its budget first",
                                     ev.device_indices[*full]));
  } else {
    return std::nullopt;
  }
  if (seen) f.t_ms = ms(seen->t_ns);
  const auto& ranks = ev.watch.ranks();
  if (const auto it = ranks.find(f.rank); it != ranks.end()) f.local_rank = it->second.local_rank;
  if (seen && seen->local_rank) f.local_rank = seen->local_rank;
  return f;
}

void add_launcher_evidence(const RankEvidence& ev, FailingRank& f) {
  const auto [launcher, root] = ev.watch.root_cause();
  if (root == nullptr) return;
  std::string text =
      root->rank == f.rank
          ? fmt::format("{}'s root cause (first observed failure) names rank {}", launcher->name,
                        root->rank)
          : fmt::format("{}'s root cause names rank {} (the first process it saw end)",
                        launcher->name, root->rank);
  if (root->exit_code) text += fmt::format(", exit code {}", *root->exit_code);
  if (!root->error_file.empty() && launcher->error_message != nullptr) {
    if (const auto message = launcher->error_message(root->error_file)) {
      const bool oom = message->find("out of memory") != std::string::npos ||
                       message->find("OutOfMemoryError") != std::string::npos;
      text += fmt::format("; its error file ({}) {}", root->error_file,
                          oom ? "holds the OOM" : "holds: " + message->substr(0, 120));
    }
  }
  f.evidence.push_back(std::move(text));
  if (!f.local_rank && root->rank == f.rank) f.local_rank = root->local_rank;
}

void add_device_evidence(const RankEvidence& ev, std::optional<std::size_t> position,
                         FailingRank& f) {
  if (!position || *position >= ev.devices.size()) return;
  const DeviceTimeline& d = ev.devices[*position];
  const int index = ev.device_indices[*position];
  if (d.full_ns) {
    f.evidence.push_back(fmt::format("GPU {}'s memory reached its budget ({} of {}) at {:.2f} s",
                                     index, format_bytes(d.peak_used_bytes),
                                     format_bytes(d.budget_bytes), ms(*d.full_ns) / 1e3));
  } else {
    f.evidence.push_back(fmt::format("GPU {}'s memory peaked at {} of its {} budget", index,
                                     format_bytes(d.peak_used_bytes),
                                     format_bytes(d.budget_bytes)));
  }
}

RankRun rank_run(const RankEvidence& ev, int rank) {
  RankRun r{.rank = rank};
  const auto position = position_of(ev, rank);
  if (position) r.device = ev.device_indices[*position];
  const auto& ranks = ev.watch.ranks();
  if (const auto it = ranks.find(rank); it != ranks.end()) {
    r.local_rank = it->second.local_rank;
    r.last_lines.assign(it->second.last_lines.begin(), it->second.last_lines.end());
    r.ran_out = it->second.oom_ns.has_value();
    if (it->second.oom_ns) r.oom_ms = ms(*it->second.oom_ns);
  }
  if (position && *position < ev.devices.size() && ev.devices[*position].at_oom_bytes)
    r.memory_rose_after_oom = ev.devices[*position].rose_after_oom;
  return r;
}

std::string verdict(const RankEvidence& ev, const FailingRank& f, const std::vector<RankRun>& all) {
  std::vector<int> out_after;
  std::vector<int> went_on;
  for (const RankRun& r : all) {
    if (r.rank == f.rank) continue;
    if (r.ran_out) {
      out_after.push_back(r.rank);
    } else if (r.memory_rose_after_oom.value_or(false)) {
      went_on.push_back(r.rank);
    }
  }
  const auto position = position_of(ev, f.rank);
  std::string text = fmt::format("rank {} ({}) ran out of memory", f.rank, gpu_name(ev, position));
  if (f.t_ms) text += fmt::format(" at {:.2f} s", *f.t_ms / 1e3);
  if (!f.waiting.empty())
    text += fmt::format("; ranks {} were left waiting", fmt::join(f.waiting, ", "));
  if (!out_after.empty())
    text += fmt::format("; ranks {} ran out after it", fmt::join(out_after, ", "));
  if (!went_on.empty())
    text +=
        fmt::format("; ranks {} went on (their memory grew after it)", fmt::join(went_on, ", "));
  return text;
}

}  // namespace

void attribute_ranks(const RankEvidence& ev, ProgramRun& p) {
  if (!ev.watch.distributed()) return;
  if (!ev.failed && !ev.watch.first_oom()) return;
  for (const int rank : known_ranks(ev))
    p.ranks.push_back(rank_run(ev, rank));
  std::optional<FailingRank> f = decide(ev);
  if (!f) return;
  const auto position = position_of(ev, f->rank);
  if (position) f->device = ev.device_indices[*position];
  add_launcher_evidence(ev, *f);
  add_device_evidence(ev, position, *f);
  for (const RankRun& r : p.ranks) {
    if (r.rank != f->rank && !r.ran_out && !r.memory_rose_after_oom.value_or(false))
      f->waiting.push_back(r.rank);
  }
  f->verdict = verdict(ev, *f, p.ranks);
  p.failing_rank = std::move(f);
}

std::optional<std::size_t> failing_device(const ProgramRun& p) {
  const std::vector<DeviceRun>& all = p.device_runs;
  if (all.size() < 2) return std::nullopt;
  if (p.failing_rank && p.failing_rank->device) {
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (all[i].index == *p.failing_rank->device) return i;
    }
  }
  const auto left = [](const DeviceRun& d) {
    return d.budget_bytes > d.peak_used_bytes ? d.budget_bytes - d.peak_used_bytes : 0;
  };
  std::size_t closest = 0;
  for (std::size_t i = 1; i < all.size(); ++i) {
    if (left(all[i]) < left(all[closest])) closest = i;
  }
  return closest;
}

}  // namespace oomlab
