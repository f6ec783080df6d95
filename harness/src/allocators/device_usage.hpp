// How much device memory a run's allocator has taken since it was created, read from
// cudaMemGetInfo: the only account cudaMalloc and managed memory give. One read costs ~5 µs,
// several allocations' worth (more on a VM), so per-event figures come from a read every
// kSampleEvery events, and no more often than every kMinInterval: a burst of fast calls pays
// for at most one read a millisecond.
#pragma once

#include <chrono>
#include <cstdint>

#include "oomlab/allocator.hpp"

namespace oomlab {

class DeviceUsage {
 public:
  static constexpr std::uint32_t kSampleEvery = 64;
  static constexpr std::chrono::microseconds kMinInterval{1000};

  DeviceUsage();  // the baseline: free memory now

  // Counts an event, and reads the device when kSampleEvery have passed.
  void tick() {
    if (++events_since_read_ >= kSampleEvery &&
        std::chrono::steady_clock::now() - last_read_ >= kMinInterval)
      read();
  }
  void read() const;  // refreshes the cached figures (logically const: a measurement)

  [[nodiscard]] std::uint64_t used_since_start() const { return used_; }
  // Measured now.
  [[nodiscard]] MemoryState measure(std::uint64_t own_bytes_bound) const;

 private:
  std::uint64_t baseline_free_ = 0;
  mutable std::uint64_t used_ = 0;
  mutable std::uint64_t free_ = 0;
  mutable std::uint64_t total_ = 0;
  mutable std::uint32_t events_since_read_ = 0;
  mutable std::chrono::steady_clock::time_point last_read_;
};

}  // namespace oomlab
