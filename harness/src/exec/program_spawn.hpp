// Starting a program and its guardian (exec/program.hpp): pipes and posix_spawn.
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "exec/program.hpp"
#include "io/pipe.hpp"

namespace oomlab::exec_detail {

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
