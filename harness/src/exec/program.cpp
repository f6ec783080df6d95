#include "exec/program.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <thread>

#include "exec/program_spawn.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLineBytes = std::size_t{64} * 1024;
constexpr std::size_t kLastLines = 20;
// After the program exited, how long what it wrote last may take to arrive.
constexpr std::chrono::milliseconds kDrainAfterExit{300};

bool executable_file(const std::filesystem::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Writes all of it to `fd`; false when the other end is gone.
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// One of the program's two streams: passed on, copied, and cut into lines for the observer. With
// a log to keep apart (stderr, ProgramSpec::is_log_line), whole lines are passed on once each is
// known not to be the log's; a carriage return passes what came before it at once (a progress
// bar's line is never a log's).
class OutputStream {
 public:
  OutputStream(int pass_fd, const std::filesystem::path& copy, bool is_stderr)
      : pass_fd_(pass_fd), is_stderr_(is_stderr) {
    if (!copy.empty()) copy_ = std::make_unique<OutputFile>(copy);
  }
  void keep_log_apart(bool (*is_log_line)(std::string_view, const std::string*),
                      const std::filesystem::path& copy) {
    is_log_line_ = is_log_line;
    if (!copy.empty()) log_copy_ = std::make_unique<OutputFile>(copy);
  }

  void take(const char* data, std::size_t size, ProgramObserver& observer,
            std::deque<std::string>& last) {
    if (is_log_line_ == nullptr) pass(std::string_view(data, size));
    for (std::size_t i = 0; i < size; ++i) {
      if (data[i] == '\n' || line_.size() == kMaxLineBytes) {
        end_line(observer, last, data[i] == '\n');
        if (data[i] == '\n') continue;
      }
      line_.push_back(data[i]);
      if (data[i] == '\r' && is_log_line_ != nullptr) pass_held();
    }
  }
  void finish(ProgramObserver& observer, std::deque<std::string>& last) {
    if (!line_.empty()) end_line(observer, last, false);
    if (copy_) copy_->commit();
    if (log_copy_) log_copy_->commit();
  }

 private:
  void pass(std::string_view text) {
    if (pass_fd_ >= 0 && !write_all(pass_fd_, text.data(), text.size())) pass_fd_ = -1;
    if (copy_) copy_->write(text);  // keep on copying
  }
  // What of the line being read has not been passed on yet.
  void pass_held() {
    pass(std::string_view(line_).substr(passed_));
    passed_ = line_.size();
  }
  void end_line(ProgramObserver& observer, std::deque<std::string>& last, bool newline) {
    if (is_log_line_ != nullptr) {
      const bool log =
          passed_ == 0 && is_log_line_(line_, previous_was_log_ ? &previous_ : nullptr);
      if (log) {
        if (log_copy_) log_copy_->write(line_ + (newline ? "\n" : ""));
        previous_ = line_;
      } else {
        pass_held();
        if (newline) pass("\n");
      }
      previous_was_log_ = log;
    }
    passed_ = 0;
    emit(observer, last);
  }
  void emit(ProgramObserver& observer, std::deque<std::string>& last) {
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    observer.line(line_, is_stderr_);
    if (line_.find_first_not_of(" \t") != std::string::npos) {
      last.push_back(line_.substr(0, 400));
      if (last.size() > kLastLines) last.pop_front();
    }
    line_.clear();
  }

  int pass_fd_;
  bool is_stderr_;
  std::unique_ptr<OutputFile> copy_;
  bool (*is_log_line_)(std::string_view, const std::string*) = nullptr;
  std::string previous_;  // the last line of the log, for is_log_line_
  bool previous_was_log_ = false;
  std::unique_ptr<OutputFile> log_copy_;
  std::string line_;
  std::size_t passed_ = 0;  // bytes of line_ already passed on
};

// The signals that end the program's group: SIGINT on a stop, SIGTERM at the timeout or when
// the job is left waiting, SIGKILL once the grace after either has passed.
class Ender {
 public:
  Ender(pid_t group, const ProgramLimits& limits, ProgramEnd& end)
      : group_(group), limits_(limits), end_(end), start_(Clock::now()) {}

  void check() {
    const auto now = Clock::now();
    if (!asked_at_) {
      const bool stop = limits_.stop != nullptr && limits_.stop->load();
      const bool late = limits_.timeout && now - start_ >= *limits_.timeout;
      const bool waiting = !stop && !late && limits_.left_waiting && limits_.left_waiting();
      if (stop || late || waiting) {
        end_.stopped = stop;
        end_.timed_out = late && !stop;
        end_.ended_waiting = waiting;
        ::kill(-group_, stop ? SIGINT : SIGTERM);
        asked_at_ = now;
      }
    } else if (!end_.killed && now - *asked_at_ >= limits_.grace) {
      kill_now();
    }
  }
  void kill_now() {
    ::kill(-group_, SIGKILL);
    end_.killed = true;
  }

 private:
  pid_t group_;
  const ProgramLimits& limits_;
  ProgramEnd& end_;
  Clock::time_point start_;
  std::optional<Clock::time_point> asked_at_;
};

bool has_exited(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) return true;  // not our child any more: nothing to wait for
  }
  return info.si_pid == pid;
}

// Processes whose process group is `group` (from /proc).
unsigned group_members(pid_t group) {
  unsigned count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text;
    std::getline(stat, text);
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long parent = 0;
    long pgrp = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld %ld", &state, &parent, &pgrp) == 3 &&
        pgrp == group && state != 'Z')
      ++count;
  }
  return count;
}

// What it left in its group once it exited: asked to end, then killed after the grace.
void end_leftovers(pid_t group, const ProgramLimits& limits, Ender& ender, ProgramEnd& end) {
  end.leftovers_ended = group_members(group);
  if (end.leftovers_ended == 0) return;
  ::kill(-group, SIGTERM);
  const auto deadline = Clock::now() + std::min(limits.grace, std::chrono::milliseconds(3'000));
  while (group_members(group) > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (group_members(group) > 0) ender.kill_now();
}

}  // namespace

std::optional<std::filesystem::path> find_program(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (executable_file(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read once, at start
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t from = 0;
  while (from <= dirs.size()) {
    const std::size_t to = std::min(dirs.find(':', from), dirs.size());
    const std::string dir = to == from ? "." : dirs.substr(from, to - from);
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (executable_file(candidate)) return candidate;
    from = to + 1;
  }
  return std::nullopt;
}

namespace {

// Reads both pipes until they close, or until a while after the program exited (what it started
// may hold them open); enforces the limits meanwhile.
void pump(std::array<OutputStream*, 2> streams, const Pipe& out, const Pipe& err, pid_t pid,
          Ender& ender, ProgramObserver& observer, std::deque<std::string>& last) {
  std::array<pollfd, 2> fds{pollfd{out.read_end(), POLLIN, 0}, pollfd{err.read_end(), POLLIN, 0}};
  std::array<char, std::size_t{64} * 1024> buffer{};
  std::optional<Clock::time_point> exited_at;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    ender.check();
    if (!exited_at && has_exited(pid)) exited_at = Clock::now();
    if (exited_at && Clock::now() - *exited_at > kDrainAfterExit) break;
    if (::poll(fds.data(), fds.size(), 20) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        streams[i]->take(buffer.data(), static_cast<std::size_t>(n), observer, last);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
      }
    }
  }
}

// Waits for the program itself (the pipes may have closed before it exited), limits enforced;
// what it left in its group is ended while it is still unreaped, so that the group's id cannot
// have been reused.
int reap(pid_t pid, const ProgramLimits& limits, Ender& ender, ProgramEnd& end) {
  while (!has_exited(pid)) {
    ender.check();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  end_leftovers(pid, limits, ender, end);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

ProgramEnd run_program(const ProgramSpec& spec, const ProgramLimits& limits,
                       ProgramObserver& observer) {
  if (spec.argv.empty()) throw_usage("no program to run");
  const std::optional<std::filesystem::path> path = find_program(spec.argv.front());
  if (!path) {
    throw_usage(fmt::format("cannot run '{}': no such executable file{}", spec.argv.front(),
                            spec.argv.front().find('/') == std::string::npos ? " on PATH" : ""));
  }
  OutputStream out_stream(spec.out_fd, spec.out_copy, false);
  OutputStream err_stream(spec.err_fd, spec.err_copy, true);
  if (spec.is_log_line != nullptr) err_stream.keep_log_apart(spec.is_log_line, spec.log_copy);
  Pipe out;
  Pipe err;
  Pipe alive;
  const auto start = Clock::now();
  const pid_t pid = exec_detail::spawn_program(spec, *path, out, err);
  out.close_write();
  err.close_write();
  const pid_t guardian = limits.guardian ? exec_detail::spawn_guardian(pid, alive) : -1;
  alive.close_read();
  observer.started(pid);

  ProgramEnd end;
  Ender ender(pid, limits, end);
  std::deque<std::string> last;
  pump({&out_stream, &err_stream}, out, err, pid, ender, observer, last);
  const int status = reap(pid, limits, ender, end);
  if (guardian > 0) {
    static_cast<void>(write_all(alive.write_end(), "done\n", 5));
    alive.close_write();
    while (::waitpid(guardian, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
  end.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  out_stream.finish(observer, last);
  err_stream.finish(observer, last);
  end.last_lines.assign(last.begin(), last.end());
  return end;
}

std::string describe_end(const ProgramEnd& end) {
  if (end.signal != 0) {
    const char* name = sigabbrev_np(end.signal);
    return fmt::format("was killed by {}", name != nullptr ? fmt::format("SIG{}", name)
                                                           : fmt::format("signal {}", end.signal));
  }
  return fmt::format("exited with code {}", end.exit_code);
}

}  // namespace oomlab
