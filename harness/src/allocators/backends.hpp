// The allocator backends a run can use (oomlab/backend.hpp): the catalogue, which is the
// registry's list once the engine's own and the frameworks' backends are in it; the CLI checks
// user input against it and `oomlab list` shows it; the runner builds each through its factory.
// Below the CLI a backend is its BackendKind, never its name.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string_view>

#include "oomlab/backend.hpp"

namespace oomlab {

// cuda, async, managed, sim, what the registered frameworks and plugins add, and auto, which
// resolves to one of them. The first call puts the engine's own in the registry, then each
// registered framework's (Framework::add_backends).
[[nodiscard]] const std::list<BackendInfo>& backend_catalog();
[[nodiscard]] const BackendInfo& backend_info(BackendKind kind);
// For the CLI: the backend a user named, or nullptr.
[[nodiscard]] const BackendInfo* find_backend(std::string_view name);

// The one way a backend is built: its catalogue entry's factory. `managed` comes back already
// capped (BudgetCap at managed_cap_bytes); an adaptor builds its upstream through this same call.
[[nodiscard]] std::unique_ptr<Allocator> make_backend(BackendKind kind, const Params& options,
                                                      const BackendSite& site);
[[nodiscard]] std::unique_ptr<Allocator> make_sim_backend(const Params& options,
                                                          std::uint64_t budget_bytes);
// The backend a run on `kind` with these options takes its memory from: an adaptor's upstream,
// else `kind` itself. Its entry says whether that memory is a device's and how it is budgeted.
[[nodiscard]] BackendKind memory_source(BackendKind kind, const Params& options);
// Whether a run on this backend, with these options, takes memory on a device.
[[nodiscard]] bool uses_device(BackendKind kind, const Params& options);
// Whether the driver holds such a run to its budget (a ballast takes the rest of the device).
[[nodiscard]] bool holds_ballast(BackendKind kind, const Params& options);
// The card a simulated run models: what --budget=N% and all refer to (its `total` option, else
// the sim's).
[[nodiscard]] std::uint64_t simulated_total_bytes(BackendKind kind, const Params& options);
// What `managed` may charge (requests rounded up to 64 KiB) at `budget_bytes`: less than the
// budget by the room its driver bookkeeping takes (managed_allocator.hpp).
[[nodiscard]] std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes);
// Brings the driver's managed-memory machinery to the state a managed allocation leaves it in
// (it takes, and keeps or gives back as it sees fit, about 126 MiB of its own: measured), so that
// the device's free memory is read before and after a managed run in the same state. It allocates
// 64 KiB of managed memory, touches it and frees it. No-op without CUDA.
void settle_managed_memory(Stream stream);

}  // namespace oomlab
