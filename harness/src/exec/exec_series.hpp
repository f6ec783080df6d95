// `oomlab frontier exec --from NAME=1,2 --at NAME=N -- CMD ... {NAME}`: a program's whole-process
// frontier at a value it is not run at. The program runs once at each --from value, at the
// budget, with a PyTorch snapshot (Python frames on every entry); the snapshots become a trace
// series (trace/trace_series.hpp), the trace made at N is replayed on the model of PyTorch's
// allocator under the settings the runs had, and the frontier is that trace's plus the most any
// run held outside the framework's allocator. Where requests live inside one call and change with
// the value (cuDNN's workspaces), the frontier is a range: its top with each on its line, its foot
// with each given up when refused, as a capped program's convolutions do.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/exec_run.hpp"
#include "run/boundary_search.hpp"
#include "trace/trace_series.hpp"

namespace oomlab {

struct SeriesFrontierRequest {
  std::string name;                 // the parameter ("batch"), {NAME} in the command
  std::vector<std::uint64_t> from;  // the values run, at least two
  std::uint64_t at = 0;             // the value asked for, not run
  std::function<void(const Trial&)> on_trial;
};

struct SeriesFrontier {
  std::vector<Trial> trials;        // the runs, one per --from value (Trial::value)
  std::optional<RunResult> first;   // the first run: its environment and device
  std::uint64_t card_bytes = 0;     // the budget the runs had: the modelled card
  std::uint64_t outside_bytes = 0;  // the most a run held outside the framework's allocator
  // Whole process: with the transient requests on their lines (none: over the runs' budget), and
  // with them given up when refused (the least it can be; the same where there are none). No
  // answer at all when both are none.
  std::optional<std::uint64_t> frontier_bytes;
  std::optional<std::uint64_t> low_bytes;
  std::optional<trace::SeriesFit> fit;
  std::string note;  // how the answer was made, or why there is none
};

// Throws Interrupted on a stop, what run_exec throws for a program that cannot be started.
[[nodiscard]] SeriesFrontier series_frontier(const ExecConfig& base, ExecDevices& devices,
                                             const SeriesFrontierRequest& request);

}  // namespace oomlab
