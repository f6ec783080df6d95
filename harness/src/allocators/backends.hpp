// The allocator backends a run can use: names, one-line summaries and typed options, for the CLI
// to check user input against and for `oomlab list`; and the factories the runner builds them
// with (one factory each, in the catalogue). Below the CLI a backend is its BackendKind, never its
// name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/params.hpp"
#include "oomlab/recorded_settings.hpp"

namespace oomlab {

enum class BackendKind : std::uint8_t { cuda, async, managed, sim, torch, automatic };

// Where a backend is built: the budget it serves, and on a device the device and the run's stream.
struct BackendSite {
  std::uint64_t budget_bytes = 0;
  std::optional<int> device;  // none: a simulated run
  Stream stream;
  // The settings of the allocator the run's input was recorded with (a PyTorch snapshot's), for
  // a model of that allocator; null when the input recorded none.
  const RecordedAllocatorSettings* recorded = nullptr;
};

struct BackendInfo {
  BackendKind kind;
  std::string name;
  std::string summary;
  ParamSpec options;
  bool needs_device = true;    // with its default options (an adaptor's: its upstream's)
  bool holds_ballast = false;  // the driver enforces the budget; else oomlab caps it
  // Can hand an adaptor backend (torch) the memory it serves from: an allocation of any size, on
  // the run's stream. Every backend but an adaptor and auto.
  bool serves_upstream = false;
  void (*validate)(const Params&) = nullptr;  // checks across options; throws Error(usage)
  // Builds it (null for auto, which is resolved before anything is built). A device backend
  // throws Error(no_device) in a build without CUDA.
  std::unique_ptr<Allocator> (*make)(const Params& options, const BackendSite& site) = nullptr;
  // An adaptor's: the backend its options name as its upstream, where its memory comes from
  // (null: the backend takes its memory itself).
  BackendKind (*upstream)(const Params& options) = nullptr;
  // Takes the defaults of options the user left alone from the recorded settings, saying so in
  // the notes it returns (null: the backend takes nothing from them).
  std::vector<std::string> (*settle)(Params& options,
                                     const RecordedAllocatorSettings* recorded) = nullptr;
};

// cuda, async, managed, sim, torch — and auto, which resolves to async or sim.
[[nodiscard]] const std::vector<BackendInfo>& backend_catalog();
[[nodiscard]] const BackendInfo& backend_info(BackendKind kind);
// For the CLI: the backend a user named, or nullptr.
[[nodiscard]] const BackendInfo* find_backend(std::string_view name);

// The one way a backend is built: its catalogue entry's factory. `managed` comes back already
// capped (BudgetCap at managed_cap_bytes); `torch` over the upstream its options name (any entry
// that serves_upstream), built by this same call.
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
