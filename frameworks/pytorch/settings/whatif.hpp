// What if the program had run with other allocator settings? One PyTorch snapshot replayed
// through the model of PyTorch's caching allocator (`torch` over the sim) under the settings
// users reach for when they run out of memory: for each, the smallest budget at which the replay
// completes (its frontier) and, when a budget is known, what happens at that budget.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "oomlab/params.hpp"
#include "pytorch/settings/torch_settings.hpp"
#include "run/run_result.hpp"
#include "run/runner.hpp"
#include "trace/trace_series.hpp"

namespace oomlab::torch {

// Where the budget of the what-if came from.
enum class WhatIfBudgetSource : std::uint8_t {
  none,      // not known: only frontiers are shown
  given,     // --budget
  snapshot,  // the snapshot's OOM found the device full: what the program had then
};
[[nodiscard]] std::string_view to_string(WhatIfBudgetSource source);

struct WhatIfRequest {
  std::filesystem::path trace;
  // The snapshot already read (its device's trace, at the tensor level): no file is read. Null:
  // `trace` is read.
  std::shared_ptr<const trace::Trace> loaded;
  std::optional<std::uint32_t> device;  // whose device trace; none: the one with a history
  std::optional<BudgetRequest> budget;  // none: the snapshot's, when it recorded one
  BudgetQuestion question = BudgetQuestion::card;  // cards, or caps of a memory fraction
  // The user's own settings (--alloc-conf), a row of their own named by `own_name`.
  std::optional<Params> own_options;
  std::string own_name;
  const std::atomic<bool>* stop = nullptr;
  unsigned threads = 0;  // 0: as many as the machine has cores, at most one per setting
};

// A setting (its `settings` are PYTORCH_CUDA_ALLOC_CONF's; fraction_cap: its budgets are caps of
// a memory fraction on the modelled card) and what it does at the budget and on every card.
struct WhatIfRow : AllocatorSetting {
  Params options;  // as the run used them (the snapshot's settings resolved under them)
  std::optional<std::uint64_t> frontier_bytes;  // none: not even the modelled card completes
  std::uint64_t failing_bytes = 0;              // the largest budget that did not complete
  std::size_t trials = 0;
  std::optional<WhatIfAtBudget> at_budget;
  // A trace made from a series whose transient requests may follow another rule than their
  // line: the frontiers with them held at the largest snapshot's size and on their lines, the
  // smaller first (none: no such request).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> made_range;
  // The replay is not monotonic in the budget: it runs out at `fails_bytes`, above the frontier
  // (the smallest budget that completes), and completes again from `completes_again_bytes`
  // (none: not searched, the budget's own failure is all that is known).
  struct NotMonotonic {
    std::uint64_t fails_bytes = 0;
    std::optional<std::uint64_t> completes_again_bytes;
  };
  std::optional<NotMonotonic> not_monotonic;
};

// A trace made from a snapshot series at a value not run (whatif --from --at): what it was made
// from. Its table is predicted.
struct WhatIfMade {
  std::string name;  // the parameter ("batch")
  std::uint64_t at = 0;
  std::vector<std::uint64_t> values;             // the snapshots' values
  std::vector<std::filesystem::path> files;      // the snapshots read, by value
  trace::SeriesFit fit;                          // how well they aligned
  std::optional<trace::TraceSeries::Rule> held;  // the rule of each row's range's other end
};

struct WhatIfResult {
  std::filesystem::path trace;    // the snapshot, or for a made trace the series' pattern
  std::uint64_t entries = 0;      // the snapshot's device-trace entries, of every kind
  std::uint64_t upper_bytes = 0;  // the modelled card: the largest budget tried
  std::optional<std::uint64_t> budget_bytes;
  WhatIfBudgetSource budget_source = WhatIfBudgetSource::none;
  BudgetQuestion question = BudgetQuestion::card;
  std::vector<std::string> notes;
  std::vector<WhatIfRow> rows;  // "as recorded" first when the snapshot's settings differ
  // smallest_frontier's row.
  std::optional<std::size_t> best;
  // The snapshot stops short (at the program's OOM, or where its run record says it died): every
  // figure is a lower bound, and why.
  bool lower_bound = false;
  std::string lower_bound_why;
  std::optional<std::size_t> native;  // the row of PyTorch's defaults
  std::optional<WhatIfMade> made;     // none: the snapshot as it was recorded
  double duration_ms = 0.0;
};

inline constexpr std::uint64_t kWhatIfCardBytes = 80ULL << 30U;

// The row with the smallest frontier: on a tie the first, a named setting before "as recorded".
// Asked for the smallest card (BudgetQuestion::card), a row asked under a fraction cap is not a
// candidate: its figure is a cap on the modelled card, not a card. A row whose figure is
// approximate (backend=async) leads only when even the top of its range is below the smallest
// exact frontier; what_if() notes why when an exact row leads over a smaller approximate figure.
[[nodiscard]] std::optional<std::size_t> smallest_frontier(const std::vector<WhatIfRow>& rows,
                                                           BudgetQuestion question);

// Throws Error(input) naming the file when it cannot be read or is not a PyTorch snapshot, and
// Interrupted when `stop` is set during the search.
[[nodiscard]] WhatIfResult what_if(const WhatIfRequest& request);

}  // namespace oomlab::torch
