// exec on several devices or ranks, on the screen: each device's budget and peak, each rank's
// state, and the rank that ran out of memory first with the evidence (summary.json's fields of
// them are summary_ranks.hpp's).
#pragma once

#include <string>

#include "run/run_result.hpp"

namespace oomlab {

// The summary's lines for them: a "devices" line per device of a run on several, the verdict
// ("rank 1 (GPU 1) ran out of memory at ...") with its evidence, the other ranks' last lines.
[[nodiscard]] std::string program_ranks_lines(const ProgramRun& p);

}  // namespace oomlab
