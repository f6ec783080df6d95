// The budget frontier: the smallest budget at which a run completes (no OOM), found by bisection
// on fresh runs to a resolution of 2 MiB. On the sim this is card sizing without a GPU ("would
// this job fit on a 24 GiB card?").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "run/runner.hpp"

namespace oomlab {

struct FrontierTrial {
  std::uint64_t budget_bytes = 0;
  Outcome outcome = Outcome::completed;
  std::optional<Cause> cause;
  double duration_ms = 0.0;
};

struct FrontierResult {
  std::uint64_t upper_bytes = 0;                // the largest budget tried (the request, resolved)
  std::optional<std::uint64_t> frontier_bytes;  // none: not even the upper budget completes
  std::uint64_t failing_bytes = 0;              // the largest budget that did not complete
  std::vector<FrontierTrial> trials;
  bool timed_out = false;  // the last trial passed config.timeout: the search stopped there
  std::string allocator;
  Params allocator_options;  // as the runs used them (a snapshot's settings resolved in)
  bool simulated = false;
  // The replayed trace stops at the program's own failure: what it would have needed after it is
  // unknown, so the frontier is a lower bound for the whole job.
  bool lower_bound = false;
};

// `config.budget` is the upper bound; `config.timeout` limits each trial, and a trial that passes
// it ends the search (`timed_out`: no frontier, since that budget's answer is unknown). Runs
// write no events. Throws what run_scenario throws for a bad request; a trial that ends in error
// stops the search (Error(device) with its message).
[[nodiscard]] FrontierResult find_frontier(
    const RunConfig& config, std::uint64_t resolution_bytes,
    const std::function<void(const FrontierTrial&)>& on_trial);

}  // namespace oomlab
