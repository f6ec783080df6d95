// `oomlab fit exec --grid NAME=V1,V2 ...`: fit exec's search at every combination of the
// program's knobs, spread over --gpus, answered as one table (exec/exec_grid.hpp).
#pragma once

#include <ostream>
#include <vector>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "exec/exec_grid.hpp"

namespace oomlab::cli {

// The grid's searches on the session's GPUs; the table on stdout (stderr while --json or
// --markdown takes it), --json, --markdown and --out DIR (fit.json, report.md). The exit code:
// fit exec's for the worst combination, none completing only where no combination does.
[[nodiscard]] int fit_grid_command(const FitExecOptions& options, const ExecConfig& config,
                                   ExecSearchSession& session, Console& console,
                                   ExecGridSearch search, std::ostream& out, std::ostream& err);

}  // namespace oomlab::cli
