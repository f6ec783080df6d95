// exec on several devices or ranks, in summary.json and on the screen: each device's budget and
// peak, each rank's state, and the rank that ran out of memory first with the evidence.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "run/run_result.hpp"

namespace oomlab {

// Adds program.device_usage, ranks, failing_rank and waiting_ended_after_s to `program`.
void add_program_ranks_json(nlohmann::ordered_json& program, const ProgramRun& p);

// The summary's lines for them: a "devices" line per device of a run on several, the verdict
// ("rank 1 (GPU 1) ran out of memory at ...") with its evidence, the other ranks' last lines.
[[nodiscard]] std::string program_ranks_lines(const ProgramRun& p);

}  // namespace oomlab
