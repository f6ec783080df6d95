#include "run/fit.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include "run/frontier.hpp"

namespace oomlab {

namespace {

// The search's own run at `value` (a --confirm rerun only when the search made none).
const Trial* run_at(const FitResult& r, std::optional<std::uint64_t> value, bool completed) {
  if (!value) return nullptr;
  const auto matches = [&](const Trial& t) {
    return t.value == *value && (t.outcome == Outcome::completed) == completed;
  };
  const auto searched = std::find_if(r.trials.begin(), r.trials.end(), [&](const Trial& t) {
    return t.role != TrialRole::confirm && matches(t);
  });
  if (searched != r.trials.end()) return &*searched;
  const auto any = std::find_if(r.trials.begin(), r.trials.end(), matches);
  return any == r.trials.end() ? nullptr : &*any;
}

}  // namespace

const Trial* FitResult::at_answer() const {
  return run_at(*this, answer, true);
}

const Trial* FitResult::at_beyond() const {
  return run_at(*this, beyond, false);
}

namespace {

// The search over values, each trial a fresh run of `config` as `set_value` sets it.
FitResult fit_runs(const RunConfig& base, const FitSearch& search,
                   const std::function<void(RunConfig&, std::uint64_t)>& set_value) {
  FitResult result;
  result.range = search.range;
  RunConfig config = base;
  config.events_csv.clear();
  config.progress = nullptr;
  bool first = true;
  const TrialAt trial_at = [&](std::optional<std::uint64_t> value) {
    set_value(config, value.value_or(0));
    const RunResult run = run_scenario(config);
    config.notice = nullptr;  // the first run's notices are enough
    if (first) {
      first = false;
      result.budget_bytes = run.budget_bytes;
      result.allocator = run.allocator;
      result.backend = run.backend;
      result.allocator_options = run.allocator_options;
      result.simulated = run.simulated;
      result.environment = run.environment;
      result.device = run.device;
    }
    Trial trial = scenario_trial(run);
    trial.value = value.value_or(0);
    return trial;
  };
  static_cast<BoundaryResult&>(result) = search_values({.lo = search.range.lo,
                                                        .hi = search.range.hi,
                                                        .confirm = search.confirm,
                                                        .on_trial = search.on_trial},
                                                       trial_at);
  return result;
}

}  // namespace

FitResult fit_scenario(const RunConfig& base, const FitSearch& search) {
  return fit_runs(base, search, [&](RunConfig& config, std::uint64_t value) {
    config.params.set(search.range.name, static_cast<std::int64_t>(value));
  });
}

FitResult fit_series(const RunConfig& base, const trace::TraceSeries& series,
                     const FitSearch& search, trace::TraceSeries::Rule rule) {
  FitResult result = fit_runs(base, search, [&](RunConfig& config, std::uint64_t value) {
    config.trace = std::make_shared<const trace::Trace>(series.at(value, rule));
  });
  for (const trace::SeriesPoint& point : series.points())
    result.made_from.push_back(point.value);
  result.series_fit = series.fit();
  result.made_files = trace::source_files(series);
  result.made_rule = rule;
  result.predicted = result.answer;
  return result;
}

}  // namespace oomlab
