// Event times. The recorder stamps every event, and reading the clock was most of its cost:
// clock_gettime through the vDSO takes 15-35 ns, the TSC 5-10 ns. Where the kernel itself keeps
// time with the TSC (clocksource "tsc": it found the counter invariant and the same on every
// core), events read the TSC and scale it by a rate measured once per process against
// steady_clock (2 ms, at the first run); elsewhere they read steady_clock. Over a run of an
// hour the two clocks part by well under a millisecond; run durations come from steady_clock.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace oomlab {

class EventClock {
 public:
  using Steady = std::chrono::steady_clock;

  // Times count from `start` (a moment no later than now).
  explicit EventClock(Steady::time_point start);

  [[nodiscard]] std::uint64_t now_ns() const {
#if defined(__x86_64__)
    if (scale_ != 0) {
      const std::uint64_t ticks = __rdtsc() - tick0_;
      return offset_ns_ + static_cast<std::uint64_t>((static_cast<Wide>(ticks) * scale_) >> kShift);
    }
#endif
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - start_).count());
  }

  // Whether events in this process read the TSC.
  [[nodiscard]] static bool reads_tsc();

  __extension__ using Wide = unsigned __int128;  // GCC and Clang have it on x86-64

 private:
  static constexpr unsigned kShift = 32;  // scale_ is nanoseconds per tick, fixed point 32.32

  Steady::time_point start_;
  std::uint64_t tick0_ = 0;
  std::uint64_t offset_ns_ = 0;  // from start_ to tick0_
  std::uint64_t scale_ = 0;      // 0: read steady_clock
};

}  // namespace oomlab
