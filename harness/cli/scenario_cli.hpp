// The flags of the commands that run a scenario: what run, frontier and fit share, and frontier's
// and fit's own (each with its `exec` beside it, for a program).
#pragma once

#include "cli/commands.hpp"

namespace CLI {
class App;
}

namespace oomlab::cli {

// A scenario (positional; `required` unless an `exec` may stand in its place), its allocator,
// parameters and trace.
void add_scenario_options(CLI::App* sub, RunOptions& options, bool required = true);
// On the command's own subcommand, with its `exec` beside it.
void add_frontier(CLI::App& command, RunOptions& run, ExecOptions& program);
void add_fit(CLI::App& command, FitOptions& o, FitExecOptions& program);

}  // namespace oomlab::cli
