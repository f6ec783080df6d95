// Starting a program and its guardian (exec/program.hpp): pipes and posix_spawn.
#pragma once

#include <sys/types.h>

#include <array>
#include <filesystem>

#include "exec/program.hpp"

namespace oomlab::exec_detail {

// A pipe whose ends close with it; both ends close-on-exec.
class Pipe {
 public:
  Pipe();
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  Pipe(Pipe&&) = delete;
  Pipe& operator=(Pipe&&) = delete;
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_read();
  void close_write();

 private:
  std::array<int, 2> fds_{-1, -1};
};

// The program in a process group of its own (its pid), stdout and stderr into the pipes, stdin
// from /dev/null when oomlab's is a terminal (a background group reading it would be stopped).
[[nodiscard]] pid_t spawn_program(const ProgramSpec& spec, const std::filesystem::path& path,
                                  const Pipe& out, const Pipe& err);

// A /bin/sh that reads `alive` until it closes: a line "done" means the program's end was seen
// to; end of file without it means oomlab died, and it ends the group `group` (SIGTERM, up to 3 s,
// SIGKILL). It ignores SIGINT, SIGTERM and SIGHUP and sits in a group of its own. -1: it could
// not be started (the run goes on without one).
[[nodiscard]] pid_t spawn_guardian(pid_t group, const Pipe& alive);

}  // namespace oomlab::exec_detail
