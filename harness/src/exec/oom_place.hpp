// Where a program's OOM stands in the user's own code, and what filled memory then, from the
// snapshot of the process that ran out (exec; a replay's OOM record gets the same from the
// replay itself).
#pragma once

#include "oomlab/trace.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// Where the program's OOM stands in the user's code and what filled memory then, from the
// snapshot of the process that ran out: the failing request's frames (when it recorded stacks;
// the traceback's stay otherwise), the code at the user's innermost frame (read from the file
// when the traceback did not print it), and the live blocks grouped by the frame that allocated
// them, at the failing request (or, for an OOM beside the allocator, after the last allocation).
void describe_failure(OomRecord& oom, const trace::Trace& trace);

}  // namespace oomlab
