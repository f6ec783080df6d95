#include "record/event_clock.hpp"

#include <fstream>
#include <string>

namespace oomlab {

namespace {

#if defined(__x86_64__)
struct Pair {
  std::uint64_t tick;
  std::int64_t ns;
};

// A TSC reading and a steady_clock reading taken together: the tightest of a few tries, with the
// TSC at the middle of the clock read.
Pair read_both() {
  Pair best{};
  std::uint64_t tightest = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t before = __rdtsc();
    const auto now = EventClock::Steady::now();
    const std::uint64_t after = __rdtsc();
    if (after - before < tightest) {
      tightest = after - before;
      best = {
          .tick = before + (after - before) / 2,
          .ns =
              std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()};
    }
  }
  return best;
}

bool kernel_times_with_tsc() {
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return static_cast<bool>(in >> name) && name == "tsc";
}

// Nanoseconds per tick in 32.32 fixed point, or 0 where the TSC is not to be trusted.
std::uint64_t measure_scale() {
  if (!kernel_times_with_tsc()) return 0;
  const Pair a = read_both();
  Pair b = a;
  while (b.ns - a.ns < 2'000'000)
    b = read_both();
  if (b.tick <= a.tick) return 0;
  const auto ns = static_cast<EventClock::Wide>(b.ns - a.ns);
  return static_cast<std::uint64_t>((ns << 32U) / (b.tick - a.tick));
}

std::uint64_t tsc_scale() {
  static const std::uint64_t kScale = measure_scale();
  return kScale;
}
#endif

}  // namespace

EventClock::EventClock(Steady::time_point start) : start_(start) {
#if defined(__x86_64__)
  scale_ = tsc_scale();
  if (scale_ != 0) {
    const Pair now = read_both();
    tick0_ = now.tick;
    const std::int64_t since_start =
        now.ns -
        std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
    offset_ns_ = since_start > 0 ? static_cast<std::uint64_t>(since_start) : 0;
  }
#endif
}

bool EventClock::reads_tsc() {
#if defined(__x86_64__)
  return tsc_scale() != 0;
#else
  return false;
#endif
}

}  // namespace oomlab
