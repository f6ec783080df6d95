// `oomlab frontier exec`: the smallest budget at which a program exits 0, by the one search on
// fresh runs (run/searches.hpp). One run at the top budget must complete. A PyTorch program's top
// run leaves a snapshot: the model predicts the whole process's frontier from it (the frontier of
// the settings it ran with, plus what the process held outside the framework's allocator), and the
// search verifies it (the prediction completes, one resolution under it fails): three runs; a
// prediction that fails is re-aimed once by what its OOM line says it lacked (four runs). Any
// other program starts from what the top run took plus the page the driver keeps back. Either way
// the steps then double away from that first probe until the answer changes, then bisect: never a
// bisection from zero. --confirm reruns the frontier and the budget under it: programs are not
// always deterministic, and the search should say so rather than hide it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "exec/exec_run.hpp"
#include "run/framework_model.hpp"
#include "run/searches.hpp"

namespace oomlab {

// answer: the frontier; beyond: the largest budget that did not complete.
struct ExecFrontier : BoundaryResult {
  std::optional<RunResult> top;  // the first run's record (at the upper budget), its model too
  // With several GPUs: the runs made beside the search's own that its answer did not need, and
  // the rounds it took.
  std::vector<Trial> spare;
  std::size_t rounds = 0;
  [[nodiscard]] std::uint64_t upper_bytes() const {
    return trials.empty() ? 0 : trials.front().budget_bytes;
  }
};

struct ExecSearch {
  std::uint64_t resolution_bytes = 2ULL << 20U;
  unsigned confirm = 0;
  std::function<void(const Trial&)> on_trial;
  std::function<void(const std::string&)> on_prediction;  // told the prediction's note
  // The whole process's frontier predicted from the top run; none: no prediction. Unset: its
  // snapshots through the model (predict_from_snapshots).
  std::function<std::optional<std::uint64_t>(RunResult& top)> predict;
};

// `base.budget` is the upper bound; base.timeout limits each trial. Throws Interrupted on a stop.
[[nodiscard]] ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                              const ExecSearch& search);
// The same search with a run on each of `gpus` at once (each a trial's devices, with its own
// ballast), in rounds (run/speculative_rounds.hpp): the top run alone, then the run the search
// needs next with those it would need after it, whichever way it ends. The same answer and
// trials as one GPU, sooner. One GPU: the search above.
[[nodiscard]] ExecFrontier find_exec_frontier(const ExecConfig& base,
                                              std::span<ExecDevices* const> gpus,
                                              const ExecSearch& search);

struct ProgramModelling;
// Whose allocator a model's snapshots are of, as a sentence names it ("PyTorch"; "the framework"
// where none models them).
[[nodiscard]] std::string allocator_owner(const ProgramModelling* modelling);
// The model of a run's snapshots (Framework::program_modelling): the one whose format its first
// snapshot is in; with none, the first framework's whose model reads its program's snapshots
// (the run then has none to read). Null when no framework models any: the searches then run
// plain, without a prediction.
[[nodiscard]] const ProgramModelling* program_modelling(const RunResult& run);

// The row the program ran with (its snapshot's settings), or none.
[[nodiscard]] const ModelRow* as_ran_row(const ProgramModel& model);

// The smallest card for the whole process with the settings it ran with: the model's frontier
// plus the memory outside the allocator, the largest over the run's snapshots (each process has
// the budget on its device). None when no snapshot gives one.
[[nodiscard]] std::optional<std::uint64_t> predicted_frontier(
    const std::vector<ProgramModel>& models);

// A run's snapshots through the model (into run.models): the largest of their settings'
// whole-process frontiers, or none without a snapshot or a model.
[[nodiscard]] std::optional<std::uint64_t> predict_from_snapshots(RunResult& run,
                                                                  const std::atomic<bool>* stop);

// A program's run as a trial of a search (its value: the budget it ran at).
[[nodiscard]] Trial program_trial(const RunResult& run);

}  // namespace oomlab
