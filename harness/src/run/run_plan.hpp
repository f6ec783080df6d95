// What a run settles before it starts, once: the allocator (`auto` resolved here and nowhere
// else), its options (a model's from the scenario's recorded settings), whether a device is used,
// and the budget in bytes. The run reads these; RunResult only records them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "allocators/backends.hpp"
#include "oomlab/params.hpp"
#include "oomlab/scenario.hpp"
#include "run/runner.hpp"

namespace oomlab {

struct RunPlan {
  BackendKind kind = BackendKind::sim;
  Params allocator_options;
  // The settings the input was recorded with (a framework's snapshot's), as the options of the
  // backend that models the allocator that recorded them.
  std::optional<RecordedSettings> recorded;
  bool simulated = true;
  bool automatic = false;      // the user named no allocator: the input may still choose one
  std::string pending_notice;  // auto's, said once the input has had its say
};

// The one place `auto` becomes a backend: async where a device is present, else sim (with a notice
// saying why), each with its default options. Any other kind comes back as it was.
struct ResolvedAllocator {
  BackendKind kind = BackendKind::sim;
  Params options;
  std::string notice;  // "" when there is nothing to say
};
[[nodiscard]] ResolvedAllocator resolve_automatic(BackendKind kind, const Params& options,
                                                  const Environment& environment);

// What `auto` becomes for a trace that recorded its allocator (a framework's snapshot replayed at
// the tensor level): the backend that models that allocator (BackendInfo::auto_notice; `name`,
// when given, picks it by the name its trace gives, RecordedSettings::backend), with its default
// options and its notice.
[[nodiscard]] ResolvedAllocator model_of_recorded_allocator(std::string_view name = {});

// The allocator the run uses: `auto` resolved (noting the fallback to sim), with its options.
[[nodiscard]] RunPlan plan_allocator(const RunConfig& config, const Environment& environment,
                                     RunResult& result);
// Once the scenario's input is read: `auto` on a trace that recorded its allocator's settings
// becomes the model of that allocator, the backend takes its defaults from the trace's recorded
// settings (BackendInfo::settle, noting where they came from), and whether a device is used.
void settle_plan(const RunConfig& config, const Scenario& scenario, RunPlan& plan,
                 RunResult& result);

// The budget in bytes: the request against `total` (for N%), `available` (for all, and the
// most it may be; more is clamped, `clamped` saying so) and `kept_back` (a named card: its total
// less what the driver keeps back here when idle, `card` saying that it approximates the card).
// Under one device page: Error(usage). Every command resolves its budget here (run, frontier, fit,
// exec, whatif).
struct ResolvedBudget {
  std::uint64_t bytes = 0;
  std::string clamped;  // the notice of a clamp, "" when none
  std::string card;     // the notice of a named card, "" when none
};
[[nodiscard]] ResolvedBudget resolve_budget_request(const BudgetRequest& request,
                                                    std::uint64_t total, std::uint64_t available,
                                                    std::string_view available_what,
                                                    std::uint64_t kept_back);
// resolve_budget_request, its notices said through `notice` (when set) and kept in `result`:
// a run's and an exec's.
using NoticeSink = std::function<void(std::string_view)>;
[[nodiscard]] std::uint64_t resolve_budget(const BudgetRequest& request, const NoticeSink& notice,
                                           RunResult& result, std::uint64_t total,
                                           std::uint64_t available, std::string_view available_what,
                                           std::uint64_t kept_back);

// A notice: to config.notice as it happens, and kept in the result.
void notify(const RunConfig& config, RunResult& result, std::string text);
void notify(const NoticeSink& notice, RunResult& result, std::string text);
// The run ends in error, with `what` failed: `why` (errors accumulate, "; "-separated).
void record_failure(RunResult& result, std::string_view what, std::string_view why);

}  // namespace oomlab
