// `oomlab fit SCENARIO --range NAME=LO..HI`: the largest value of one whole-number parameter of a
// scenario or a replay (steps, a batch) at which it completes under the budget, on any allocator,
// by the one search (run/searches.hpp): "how many steps of that leak does a 1 GiB card survive?"
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "run/runner.hpp"
#include "run/searches.hpp"
#include "trace/trace_series.hpp"

namespace oomlab {

// The setting searched: its name and the values that may be tried, both ends included.
struct FitRange {
  std::string name;
  std::uint64_t lo = 1;
  std::uint64_t hi = 1;
};

// answer: the largest value that completes (none: not even lo); beyond: the one above it, which
// did not (none: hi completes). What the runs were, for the answer's words and its JSON.
struct FitResult : BoundaryResult {
  FitRange range;
  std::uint64_t budget_bytes = 0;  // the first run's, resolved
  std::string allocator;
  BackendKind backend = BackendKind::automatic;  // `allocator`, typed
  Params allocator_options;
  bool simulated = false;
  // Each trial replayed the trace made at its value from a program's traces at these values
  // (fit_series), with what their alignment found: the answer is predicted, not run. Empty: each
  // trial was a run.
  std::vector<std::uint64_t> made_from;
  trace::SeriesFit series_fit;
  std::vector<std::filesystem::path> made_files;  // the traces read, by value
  trace::TraceSeries::Rule made_rule = trace::TraceSeries::Rule::lines;
  Environment environment;
  std::optional<DeviceFacts> device;
  // What the budget's card holds beside the allocator, in no trial's peak (an allocator's own
  // outside= option: its limit is a share of the whole card, its memory comes from the rest).
  std::uint64_t beside_bytes = 0;
  // The budget less what lies beside the allocator and `peak`: the headroom at a peak.
  [[nodiscard]] std::uint64_t headroom_at(std::uint64_t peak) const {
    const std::uint64_t room = budget_bytes - std::min(beside_bytes, budget_bytes);
    return room - std::min(peak, room);
  }
  // The run at the answer (its peak against the budget: the headroom), and at the value beyond
  // it (what it needed: its OOM's request and cause); none when there was none.
  [[nodiscard]] const Trial* at_answer() const;
  [[nodiscard]] const Trial* at_beyond() const;
};

struct FitSearch {
  FitRange range;
  unsigned confirm = 0;
  std::function<void(const Trial&)> on_trial;
};

// Each trial is a fresh run of `config` with the parameter at the value (a run's own error is
// the search's end, with its message). Throws what run_scenario throws for a bad request.
[[nodiscard]] FitResult fit_scenario(const RunConfig& base, const FitSearch& search);

// The same search over a program's trace series (trace/trace_series.hpp): each trial is `base`
// (a replay) of the trace made at the value, held in memory (RunConfig::trace), read from no file.
// `rule`: how the series makes its transient requests (trace::TraceSeries::Rule).
[[nodiscard]] FitResult fit_series(const RunConfig& base, const trace::TraceSeries& series,
                                   const FitSearch& search,
                                   trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines);

}  // namespace oomlab
