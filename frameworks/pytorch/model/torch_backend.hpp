// `torch` in the backend catalogue: its options, checks and factory. The factory builds the
// upstream its options name through the catalogue like any backend, and the model over it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "allocators/backends.hpp"
#include "pytorch/model/torch_config.hpp"

namespace oomlab::torch {

inline constexpr const char* kBackendName = "torch";
// The number the registry gave it (oomlab/backend.hpp).
[[nodiscard]] BackendKind torch_kind();

// Its `upstream` option chooses among `upstreams`: the catalogue's backends that serve one.
[[nodiscard]] BackendInfo torch_backend_info(const std::vector<std::string>& upstreams);

// The card `torch` over the sim models: a card of the budget's size (a ballast's) gives one 2 MiB
// page less than the budget; under a fraction cap the whole modelled card (PyTorch caps itself).
[[nodiscard]] std::uint64_t torch_sim_capacity(const TorchConfig& config, std::uint64_t total_bytes,
                                               std::uint64_t budget_bytes);

}  // namespace oomlab::torch
