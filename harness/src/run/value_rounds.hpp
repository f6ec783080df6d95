// fit's search in rounds: `width` runs at once (one per GPU), each round's values chosen from
// what the rounds before it found, so that the same answer as search_values comes in fewer
// rounds. The rounds: the first `width` values of the doubling from `lo` (lo, 2·lo, 4·lo ...);
// once the model predicts, the prediction and the value over it (with four or more, the value
// under it and one more too); else, with a bracket, its inside cut into width + 1 equal parts;
// else the next doublings. A round's spare runs cut what is left of the range. Each round's trials
// are recorded in increasing value, whichever ends first, so that the result is the same run after
// run.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "run/searches.hpp"

namespace oomlab {

// The runs of one round, at each of `values` at once; the trials in the same order. Throws
// Interrupted on a stop.
using RoundAt = std::function<std::vector<Trial>(const std::vector<std::uint64_t>& values)>;

// The values of the next round, at most `width`, none already known: the search's plan as a pure
// function of what is known (the largest value that completed, the smallest that did not, the
// largest tried so far) and the prediction (none: no model, or not yet).
struct RoundState {
  std::uint64_t lo = 1;
  std::uint64_t hi = 1;
  std::optional<std::uint64_t> good;  // the largest value known to complete
  std::optional<std::uint64_t> bad;   // the smallest known to fail
  std::uint64_t tried_most = 0;       // the largest value run so far (0: none)
  std::optional<std::uint64_t> predicted;
};
[[nodiscard]] std::vector<std::uint64_t> next_round(const RoundState& state, unsigned width);

// search_values' answer, `width` runs a round (width 1: search_values itself, run for run).
// --confirm's reruns are one round each. `answer`, `beyond`, `stopped` and `timed_out` mean what
// they mean there.
[[nodiscard]] BoundaryResult search_values_in_rounds(const ValueSearch& search, unsigned width,
                                                     const RoundAt& run_round);

}  // namespace oomlab
