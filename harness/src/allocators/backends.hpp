// The allocator backends a run can use: names, one-line summaries and typed options, for the CLI
// to check user input against and for `oomlab list`; and the factories the runner builds them with.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/params.hpp"

namespace oomlab {

struct BackendInfo {
  std::string name;
  std::string summary;
  ParamSpec options;
  bool needs_device = true;
};

// cuda, async, managed, sim — and auto, which resolves to async or sim.
[[nodiscard]] const std::vector<BackendInfo>& backend_catalog();
[[nodiscard]] const BackendInfo* find_backend(std::string_view name);

// Builds `cuda`, `async` or `managed` on the current device. Throws Error(no_device) in a build
// without CUDA. `managed` comes back already capped at the budget (BudgetCap).
[[nodiscard]] std::unique_ptr<Allocator> make_device_backend(std::string_view name,
                                                             const Params& options, int device,
                                                             Stream stream,
                                                             std::uint64_t budget_bytes);
[[nodiscard]] std::unique_ptr<Allocator> make_sim_backend(const Params& options,
                                                          std::uint64_t budget_bytes);
// What `managed` may charge (requests rounded up to 64 KiB) at `budget_bytes`: less than the
// budget by the room its driver bookkeeping takes (managed_allocator.hpp).
[[nodiscard]] std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes);
// Whether `name` holds a ballast (the driver enforces the budget) or is capped by oomlab.
[[nodiscard]] bool uses_ballast(std::string_view name);

}  // namespace oomlab
