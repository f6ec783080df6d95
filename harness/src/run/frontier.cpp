#include "run/frontier.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {

class Search {
 public:
  Search(const RunConfig& config, const std::function<void(const FrontierTrial&)>& on_trial)
      : config_(config), on_trial_(on_trial) {
    config_.events_csv.clear();
    config_.progress = nullptr;
  }

  // Whether the run completes at `budget`; records the trial.
  bool completes(const BudgetRequest& budget, FrontierResult& result) {
    if (result.timed_out) return false;  // the search stopped: no more runs
    config_.budget = budget;
    const RunResult run = run_scenario(config_);
    config_.notice = nullptr;  // the first run's notices are enough
    if (run.outcome == Outcome::interrupted) throw Interrupted();
    if (run.outcome == Outcome::error) {
      throw Error(ErrorKind::device, fmt::format("the run at a budget of {} ended in {}: {}",
                                                 format_bytes(run.budget_bytes),
                                                 to_string(run.outcome), run.error_message));
    }
    FrontierTrial trial{
        .budget_bytes = run.budget_bytes, .outcome = run.outcome, .duration_ms = run.duration_ms};
    if (run.oom) trial.cause = run.oom->diagnosis.cause;
    result.trials.push_back(trial);
    result.allocator = run.allocator;
    result.allocator_options = run.allocator_options;  // as the run used them
    result.simulated = run.simulated;
    for (const auto& [name, value] : run.metrics) {
      if (name == "trace_stops_at_failure") result.lower_bound = value != 0.0;
    }
    if (on_trial_) on_trial_(trial);
    result.timed_out = run.outcome == Outcome::timeout;
    peak_reserved_bytes_ = run.peak_reserved_bytes;
    return run.outcome == Outcome::completed;
  }
  // What the allocator held at its most in the last run: a run that completed needed no more.
  [[nodiscard]] std::uint64_t peak_reserved_bytes() const { return peak_reserved_bytes_; }

 private:
  RunConfig config_;
  std::uint64_t peak_reserved_bytes_ = 0;
  const std::function<void(const FrontierTrial&)>& on_trial_;
};

}  // namespace

FrontierResult find_frontier(const RunConfig& config, std::uint64_t resolution_bytes,
                             const std::function<void(const FrontierTrial&)>& on_trial) {
  FrontierResult result;
  Search search(config, on_trial);
  const bool upper_completes = search.completes(config.budget, result);
  result.upper_bytes = result.trials.back().budget_bytes;
  if (!upper_completes) {
    result.failing_bytes = result.upper_bytes;
    return result;
  }
  // Bisect in whole units of the resolution: `good` completes, `bad` does not (0 never does).
  std::uint64_t good = ceil_div(result.upper_bytes, resolution_bytes);
  // Budgets under one device page are refused as usage, so the search never tries them.
  std::uint64_t bad = ceil_div(kDevicePageBytes, resolution_bytes) - 1;
  // First the most the allocator held at the top budget: it completes there as a rule, and the
  // search below it is shorter (a 10M-row trace: 10 runs instead of 16). A probe like any other:
  // if it fails, the search goes on above it.
  std::uint64_t next = ceil_div(search.peak_reserved_bytes(), resolution_bytes);
  while (good - bad > 1) {
    const std::uint64_t mid = next > bad && next < good ? next : bad + (good - bad) / 2;
    next = 0;
    if (search.completes(
            {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{mid * resolution_bytes}}, result)) {
      good = mid;
    } else {
      bad = mid;
    }
  }
  result.frontier_bytes = std::min(good * resolution_bytes, result.upper_bytes);
  result.failing_bytes = bad * resolution_bytes;
  if (result.timed_out) result.frontier_bytes.reset();  // that budget's answer is unknown
  return result;
}

}  // namespace oomlab
