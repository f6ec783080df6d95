// `xla` in the backend catalogue: XLA's allocator as JAX sets it up (its options are JAX's
// variables), its checks and factory. The factory builds the upstream its options name through
// the catalogue like any backend, and the pool over it, sized as JAX sizes it from the card.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "allocators/backends.hpp"
#include "jax/model/bfc_model.hpp"
#include "oomlab/params.hpp"

namespace oomlab::jax {

inline constexpr const char* kBackendName = "xla";

// Its `upstream` option chooses among `upstreams`: the catalogue's backends that serve one.
[[nodiscard]] BackendInfo xla_backend_info(const std::vector<std::string>& upstreams);

// The pool JAX makes on a card of `card_bytes` with these options (none: allocator=platform):
// its limit memory_fraction of the card, the fraction in single precision (JAX passes it so),
// rounded up to 2 MiB; preallocated unless preallocate=false; spatial partitioning with
// preallocation only.
[[nodiscard]] std::optional<BfcConfig> pool_config(const Params& options, std::uint64_t card_bytes);

}  // namespace oomlab::jax
