#include "cli/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <filesystem>
#include <system_error>
#include <thread>

#include "io/pipe.hpp"
#include "oomlab/error.hpp"

extern char** environ;  // NOLINT: POSIX

namespace oomlab::cli {

namespace {

constexpr std::size_t kErrTailBytes = std::size_t{64} * 1024;
constexpr std::size_t kOutMaxBytes = std::size_t{64} * 1024 * 1024;  // a summary is a few KiB

pid_t spawn(const std::vector<std::string>& argv, const Pipe& out, const Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.write_end(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.write_end(), STDERR_FILENO);
  // Its own group is in the background: a read of the terminal would stop it until killed.
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a kill reaches what it started too
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw Error(ErrorKind::io,
                fmt::format("cannot start {}: {}", argv[0], std::generic_category().message(rc)));
  return pid;
}

// Reads what is there; false at end of file.
bool drain(int fd, std::string& into, std::size_t keep_tail) {
  std::array<char, std::size_t{16} * 1024> buffer{};
  const ssize_t n = ::read(fd, buffer.data(), buffer.size());
  if (n <= 0) return n < 0 && (errno == EINTR || errno == EAGAIN);
  into.append(buffer.data(), static_cast<std::size_t>(n));
  if (keep_tail != 0 && into.size() > 2 * keep_tail) into.erase(0, into.size() - keep_tail);
  return true;
}

}  // namespace

namespace {

using Clock = std::chrono::steady_clock;

// SIGTERM to the child's group at the deadline, at a stop request or when stdout overflows;
// SIGKILL after the grace.
class LimitEnforcer {
 public:
  LimitEnforcer(pid_t pid, const ChildLimits& limits, ChildResult& result)
      : pid_(pid), limits_(limits), result_(result), start_(Clock::now()) {}

  void operator()() {
    const auto now = Clock::now();
    const bool stop = limits_.stop != nullptr && limits_.stop->load();
    if (!killed_ && (now - start_ >= limits_.timeout || stop || result_.out_overflow)) {
      result_.timed_out = !stop && !result_.out_overflow;
      result_.stopped = stop;
      ::kill(-pid_, SIGTERM);
      killed_ = true;
      killed_at_ = now;
    }
    if (killed_ && !killed_hard_ && now - killed_at_ >= limits_.grace) {
      ::kill(-pid_, SIGKILL);
      killed_hard_ = true;
    }
  }
  [[nodiscard]] bool killed() const { return killed_; }

 private:
  pid_t pid_;
  const ChildLimits& limits_;
  ChildResult& result_;
  Clock::time_point start_;
  // When SIGTERM went out. Not an optional: GCC 12 warns that one may be read uninitialized.
  bool killed_ = false;
  Clock::time_point killed_at_;
  bool killed_hard_ = false;
};

// Reads stdout (capped) and the tail of stderr until the child closes both.
void read_until_closed(const Pipe& out, const Pipe& err, LimitEnforcer& enforce,
                       ChildResult& result) {
  std::array<pollfd, 2> fds{pollfd{out.read_end(), POLLIN, 0}, pollfd{err.read_end(), POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    enforce();
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      if (!drain(fds[i].fd, i == 0 ? result.out : result.err_tail, i == 0 ? 0 : kErrTailBytes))
        fds[i].fd = -1;
    }
    if (result.out.size() > kOutMaxBytes) {
      result.out_overflow = true;
      result.out.resize(kOutMaxBytes);
    }
  }
}

// Pipes closed: the child is gone, or it closed them and lives on. Waits, with the same limits;
// WNOWAIT keeps it unreaped, so that its group id cannot be reused before the last kill. Returns
// its wait status.
int reap(pid_t pid, const std::string& name, LimitEnforcer& enforce) {
  siginfo_t info{};
  for (;;) {
    info.si_pid = 0;
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::io,
                  fmt::format("waiting for {}: {}", name, std::generic_category().message(errno)));
    }
    if (info.si_pid == pid) break;
    enforce();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (enforce.killed()) ::kill(-pid, SIGKILL);  // anything it left in its group
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const ChildLimits& limits) {
  Pipe out;
  Pipe err;
  const auto start = Clock::now();
  const pid_t pid = spawn(argv, out, err);
  out.close_write();
  err.close_write();

  ChildResult result;
  LimitEnforcer enforce(pid, limits, result);
  read_until_closed(out, err, enforce, result);
  const int status = reap(pid, argv[0], enforce);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (result.err_tail.size() > kErrTailBytes)
    result.err_tail.erase(0, result.err_tail.size() - kErrTailBytes);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

std::vector<std::string> last_lines(const std::string& text, std::size_t count) {
  std::vector<std::string> lines;
  std::size_t end = text.size();
  while (end > 0 && lines.size() < count) {
    const std::size_t begin = text.rfind('\n', end - 1);
    const std::size_t from = begin == std::string::npos ? 0 : begin + 1;
    std::string line = text.substr(from, end - from);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.insert(lines.begin(), std::move(line));
    if (begin == std::string::npos) break;
    end = begin;
  }
  return lines;
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGABRT:
      return "SIGABRT";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return fmt::format("signal {}", signal);
  }
}

std::string self_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw Error(ErrorKind::io, fmt::format("cannot find oomlab's own path: {}", ec.message()));
  return path.string();
}

}  // namespace oomlab::cli
