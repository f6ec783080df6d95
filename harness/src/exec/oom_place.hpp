// Where a program's OOM stands in the user's own code, and what filled memory then, from the
// snapshot of the process that ran out (exec; a replay's OOM record gets the same from the
// replay itself).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "exec/traceback.hpp"
#include "oomlab/trace.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// Where the program's OOM stands in the user's code and what filled memory then, from the
// snapshot of the process that ran out: the failing request's frames (when it recorded stacks;
// the traceback's stay otherwise), the code at the user's innermost frame (read from the file
// when the traceback did not print it), and the live blocks grouped by the frame that allocated
// them, at the failing request (or, for an OOM beside the allocator, after the last allocation).
void describe_failure(OomRecord& oom, const trace::Trace& trace, const ProgramRun& program);

// The program's own folders: each Python script's in its command line, and the working folder.
[[nodiscard]] std::vector<std::string> program_roots(const ProgramRun& program);

// oom.user_frame and oom.user_line from oom.frames: the innermost frame under the program's own
// folders, program_roots() and `more_roots` (else, none there, the innermost outside installed
// packages and Python's library: trace::innermost_user_frame), and its code: `code` when the
// frame is the traceback's that printed it, else read from the file when it is on this machine.
void choose_user_frame(OomRecord& oom, const ProgramRun& program,
                       const std::vector<TracebackFrame>& traceback = {},
                       std::span<const std::string> more_roots = {});

}  // namespace oomlab
