// What `exec` makes of a finished program: the outcome, the OOM record from its own message and
// its sampled memory, and the program's facts, all into the RunResult every report reads.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "exec/exec_run.hpp"
#include "exec/memory_timeline.hpp"
#include "exec/oom_message.hpp"
#include "exec/program.hpp"

namespace oomlab {

// What was seen while it ran, copied out of the timeline and the scanner.
struct ExecObservation {
  MemoryReading peak;
  std::uint64_t peak_used_bytes = 0;
  std::uint64_t first_bytes = 0;
  std::uint64_t samples = 0;
  bool per_process = true;
  std::optional<ProgramOom> oom;
  std::size_t oom_lines = 0;
  std::optional<std::pair<std::uint64_t, MemoryReading>> oom_row;  // its seq and reading
};

// What the program's output said of itself beyond its OOM lines.
struct FrameworkHints {
  bool jax = false;
  bool tensorflow = false;
};

[[nodiscard]] ExecObservation observe(
    const MemoryTimeline& timeline, const OomScanner& scanner,
    const std::optional<std::pair<std::uint64_t, MemoryReading>>& oom_row, FrameworkHints hints);

// The result before the run: environment, devices, the command as the scenario's one parameter.
[[nodiscard]] RunResult exec_result_frame(const ExecConfig& config, const ExecDevices& devices);

// Outcome: interrupted (a stop), timeout, completed (exit 0), oom (an OOM line, and it failed),
// error (it failed with none). `budgets`: each device's.
void settle_outcome(const ExecConfig& config, const std::vector<std::uint64_t>& budgets,
                    const ProgramEnd& end, const ExecObservation& seen, RunResult& result);

// A program is taken to have filled its budget when its use came within this of it.
inline constexpr std::uint64_t kNearBudgetBytes = 64ULL << 20;

}  // namespace oomlab
