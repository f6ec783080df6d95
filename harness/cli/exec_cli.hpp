// The flags of `oomlab exec` and `oomlab frontier exec`, and the program's words taken out of the
// command line before CLI11 sees it: everything after the first "--" is the program's, its own
// --help included.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace CLI {
class App;
}

namespace oomlab::cli {

void add_exec(CLI::App& command, ExecOptions& o);  // on its own subcommand
void add_frontier_exec(CLI::App& frontier, ExecOptions& options);
void add_fit_exec(CLI::App& fit, FitExecOptions& options);

// For `exec`, `frontier exec` and `fit exec`: `args` without "--" and what follows it, which is
// returned. Other commands: nothing taken.
[[nodiscard]] std::vector<std::string> take_program(std::vector<std::string>& args);

}  // namespace oomlab::cli
