// What a run settles before it starts, once: the allocator (`auto` resolved here and nowhere
// else), its options (torch's from the scenario's recorded settings), whether a device is used,
// and the budget in bytes. The run reads these; RunResult only records them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "allocators/backends.hpp"
#include "allocators/torch/torch_config.hpp"
#include "oomlab/params.hpp"
#include "oomlab/scenario.hpp"
#include "run/runner.hpp"

namespace oomlab {

struct RunPlan {
  BackendKind kind = BackendKind::sim;
  Params allocator_options;
  std::optional<torch::TorchConfig> torch;
  bool simulated = true;
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

// The allocator the run uses: `auto` resolved (noting the fallback to sim), with its options.
[[nodiscard]] RunPlan plan_allocator(const RunConfig& config, const Environment& environment,
                                     RunResult& result);
// Once the scenario's input is read: torch's settings from the trace's recorded ones (noting
// where they came from), and whether a device is used.
void settle_plan(const RunConfig& config, const Scenario& scenario, RunPlan& plan,
                 RunResult& result);

// The budget in bytes: the request against `total` (for N%) and `available` (for all, and the
// most it may be; more is clamped with a notice). Under one device page: Error(usage).
[[nodiscard]] std::uint64_t resolve_budget(const RunConfig& config, RunResult& result,
                                           std::uint64_t total, std::uint64_t available,
                                           std::string_view available_what);

// A notice: to config.notice as it happens, and kept in the result.
void notify(const RunConfig& config, RunResult& result, std::string text);
// The run ends in error, with `what` failed: `why` (errors accumulate, "; "-separated).
void record_failure(RunResult& result, std::string_view what, std::string_view why);

}  // namespace oomlab
