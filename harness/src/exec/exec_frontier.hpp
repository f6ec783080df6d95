// `oomlab frontier exec`: the smallest budget at which a program exits 0, by search on fresh
// runs. One run at the top budget must complete; what it took of the budget (plus the page the
// driver keeps back) is tried next, then up to three steps doubling away from it, then bisection
// to the resolution: a program needs what it took, as a rule, and is then found in three or four
// runs of ~10 s each, not fifteen. Probes like any other, so the answer cannot change, only the
// number of runs. --confirm reruns the frontier and the budget under it: programs are not always
// deterministic, and the search should say so rather than hide it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/exec_run.hpp"

namespace oomlab {

struct ExecTrial {
  std::uint64_t budget_bytes = 0;
  Outcome outcome = Outcome::completed;
  std::optional<Cause> cause;
  std::string oom_line;          // the program's, or why it failed otherwise
  std::uint64_t peak_bytes = 0;  // the program's sampled peak (NVML)
  std::uint64_t used_bytes = 0;  // out of the budget at the most
  int exit_code = -1;
  double seconds = 0.0;
  bool confirming = false;  // a --confirm rerun
};

struct ExecFrontier {
  std::uint64_t upper_bytes = 0;
  std::optional<std::uint64_t> frontier_bytes;
  std::uint64_t failing_bytes = 0;
  bool timed_out = false;
  std::vector<ExecTrial> trials;
  std::optional<RunResult> top;  // the first run's record (at the upper budget)
  unsigned confirm_runs = 0;     // each, at the frontier and under it
  unsigned frontier_passed = 0;
  unsigned below_passed = 0;
};

// `base.budget` is the upper bound; base.timeout limits each trial. Throws Interrupted on a stop.
[[nodiscard]] ExecFrontier find_exec_frontier(
    const ExecConfig& base, ExecDevices& devices, std::uint64_t resolution_bytes, unsigned confirm,
    const std::function<void(const ExecTrial&)>& on_trial);

}  // namespace oomlab
