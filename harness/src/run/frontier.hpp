// The budget frontier: the smallest budget at which a run completes (no OOM), found on fresh runs
// to a resolution of 2 MiB by the one search (run/searches.hpp). On the sim this is card sizing
// without a GPU ("would this job fit on a 24 GiB card?").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "run/runner.hpp"
#include "run/searches.hpp"

namespace oomlab {

// answer: the frontier (none: not even the top budget completes); beyond: the largest budget
// that did not complete.
struct FrontierResult : BoundaryResult {
  std::string allocator;
  BackendKind backend = BackendKind::automatic;  // `allocator`, typed
  Params allocator_options;  // as the runs used them (a snapshot's settings resolved in)
  bool simulated = false;
  // The replayed trace stops short (at the program's own failure, or where its run record says it
  // died): what it would have needed after it is unknown, so the frontier is a lower bound.
  bool lower_bound = false;
  std::string lower_bound_why;        // "the trace stops at the program's OOM", ...
  std::optional<DeviceFacts> device;  // the runs' device; none on the sim
  [[nodiscard]] std::uint64_t upper_bytes() const {
    return trials.empty() ? 0 : trials.front().budget_bytes;
  }
};

// `config.budget` is the upper bound; `config.timeout` limits each trial, and a trial that passes
// it ends the search (`timed_out`: no frontier, since that budget's answer is unknown). Runs
// write no events. Throws what run_scenario throws for a bad request; a trial that ends in error
// stops the search (Error(device) with its message).
[[nodiscard]] FrontierResult find_frontier(const RunConfig& base, std::uint64_t resolution_bytes,
                                           const std::function<void(const Trial&)>& on_trial);

// A scenario's run as a trial of a search (its value: the budget it ran at).
[[nodiscard]] Trial scenario_trial(const RunResult& run);

}  // namespace oomlab
