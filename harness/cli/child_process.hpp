// One child process, run to its end or to a deadline: what `matrix` uses to keep a crash, a
// sticky CUDA error or a hang in one cell from taking down the others. The child gets its own
// process group, so that a timeout or a stop kills everything it started.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace oomlab::cli {

struct ChildLimits {
  std::chrono::milliseconds timeout{600'000};
  std::chrono::milliseconds grace{3'000};   // after SIGTERM, before SIGKILL
  const std::atomic<bool>* stop = nullptr;  // set: SIGTERM now, as for a timeout
};

struct ChildResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  bool stopped = false;       // ended because `stop` was set
  bool out_overflow = false;  // stdout passed 64 MiB: it was stopped, `out` is cut there
  std::string out;            // all of stdout
  std::string err_tail;       // the last 64 KiB of stderr
  double seconds = 0.0;
  [[nodiscard]] bool exited_cleanly() const { return signal == 0 && exit_code == 0; }
};

// Throws Error(io) when the process cannot be started at all.
[[nodiscard]] ChildResult run_child(const std::vector<std::string>& argv,
                                    const ChildLimits& limits);

// The last `count` non-empty lines of `text`.
[[nodiscard]] std::vector<std::string> last_lines(const std::string& text, std::size_t count);

// SIGABRT, SIGSEGV, ... or "signal N".
[[nodiscard]] std::string signal_name(int signal);

// This program's own path, to start copies of it.
[[nodiscard]] std::string self_executable();

}  // namespace oomlab::cli
