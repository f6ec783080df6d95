#include "run/frontier.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"

namespace oomlab {

Trial scenario_trial(const RunResult& run) {
  Trial trial{.value = run.budget_bytes,
              .budget_bytes = run.budget_bytes,
              .outcome = run.outcome,
              .message = run.error_message,
              .peak_bytes = run.peak_live_bytes,
              .used_bytes = run.peak_reserved_bytes,
              .seconds = run.duration_ms / 1e3};
  if (run.oom) {
    trial.cause = run.oom->diagnosis.cause;
    trial.request_bytes = run.oom->request_bytes;
  }
  return trial;
}

FrontierResult find_frontier(const RunConfig& base, std::uint64_t resolution_bytes,
                             const std::function<void(const Trial&)>& on_trial) {
  FrontierResult result;
  RunConfig config = base;
  config.events_csv.clear();
  config.progress = nullptr;
  const TrialAt run_at = [&](std::optional<std::uint64_t> budget) {
    if (budget) config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    const RunResult run = run_scenario(config);
    config.notice = nullptr;                            // the first run's notices are enough
    if (!config.trace) config.trace = run.input_trace;  // read once: the trials adopt it
    if (run.outcome == Outcome::error) {
      throw Error(ErrorKind::device, fmt::format("the run at a budget of {} ended in {}: {}",
                                                 format_bytes(run.budget_bytes),
                                                 to_string(run.outcome), run.error_message));
    }
    result.allocator = run.allocator;
    result.backend = run.backend;
    result.allocator_options = run.allocator_options;  // as the run used them
    result.simulated = run.simulated;
    result.device = run.device;
    for (const auto& [name, value] : run.metrics) {
      if (name == "trace_stops_at_failure") result.lower_bound = value != 0.0;
    }
    if (run.input_trace && trace::stops_short(*run.input_trace)) {
      result.lower_bound = true;
      result.lower_bound_why = trace::stops_short_words(*run.input_trace);
    }
    return scenario_trial(run);
  };
  // A completed run needed no more than the allocator held at its most: that is probed first (a
  // 10M-row trace: a few runs instead of 16).
  static_cast<BoundaryResult&>(result) =
      search_budgets({.resolution_bytes = resolution_bytes, .on_trial = on_trial}, run_at);
  return result;
}

}  // namespace oomlab
