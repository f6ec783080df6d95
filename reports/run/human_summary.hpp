// The screen a person reads after a run: outcome, the OOM line with its cause and advice,
// peaks, counts and time.
#pragma once

#include <string>

#include "run/run_result.hpp"

namespace oomlab {

[[nodiscard]] std::string human_summary(const RunResult& result, const std::string& written_to);

}  // namespace oomlab
