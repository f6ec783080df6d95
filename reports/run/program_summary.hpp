// The screen a person reads after `oomlab exec`: the program, how it ended, its OOM line with
// the cause that follows from it, and its memory against the budget.
#pragma once

#include <string>

#include "run/run_result.hpp"

namespace oomlab {

// For a result with a program (RunResult::program).
[[nodiscard]] std::string program_summary(const RunResult& result, const std::string& written_to);

}  // namespace oomlab
