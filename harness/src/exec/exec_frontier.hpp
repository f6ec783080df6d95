// `oomlab frontier exec`: the smallest budget at which a program exits 0, by the one search on
// fresh runs (run/searches.hpp). One run at the top budget must complete; the first probe is the
// model's prediction when there is one, else what the top run took of the budget plus the page the
// driver keeps back (most programs need what they took); steps then double away from it until the
// answer changes, then bisect: never a bisection from zero. --confirm reruns the frontier and the
// budget under it: programs are not always deterministic, and the search should say so rather
// than hide it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "exec/exec_run.hpp"
#include "run/searches.hpp"

namespace oomlab {

// answer: the frontier; beyond: the largest budget that did not complete.
struct ExecFrontier : BoundaryResult {
  std::optional<RunResult> top;  // the first run's record (at the upper budget)
  [[nodiscard]] std::uint64_t upper_bytes() const {
    return trials.empty() ? 0 : trials.front().budget_bytes;
  }
};

struct ExecSearch {
  std::uint64_t resolution_bytes = 2ULL << 20U;
  unsigned confirm = 0;
  std::function<void(const Trial&)> on_trial;
  // The whole process's frontier predicted from the top run; unset: none.
  std::function<Prediction(RunResult& top)> predict;
};

// `base.budget` is the upper bound; base.timeout limits each trial. Throws Interrupted on a stop.
[[nodiscard]] ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                              const ExecSearch& search);

// A program's run as a trial of a search (its value: the budget it ran at).
[[nodiscard]] Trial program_trial(const RunResult& run);

}  // namespace oomlab
