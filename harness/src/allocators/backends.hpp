// The allocator backends a run can use: names, one-line summaries and typed options, for the CLI
// to check user input against and for `oomlab list`; and the factories the runner builds them
// with. Below the CLI a backend is its BackendKind, never its name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "allocators/torch/torch_config.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/params.hpp"

namespace oomlab {

enum class BackendKind : std::uint8_t { cuda, async, managed, sim, torch, automatic };

struct BackendInfo {
  BackendKind kind;
  std::string name;
  std::string summary;
  ParamSpec options;
  bool needs_device = true;    // whatever its options (torch: only with upstream=cuda)
  bool holds_ballast = false;  // the driver enforces the budget; else oomlab caps it
  void (*validate)(const Params&) = nullptr;  // checks across options; throws Error(usage)
};

// cuda, async, managed, sim, torch — and auto, which resolves to async or sim.
[[nodiscard]] const std::vector<BackendInfo>& backend_catalog();
[[nodiscard]] const BackendInfo& backend_info(BackendKind kind);
// For the CLI: the backend a user named, or nullptr.
[[nodiscard]] const BackendInfo* find_backend(std::string_view name);

// Builds `cuda`, `async`, `managed` or `torch` (with `torch` its resolved config) on the current
// device. Throws Error(no_device) in a build without CUDA. `managed` comes back already capped
// (BudgetCap at managed_cap_bytes).
[[nodiscard]] std::unique_ptr<Allocator> make_device_backend(
    BackendKind kind, const Params& options, int device, Stream stream, std::uint64_t budget_bytes,
    const torch::TorchConfig* torch = nullptr);
// `torch` over the sim: segments are the sim's 2 MiB pages; the card holds the budget less the
// page the driver keeps, or under a fraction cap the whole modelled card (PyTorch caps itself).
[[nodiscard]] std::uint64_t torch_sim_capacity(const torch::TorchConfig& config,
                                               std::uint64_t total_bytes,
                                               std::uint64_t budget_bytes);
[[nodiscard]] std::unique_ptr<Allocator> make_torch_sim_backend(const torch::TorchConfig& config,
                                                                const Params& options,
                                                                std::uint64_t budget_bytes);
[[nodiscard]] std::unique_ptr<Allocator> make_sim_backend(const Params& options,
                                                          std::uint64_t budget_bytes);
// Whether a run on this backend, with these options, takes memory on a device.
[[nodiscard]] bool uses_device(BackendKind kind, const Params& options);
// The card a simulated run models: what --budget=N% and all refer to.
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
