// A program's memory at any value of a parameter (a batch size), from its snapshots at two or
// more values (trace/trace_series.hpp), under each of PyTorch's allocator settings: the frontier
// at each value asked, and the largest value each card holds. The program is not run: each
// figure is a replay of the trace made at the value (held in memory, RunConfig::trace) on the
// model of PyTorch's caching allocator over the sim.
//   - A frontier is searched to 2 MiB from a guess: on the line through the frontiers of the two
//     nearest values already found (with one, its frontier moved by the difference of the two
//     traces' peaks of live blocks; the first from its own peak, which no budget under it can
//     hold); steps double away from the guess until the answer changes, then bisect.
//   - A card's answer is the largest value whose frontier it holds (bisection over the values,
//     the frontiers found kept): the program's need grows with the value.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/params.hpp"
#include "run/fit.hpp"
#include "run/framework_model.hpp"
#include "trace/trace_series.hpp"

namespace oomlab::torch {

// A card (or a size) of the table: its name, and the budget the allocator has on it (the card's
// memory less what the process holds outside the allocator).
struct SeriesCard {
  std::string name;
  std::uint64_t card_bytes = 0;
  std::uint64_t budget_bytes = 0;
};

// A setting (its `settings` are PYTORCH_CUDA_ALLOC_CONF's; approximate: PyTorch's cudaMallocAsync
// backend, whose values are readings, the answer naming an exact setting) and what it does at
// each value and on each card.
struct SeriesRow : AllocatorSetting {
  // By the request's values: the smallest budget the allocator completes in (none: not even
  // the modelled card).
  std::vector<std::optional<std::uint64_t>> frontiers;
  // By card: the largest value of the range it holds (none: not even the least).
  std::vector<std::optional<std::uint64_t>> largest;
  std::size_t replays = 0;
};

struct SeriesTableRequest {
  const trace::TraceSeries* series = nullptr;
  FitRange range;                     // the values a card's answer may take
  std::vector<std::uint64_t> values;  // the frontiers asked for
  std::vector<SeriesCard> cards;
  std::uint64_t card_bytes = 80ULL << 30U;  // the modelled card: the largest budget tried
  std::optional<Params> own_options;        // a row of the user's own (torch options)
  std::string own_name;
  const std::atomic<bool>* stop = nullptr;
  unsigned threads = 0;  // 0: one per core, at most one per setting
  trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines;  // the transient requests'
};

struct SeriesTable {
  std::vector<SeriesRow> rows;
  std::size_t replays = 0;
  double duration_ms = 0.0;
};

// Throws Interrupted on a stop, Error(device) for a replay that ended in error.
[[nodiscard]] SeriesTable series_table(const SeriesTableRequest& request);

// The largest value of `range` whose made trace completes in `budget_bytes` under the settings
// the snapshots recorded (as the program ran): fit_series on torch over the sim.
[[nodiscard]] FitResult fit_as_recorded(
    const trace::TraceSeries& series, const FitRange& range, std::uint64_t budget_bytes,
    const std::atomic<bool>* stop, trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines);

// The smallest budget (to 2 MiB) in which the trace made at `value` completes under the settings
// the snapshots recorded, on a modelled card of `card_bytes`; none when not even that.
[[nodiscard]] std::optional<std::uint64_t> frontier_as_recorded(
    const trace::TraceSeries& series, std::uint64_t value, std::uint64_t card_bytes,
    const std::atomic<bool>* stop, trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines);

}  // namespace oomlab::torch
