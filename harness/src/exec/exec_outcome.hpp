// What `exec` makes of a finished program: the outcome, the OOM record from its own message and
// its sampled memory, and the program's facts, all into the RunResult every report reads.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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
  std::vector<std::uint64_t> free_at_start;  // each device's, before the program started
  std::vector<DeviceTimeline> devices;       // each device's own account
};

// The figures an OOM message states of its moment: what the process holds, what is free.
[[nodiscard]] StatedFigures stated_by(const ProgramOom& message);

// The moment of a program's OOM as exec saw it: its reading (the message's own figures put in),
// its row in events.csv, the budget and the card of the device that ran out, and how many OOM
// lines the output held.
struct OomMoment {
  MemoryReading at;
  std::uint64_t event = 0;
  std::uint64_t budget_bytes = 0;
  std::uint64_t device_total_bytes = 0;
  std::size_t lines_seen = 0;
};

// The OOM record of a program's own message at that moment: its figures, its cause from them
// (diagnose_program_oom), its traceback's frames and, given the program, the user's frame.
[[nodiscard]] OomRecord program_oom_record(const ProgramOom& message, const OomMoment& moment,
                                           const ProgramRun* program);

// What the program's command line and output said of itself beyond its OOM lines: the words of
// the registered dialects' reporter_named_by that appeared.
struct FrameworkHints {
  std::set<std::string> words;
  void read(std::string_view text);
};
// A report of a dialect's shared reporter, named for the one framework the hints name, if one.
void name_shared_reporter(ProgramOom& oom, const FrameworkHints& hints);

[[nodiscard]] ExecObservation observe(
    const MemoryTimeline& timeline, const OomScanner& scanner,
    const std::optional<std::pair<std::uint64_t, MemoryReading>>& oom_row,
    const FrameworkHints& hints);

// The result before the run: environment, devices, the command as the scenario's one parameter.
[[nodiscard]] RunResult exec_result_frame(const ExecConfig& config, const ExecDevices& devices);

// Outcome: interrupted (a stop), timeout, completed (exit 0), oom (an OOM line, and it failed),
// error (it failed with none). `budgets`: each device's.
void settle_outcome(const ExecConfig& config, const std::vector<std::uint64_t>& budgets,
                    const ProgramEnd& end, const ExecObservation& seen, RunResult& result);

class SnapshotShim;

// The PyTorch snapshots the shim wrote (ProgramRun::snapshots, full paths), or the note that
// says why there is none; `shim` null: --no-snapshot. The shim's failures in a run that still
// wrote snapshots are notices.
void settle_snapshots(const ExecConfig& config, const SnapshotShim* shim, RunResult& result);

// Snapshots in the shim's temporary folder (a run without a folder) go with it: taken out of
// the result, and the note says how many there were.
void forget_temporary_snapshots(RunResult& result);

}  // namespace oomlab
