#include "exec/exec_frontier.hpp"

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

class Trials {
 public:
  Trials(const ExecConfig& base, ExecDevices& devices,
         const std::function<void(const ExecTrial&)>& on_trial)
      : config_(base), devices_(devices), on_trial_(on_trial) {
    config_.folder.clear();  // trials keep no files; the table holds what matters
    config_.out_fd = -1;
    config_.err_fd = -1;
  }

  // Whether the program exits 0 at `budget` (none: the base's own request).
  bool completes(std::optional<std::uint64_t> budget, ExecFrontier& result, bool confirming) {
    if (budget) config_.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    RunResult run = run_exec(config_, devices_);
    config_.notice = nullptr;  // the first run's notices are enough
    if (run.outcome == Outcome::interrupted) throw Interrupted();
    ExecTrial trial{.budget_bytes = run.budget_bytes,
                    .outcome = run.outcome,
                    .peak_bytes = run.peak_live_bytes,
                    .used_bytes = run.peak_reserved_bytes,
                    .exit_code = run.program->exit_code,
                    .seconds = run.duration_ms / 1e3,
                    .confirming = confirming};
    if (run.oom) {
      trial.cause = run.oom->diagnosis.cause;
      if (run.oom->program) trial.oom_line = run.oom->program->line;
    } else if (run.outcome != Outcome::completed) {
      trial.oom_line = run.error_message;
    }
    result.trials.push_back(trial);
    if (on_trial_) on_trial_(trial);
    result.timed_out = result.timed_out || run.outcome == Outcome::timeout;
    if (!result.top) result.top = std::move(run);
    return trial.outcome == Outcome::completed;
  }

 private:
  ExecConfig config_;
  ExecDevices& devices_;
  const std::function<void(const ExecTrial&)>& on_trial_;
};

// From `probe`, steps doubling away from it (down when it completes, up when not) until the
// answer changes: `good` and `bad` close in on the frontier in a few runs when it is near. Three
// steps at most (7 units away): a frontier further off is left to bisection, which costs then
// four runs more than bisection alone.
template <typename Runs>
void gallop(std::uint64_t probe, std::uint64_t& good, std::uint64_t& bad, const Runs& runs,
            const bool& stopped) {
  const bool fits = runs(probe);
  (fits ? good : bad) = probe;
  for (std::uint64_t step = 1; step <= 4 && good - bad > 1 && !stopped; step *= 2) {
    const std::uint64_t next =
        fits ? (good - bad > step ? good - step : bad) : std::min(bad + step, good);
    if (next <= bad || next >= good) return;
    if (runs(next) != fits) {
      (fits ? bad : good) = next;
      return;
    }
    (fits ? good : bad) = next;
  }
}

}  // namespace

ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                std::uint64_t resolution, unsigned confirm,
                                const std::function<void(const ExecTrial&)>& on_trial) {
  ExecFrontier result;
  Trials trials(base, devices, on_trial);
  const bool top_completes = trials.completes(std::nullopt, result, false);
  result.upper_bytes = result.trials.front().budget_bytes;
  if (!top_completes) {
    result.failing_bytes = result.upper_bytes;
    return result;
  }
  // Units of the resolution: `good` completes, `bad` does not (under one device page is never
  // tried). Most programs need what they took at the top, and the driver keeps one page of what
  // it calls free: that is tried first, then steps doubling away from it until the answer
  // changes, then bisection between (a program whose allocator adapts to less memory is found
  // too, a few runs later).
  std::uint64_t good = ceil_div(result.upper_bytes, resolution);
  std::uint64_t bad = ceil_div(kDevicePageBytes, resolution) - 1;
  const std::uint64_t probe =
      ceil_div(result.trials.front().used_bytes + kDevicePageBytes, resolution);
  const auto runs = [&](std::uint64_t units) {
    return trials.completes(std::min(units * resolution, result.upper_bytes), result, false);
  };
  if (probe > bad && probe < good) gallop(probe, good, bad, runs, result.timed_out);
  while (good - bad > 1 && !result.timed_out) {
    const std::uint64_t mid = bad + (good - bad) / 2;
    (runs(mid) ? good : bad) = mid;
  }
  if (result.timed_out) return result;  // that budget's answer is unknown
  result.frontier_bytes = std::min(good * resolution, result.upper_bytes);
  result.failing_bytes = bad * resolution;
  result.confirm_runs = confirm;
  for (unsigned i = 0; i < confirm && !result.timed_out; ++i) {
    result.frontier_passed += trials.completes(*result.frontier_bytes, result, true) ? 1 : 0;
    if (result.failing_bytes >= kDevicePageBytes)
      result.below_passed += trials.completes(result.failing_bytes, result, true) ? 1 : 0;
  }
  return result;
}

}  // namespace oomlab
