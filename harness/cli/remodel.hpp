// `oomlab report --remodel`: a run folder re-diagnosed with this oomlab from what it holds. An
// exec's program output is scanned again and its snapshots put through today's model; a scenario
// run on a simulated allocator is made again from its record (its trace, parameters, allocator
// and budget); a run on a GPU is not made again, and says so. The result carries the provenance
// lines: whose verdict was stored, and what changed.
#pragma once

#include <filesystem>

#include "reports/run/run_report.hpp"

namespace oomlab::cli {

// `path`: a run folder or its summary.json. Throws Error(usage) for a folder that is not a run's
// (a matrix, a frontier, a fit), Error(input) for a summary that cannot be read.
[[nodiscard]] RunReport remodel_run(const std::filesystem::path& path);

}  // namespace oomlab::cli
