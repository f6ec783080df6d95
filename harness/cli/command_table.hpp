// The command line's table (oomlab/command_table.hpp) as the CLI makes it, and what the engine
// hands a framework's series table (fit replay --from ... --cards).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "oomlab/command_table.hpp"
#include "run/fit.hpp"
#include "trace/trace_series.hpp"

namespace oomlab::cli {

struct FitOptions;  // cli/commands.hpp

// `fit replay --from ... --cards`: a table of the largest value each card holds under each of a
// framework's allocator settings, made by its face from the series the engine read and aligned.
struct SeriesTableCall {
  const trace::TraceSeries& series;
  const FitRange& range;
  const std::string& pattern;
  trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines;
  const FitOptions& options;       // --cards, --outside, the spelled settings, --json, --out
  std::vector<std::string> notes;  // the series' own
  std::ostream& out;
  std::ostream& err;
};

// Every command: the engine's, then each registered framework's (Framework::add_commands).
[[nodiscard]] const CommandTable& command_table();

// The engine's own commands (engine_commands.cpp).
void add_engine_commands(CommandTable& table);

}  // namespace oomlab::cli
