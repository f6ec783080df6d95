// A program run under oomlab (`oomlab exec`): in a process group of its own, its stdout and
// stderr passed through and copied to files, each line of its output shown to an observer, and
// on every way out its whole group ended: its own end (what it left behind), a stop (Ctrl-C), a
// timeout, and oomlab itself killed (a guardian process, outside both groups, ends the program's
// group when oomlab's end of a pipe closes).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlab {

struct ProgramSpec {
  std::vector<std::string> argv;                                 // argv[0] is looked up on PATH
  std::vector<std::pair<std::string, std::string>> environment;  // set (or replaced) for it
  int out_fd = 1;  // where its stdout goes on (-1: nowhere); its stderr goes to err_fd
  int err_fd = 2;
  std::filesystem::path out_copy;  // a copy of each stream (empty: none)
  std::filesystem::path err_copy;
  // Lines of its stderr that are a framework's own log, which its user would not have seen
  // (exec turned the level on: Framework::program_log): kept out of what is passed on and of
  // err_copy, written to `log_copy` instead (empty: nowhere), still shown to the observer. Null:
  // stderr passed on as it comes. Given each line, and the line before it when that one was the
  // log's (null otherwise).
  bool (*is_log_line)(std::string_view line, const std::string* previous_log_line) = nullptr;
  std::filesystem::path log_copy;
};

struct ProgramLimits {
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds grace{5'000};   // after SIGINT or SIGTERM, before SIGKILL
  const std::atomic<bool>* stop = nullptr;  // set: SIGINT to its group, as Ctrl-C would
  bool guardian = true;  // a guardian ends its group should this process be killed
  // Polled while it runs: true ends its group as a timeout would (SIGTERM, SIGKILL after the
  // grace), for a job left waiting after one of its ranks failed.
  std::function<bool()> left_waiting;
};

struct ProgramEnd {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  bool stopped = false;
  bool ended_waiting = false;    // limits.left_waiting said so, and it was ended
  bool killed = false;           // it (or what it left) needed SIGKILL
  unsigned leftovers_ended = 0;  // processes still in its group after it exited, ended
  double seconds = 0.0;
  std::vector<std::string> last_lines;  // its output's last lines, both streams
  [[nodiscard]] bool succeeded() const {
    return signal == 0 && exit_code == 0 && !timed_out && !stopped && !ended_waiting;
  }
};

// Told what happens while the program runs, on the thread that called run_program.
class ProgramObserver {
 public:
  ProgramObserver() = default;
  virtual ~ProgramObserver() = default;
  ProgramObserver(const ProgramObserver&) = delete;
  ProgramObserver& operator=(const ProgramObserver&) = delete;
  ProgramObserver(ProgramObserver&&) = delete;
  ProgramObserver& operator=(ProgramObserver&&) = delete;

  virtual void started(pid_t /*pid*/) {}
  // One line of its output, without the newline (a line past 64 KiB comes in pieces).
  virtual void line(std::string_view /*text*/, bool /*from_stderr*/) {}
};

// The path `name` runs as (PATH searched when it has no '/'), or nothing when there is no such
// executable file.
[[nodiscard]] std::optional<std::filesystem::path> find_program(const std::string& name);

// Runs it to its end. Throws Error(usage) when it cannot be started (no such program, not
// executable) and Error(io) when a copy file cannot be made.
[[nodiscard]] ProgramEnd run_program(const ProgramSpec& spec, const ProgramLimits& limits,
                                     ProgramObserver& observer);

// "exited with code 3", "killed by SIGKILL".
[[nodiscard]] std::string describe_end(const ProgramEnd& end);

}  // namespace oomlab
