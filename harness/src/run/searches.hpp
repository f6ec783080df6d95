// The two searches built on the one rule (run/boundary_search.hpp), each over runs that a caller
// makes: budgets (the frontier: the smallest budget at which a run completes) and values of a
// setting (fit: the largest value that completes under one budget). Both record every run as a
// Trial, print it as it ends, stop at a run that timed out (and fit at one that failed for another
// reason than memory), and confirm their answer on request.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "run/boundary_search.hpp"

namespace oomlab {

// One run: at `value` (a budget in bytes, a setting's value), or at the request as given (the
// frontier's top run: a percentage, `all`, a card). Throws Interrupted on a stop.
using TrialAt = std::function<Trial(std::optional<std::uint64_t> value)>;

// What the model says: the answer it predicts (none: it cannot say), and how, or why not.
struct Prediction {
  std::optional<std::uint64_t> value;
  std::string note;
  // No answer yet, but the run the model wants next, before the search's own next one (fit
  // exec: a second run far from the first, where two near values would not tell it the line).
  std::optional<std::uint64_t> next;
};

struct BudgetSearch {
  std::uint64_t resolution_bytes = 2ULL << 20U;
  unsigned confirm = 0;
  // A run that ended in error: a failure like an OOM (a program at a small budget can fail in its
  // own words), or the end of the search with its message.
  bool errors_stop = false;
  // From the top run: the whole process's frontier the model predicts, none without a model.
  std::function<Prediction(const Trial& top)> predict;
  // What the first probe adds to what the top run took, without a prediction: the page the driver
  // keeps back of what it calls free, for a program under a ballast.
  std::uint64_t probe_margin_bytes = 0;
  std::function<void(const Trial&)> on_trial;
};

// What a run that ran out of memory lacked, from its own OOM line: the request, plus the page
// the driver keeps back beyond it (measured on the H100: 18 MiB refused with 18.56 MiB free, 720
// MiB with 720.62 MiB), less what the device had free. None when the line did not say both.
[[nodiscard]] std::optional<std::uint64_t> shortfall_bytes(const Trial& failed);

// The smallest budget at which runs complete: the top run at the request, then from the
// prediction or what the top run took (plus the page the driver keeps back), steps doubling away,
// then bisection to the resolution (under one device page nothing is tried). A prediction that
// runs out of memory is re-aimed once by what its OOM line says it lacked (shortfall_bytes), when
// that is within kReaimTrust of it: the model's frontier is that near the measured one on every
// job tried, and a line that says more describes an allocator that took another path at that
// budget (on the H100, a growing job's prediction 6 MiB short failed a 512 MiB request with 34 MiB
// free; a re-aim by 480 MiB then took 14 runs to come back down).
inline constexpr long double kReaimTrust = 0.005L;
// `answer` is the frontier in bytes (never above the top run's budget), `beyond` the largest budget
// that failed.
[[nodiscard]] BoundaryResult search_budgets(const BudgetSearch& search, const TrialAt& run_at);

struct ValueSearch {
  std::uint64_t lo = 1;
  std::uint64_t hi = 1;
  unsigned confirm = 0;
  // After a run that completed, from the runs so far: the largest value the model says fits,
  // none until it can say (fit exec: three completed runs with snapshots, on a line); or, once,
  // the value it wants run next (Prediction::next), a step from which the search goes on.
  std::function<Prediction(const std::vector<Trial>& runs)> predict;
  std::function<void(const Trial&)> on_trial;
  // In rounds (search_values_in_rounds): a round about to run, its values, and the runs done.
  std::function<void(const std::vector<std::uint64_t>& values, std::size_t done)> on_round;
};

// The largest value at which runs complete (a larger one runs out of memory): `lo`, then values
// doubling from it (lo, 2·lo, 4·lo ... up to `hi`) until one fails, then bisection; a prediction,
// once the model has one, is gone to at once and verified (it completes, the next value fails).
// `answer` none: not even `lo` completes; `beyond` none: `hi` does. A run that fails for another
// reason than memory stops the search (`stopped`, its message).
[[nodiscard]] BoundaryResult search_values(const ValueSearch& search, const TrialAt& run_at);

// After --confirm's reruns (the trials from `searched` on): a rerun of `beyond` that completed
// where the search's own run of it failed, as r.not_monotonic. Nothing without `beyond`.
void note_not_monotonic(BoundaryResult& r, std::size_t searched,
                        std::optional<std::uint64_t> beyond);

}  // namespace oomlab
