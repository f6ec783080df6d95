// The `sim` backend as a scenario (or a plugin) can build one of its own: a host-side model of
// how cudaMalloc hands out a device's 2 MiB pages, deterministic, with no GPU. A scenario that
// predicts its own peak in the device's pages replays its pattern through one, unbounded.
#pragma once

#include <cstdint>
#include <memory>

#include "oomlab/allocator.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

struct SimOptions {
  std::uint64_t capacity_bytes = 8_GiB;  // the budget
  std::uint64_t page_bytes = kDevicePageBytes;
  std::uint64_t device_total_bytes = 80_GiB;  // the card being modelled, for reports
};

// The largest capacity the sim's address layout allows.
inline constexpr std::uint64_t kSimMaxCapacityBytes = 16_TiB;

// Throws Error(usage) for a page that is not a multiple of 256 B up to 1 GiB, or a capacity over
// kSimMaxCapacityBytes.
[[nodiscard]] std::unique_ptr<Allocator> make_sim_allocator(const SimOptions& options);

}  // namespace oomlab
