#include "exec/program_spawn.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <system_error>
#include <vector>

#include "oomlab/error.hpp"

extern char** environ;  // NOLINT: POSIX

namespace oomlab::exec_detail {

namespace {

// Waits for "done" or the end of its stdin; then, unless told "done", ends the group.
constexpr const char* kGuardianScript =
    "trap '' INT TERM HUP\n"
    "while IFS= read -r line; do [ \"$line\" = done ] && exit 0; done\n"
    "kill -s TERM -- -\"$1\" 2>/dev/null || exit 0\n"
    "i=0\n"
    "while [ $i -lt 30 ] && kill -s 0 -- -\"$1\" 2>/dev/null; do sleep 0.1; i=$((i+1)); done\n"
    "kill -s KILL -- -\"$1\" 2>/dev/null\n"
    "exit 0\n";

// environ with `changes` set over it, as KEY=VALUE strings.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& changes) {
  std::vector<std::string> result;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [name, value] : changes)
      replaced = replaced || name == key;
    if (!replaced) result.emplace_back(entry);
  }
  // A name set twice gets its last value, once: a process reading the environment may take the
  // first of two (Python's os.environ does), so a later setting must replace, not follow, one.
  for (auto it = changes.begin(); it != changes.end(); ++it) {
    const bool set_later = std::any_of(std::next(it), changes.end(),
                                       [&](const auto& later) { return later.first == it->first; });
    if (!set_later) result.push_back(fmt::format("{}={}", it->first, it->second));
  }
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  result.reserve(strings.size() + 1);
  for (std::string& s : strings)
    result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

// Attributes: its own process group, and the signals oomlab handles back to their defaults.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    posix_spawnattr_init(&attr_);
    posix_spawnattr_setpgroup(&attr_, 0);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP})
      sigaddset(&defaults, s);
    posix_spawnattr_setsigdefault(&attr_, &defaults);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr_, &none);
    posix_spawnattr_setflags(
        &attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  SpawnAttributes(SpawnAttributes&&) = delete;
  SpawnAttributes& operator=(SpawnAttributes&&) = delete;
  [[nodiscard]] const posix_spawnattr_t* get() const { return &attr_; }

 private:
  posix_spawnattr_t attr_{};
};

class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  FileActions(FileActions&&) = delete;
  FileActions& operator=(FileActions&&) = delete;
  void dup(int from, int to) { posix_spawn_file_actions_adddup2(&actions_, from, to); }
  void open(int fd, const char* path, int flags) {
    posix_spawn_file_actions_addopen(&actions_, fd, path, flags, 0);
  }
  [[nodiscard]] const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

}  // namespace

pid_t spawn_program(const ProgramSpec& spec, const std::filesystem::path& path, const Pipe& out,
                    const Pipe& err) {
  FileActions actions;
  actions.dup(out.write_end(), STDOUT_FILENO);
  actions.dup(err.write_end(), STDERR_FILENO);
  if (isatty(STDIN_FILENO) == 1) actions.open(STDIN_FILENO, "/dev/null", O_RDONLY);
  const SpawnAttributes attributes;
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = environment_with(spec.environment);
  std::vector<char*> argv = pointers(args);
  std::vector<char*> envp = pointers(env);
  pid_t pid = 0;
  const int rc =
      posix_spawn(&pid, path.c_str(), actions.get(), attributes.get(), argv.data(), envp.data());
  if (rc != 0) {
    throw Error(ErrorKind::usage, fmt::format("cannot run '{}': {}", spec.argv.front(),
                                              std::generic_category().message(rc)));
  }
  return pid;
}

pid_t spawn_guardian(pid_t group, const Pipe& alive) {
  FileActions actions;
  actions.dup(alive.read_end(), STDIN_FILENO);
  actions.open(STDOUT_FILENO, "/dev/null", O_WRONLY);
  actions.open(STDERR_FILENO, "/dev/null", O_WRONLY);
  const SpawnAttributes attributes;
  std::vector<std::string> args = {"/bin/sh", "-c", kGuardianScript, "oomlab-guardian",
                                   std::to_string(group)};
  std::vector<char*> argv = pointers(args);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/bin/sh", actions.get(), attributes.get(), argv.data(), environ) != 0)
    return -1;
  return pid;
}

}  // namespace oomlab::exec_detail
