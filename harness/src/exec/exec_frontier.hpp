// `oomlab frontier exec`: the smallest budget at which a program exits 0, by search on fresh
// runs. One run at the top budget must complete. A PyTorch program's top run leaves a snapshot:
// the model predicts the whole process's frontier from it (the frontier of the settings it ran
// with, plus what the process held outside PyTorch's allocator), and the search verifies it (the
// prediction completes, one resolution under it fails): three runs. Any other program starts from
// what the top run took plus the page the driver keeps back. Either way the steps then double
// away from that first probe until the answer changes, then bisect (run/frontier_steps.hpp):
// never a bisection from zero. --confirm reruns the frontier and the budget under it: programs
// are not always deterministic, and the search should say so rather than hide it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/exec_run.hpp"

namespace oomlab {

// Why a trial was run: the top run, the model's prediction or the top run's peak (the first
// probe), a step away from it, a bisection, or a --confirm rerun.
enum class TrialRole : std::uint8_t { top, prediction, probe, step, bisection, confirm };
[[nodiscard]] std::string_view to_string(TrialRole role);

struct ExecTrial {
  std::uint64_t budget_bytes = 0;
  Outcome outcome = Outcome::completed;
  std::optional<Cause> cause;
  std::string oom_line;          // the program's, or why it failed otherwise
  std::uint64_t peak_bytes = 0;  // the program's sampled peak (NVML)
  std::uint64_t used_bytes = 0;  // out of the budget at the most
  int exit_code = -1;
  double seconds = 0.0;
  TrialRole role = TrialRole::top;
  bool verifies_prediction = false;  // the prediction, or the run one step from it
};

struct ExecFrontier {
  std::uint64_t upper_bytes = 0;
  std::optional<std::uint64_t> frontier_bytes;
  std::uint64_t failing_bytes = 0;
  bool timed_out = false;
  std::vector<ExecTrial> trials;  // every program run, the top one and --confirm's included
  std::optional<RunResult> top;   // the first run's record (at the upper budget), its model too
  std::optional<std::uint64_t> predicted_bytes;  // the model's whole-process frontier
  std::string prediction_note;  // how it was predicted, or why there is no prediction
  unsigned confirm_runs = 0;    // each, at the frontier and under it
  unsigned frontier_passed = 0;
  unsigned below_passed = 0;
};

struct ExecSearch {
  std::uint64_t resolution_bytes = 2ULL << 20U;
  unsigned confirm = 0;
  std::function<void(const ExecTrial&)> on_trial;
  std::function<void(const std::string&)> on_prediction;  // told the prediction's note
  // The whole process's frontier predicted from the top run; none: no prediction. Unset: its
  // snapshots through the model (predict_from_snapshots).
  std::function<std::optional<std::uint64_t>(RunResult& top)> predict;
};

// `base.budget` is the upper bound; base.timeout limits each trial. Throws Interrupted on a stop.
[[nodiscard]] ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                              const ExecSearch& search);

// The top run's snapshots through the model (into top.models): the largest of their settings'
// whole-process frontiers, or none without a snapshot.
[[nodiscard]] std::optional<std::uint64_t> predict_from_snapshots(RunResult& top,
                                                                  const std::atomic<bool>* stop);

}  // namespace oomlab
