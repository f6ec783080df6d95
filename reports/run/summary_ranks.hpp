// summary.json's fields of a program run on several devices or ranks (program.device_usage,
// ranks, failing_rank, waiting_ended_after_s), written and read back (summary_ranks.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include "reports/run/report_input.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// Adds program.device_usage, ranks, failing_rank and waiting_ended_after_s to `program`.
void add_program_ranks_json(nlohmann::ordered_json& program, const ProgramRun& p);
// Reads them back into `p` (absent in summaries written before they existed: left empty).
void read_program_ranks(const JsonFields& program, ProgramRun& p);

}  // namespace oomlab
