// A search that runs one trial at a time (search_budgets), run with `width` trials a round, one a
// GPU: the search is replayed from the runs made so far; where it needs a run not made yet, that
// run goes into the round, and so do the runs it would need next whichever way that one ends,
// and so on, breadth first, until the round holds `width`. Each round's runs go at once. The
// answer and the trials are the one-at-a-time search's own, run for run (its runs answer it in
// the order it asks; a position it asks twice, --confirm's reruns, is a run each time); the runs
// it did not need come back as `spare`. The first run (the top budget, position none) goes alone:
// what comes after it depends on what it measured, not only on whether it completed.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "run/searches.hpp"

namespace oomlab {

// The search one run at a time, over the runs `run_at` gives it; on_trial and predict free of
// side effects (it is replayed: a prediction is made once and kept by the caller).
using SequentialSearch = std::function<BoundaryResult(const TrialAt& run_at)>;
// The round's runs at once, the i-th at `at[i]` (none: the request as given); the trials in the
// same order. Throws Interrupted on a stop.
using SpeculativeRound =
    std::function<std::vector<Trial>(const std::vector<std::optional<std::uint64_t>>& at)>;

struct SpeculativeResult {
  BoundaryResult result;
  std::vector<Trial> spare;  // runs made beside the search's own that its answer did not need
  std::size_t rounds = 0;
};

// `on_trial`: each run as its round ends, in the round's order (the search's next run first).
[[nodiscard]] SpeculativeResult search_speculatively(
    const SequentialSearch& search, unsigned width, const SpeculativeRound& run_round,
    const std::function<void(const Trial&)>& on_trial = {});

}  // namespace oomlab
