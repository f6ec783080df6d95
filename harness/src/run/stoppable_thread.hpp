// A thread whose body waits on one condition variable and ends when its owner stops it (or is
// destroyed): the body holds the lock except while it waits, and the owner changes what the body
// looks at through update(), which wakes it. The run's ticker and watchdog are two such bodies.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

namespace oomlab {

class StoppableThread {
 public:
  using Lock = std::unique_lock<std::mutex>;
  using Clock = std::chrono::steady_clock;

  StoppableThread() = default;
  ~StoppableThread() { stop(); }
  StoppableThread(const StoppableThread&) = delete;
  StoppableThread& operator=(const StoppableThread&) = delete;
  StoppableThread(StoppableThread&&) = delete;
  StoppableThread& operator=(StoppableThread&&) = delete;

  // Runs body(lock) on the thread, with the lock held.
  template <typename Body>
  void start(Body body) {
    thread_ = std::thread([this, body = std::move(body)]() mutable {
      Lock lock(mutex_);
      body(lock);
    });
  }

  // Waits until `deadline`, a stop, or `woken()` (checked on every wake): true unless the deadline
  // passed first. stopping() says whether a stop ended it.
  template <typename Woken>
  bool wait_until(Lock& lock, Clock::time_point deadline, Woken woken) {
    return cv_.wait_until(lock, deadline, [&] { return stopping_ || woken(); });
  }
  // Waits until the owner stops the thread.
  void wait_for_stop(Lock& lock) {
    cv_.wait(lock, [&] { return stopping_; });
  }
  [[nodiscard]] bool stopping() const { return stopping_; }  // with the lock held

  // Changes what the body looks at, under the lock, and wakes it.
  template <typename Change>
  void update(Change change) {
    {
      const std::lock_guard lock(mutex_);
      change();
    }
    cv_.notify_all();
  }

  // Asks the body to end and waits for it.
  void stop() {
    update([this] { stopping_ = true; });
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace oomlab
