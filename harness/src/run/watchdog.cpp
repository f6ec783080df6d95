#include "run/watchdog.hpp"

#include <fmt/format.h>

#include "record/recording.hpp"

namespace oomlab {

Ticker::Ticker(std::chrono::milliseconds interval, std::function<void()> tick) {
  if (!tick) return;
  thread_.start([this, interval, tick = std::move(tick)](StoppableThread::Lock& lock) {
    while (
        !thread_.wait_until(lock, StoppableThread::Clock::now() + interval, [] { return false; }))
      tick();
  });
}

Watchdog::Watchdog(const RunConfig& config, const RunResult& before_start,
                   std::atomic<bool>& timed_out)
    : start_(std::chrono::steady_clock::now()) {
  if (config.timeout.count() <= 0) return;
  thread_.start([this, &config, record = before_start, &timed_out](StoppableThread::Lock& lock) {
    run(lock, config, record, timed_out);
  });
}

void Watchdog::watch(const Recording* recording) {
  thread_.update([&] { recording_ = recording; });
}

void Watchdog::cleaning_up() {
  thread_.update([&] { cleaning_ = true; });
}

void Watchdog::run(StoppableThread::Lock& lock, const RunConfig& config, RunResult record,
                   std::atomic<bool>& timed_out) {
  auto deadline = start_ + config.timeout;
  bool cleaning = false;
  for (;;) {
    if (thread_.wait_until(lock, deadline, [&] { return cleaning_ != cleaning; })) {
      if (thread_.stopping()) return;
      cleaning = true;  // the scenario returned: the clean-up's own allowance from now
      deadline = std::chrono::steady_clock::now() + kCleanupGrace;
      continue;
    }
    if (!cleaning && !timed_out.load(std::memory_order_relaxed)) {
      timed_out.store(true, std::memory_order_relaxed);
      deadline = std::chrono::steady_clock::now() + config.hang_grace;
      continue;
    }
    break;  // past the grace: hung
  }
  if (!config.on_hung) {
    thread_.wait_for_stop(lock);
    return;
  }
  record.outcome = Outcome::timeout;
  record.events = recording_ != nullptr ? recording_->events_seen() : 0;
  record.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  record.error_message = hang_message(config, record.events);
  config.on_hung(record);
}

std::string Watchdog::hang_message(const RunConfig& config, std::uint64_t events) const {
  constexpr std::string_view kEnd =
      "the process ends without freeing, and the driver takes its device memory back when it "
      "exits";
  if (cleaning_) {
    return fmt::format(
        "freeing the run's memory did not end within {} s: a call never returned (after event "
        "{}); {}",
        kCleanupGrace.count(), events, kEnd);
  }
  return fmt::format(
      "the run passed its timeout of {:.3g} s and then did not stop for {:.3g} s more: a call "
      "never returned (after event {}); {}",
      std::chrono::duration<double>(config.timeout).count(),
      std::chrono::duration<double>(config.hang_grace).count(), events, kEnd);
}

}  // namespace oomlab
