// The two threads that watch a run: a ticker for progress lines, and the --timeout watchdog.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "run/runner.hpp"
#include "run/stoppable_thread.hpp"

namespace oomlab {

class Recording;

// Calls `tick` every `interval` on a thread of its own until destroyed (nothing without a tick).
class Ticker {
 public:
  Ticker(std::chrono::milliseconds interval, std::function<void()> tick);

 private:
  StoppableThread thread_;
};

// --timeout, from before the device is set up: at the deadline it sets `timed_out` (the run
// stops at its next event); if the scenario has not returned `hang_grace` later, a call never
// returned. Once the scenario has returned, the clean-up (freeing everything, waiting for the
// driver's late release) has kCleanupGrace of its own, whatever the timeout. Either way a hang
// hands the record so far to config.on_hung: a copy made before the run started, with the
// events counted so far and the time; nothing the run's own thread is writing is read.
class Watchdog {
 public:
  static constexpr std::chrono::seconds kCleanupGrace{60};

  Watchdog(const RunConfig& config, const RunResult& before_start, std::atomic<bool>& timed_out);

  // The recording whose event count a hung run's record gives (nullptr: none now).
  void watch(const Recording* recording);
  // The scenario has returned (or thrown): what follows is the clean-up.
  void cleaning_up();

 private:
  void run(StoppableThread::Lock& lock, const RunConfig& config, RunResult record,
           std::atomic<bool>& timed_out);
  [[nodiscard]] std::string hang_message(const RunConfig& config, std::uint64_t events) const;

  std::chrono::steady_clock::time_point start_;
  bool cleaning_ = false;
  const Recording* recording_ = nullptr;
  StoppableThread thread_;  // last: stopped before the state above goes
};

}  // namespace oomlab
