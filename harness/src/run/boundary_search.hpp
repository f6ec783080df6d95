// The one search oomlab has for "where does completing turn into failing, by runs": the budget
// frontier of a scenario or a replay (`frontier`), of a program (`frontier exec`), and the largest
// value of a setting that fits a budget (`fit`, `fit exec`). Values are whole positions on an
// axis where completing is monotone increasing (a caller whose runs complete below a value, as a
// batch size does, counts positions down from the top). From a first probe (a prediction, what a
// run took, or the range's start), steps double away from it until the answer changes, then
// bisection closes the bracket: a boundary D positions from the probe costs about 2·log2(D) runs,
// a right prediction two (it, and one beyond). A guide may move the probe once, mid-search (fit
// predicts from two runs); --confirm reruns both sides of the answer.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "run/run_result.hpp"

namespace oomlab {

// Why a trial was run: the first run (the top budget, the range's start), the model's prediction,
// the first probe without one, a step away from the probe, a bisection, or a --confirm rerun.
// A re-aim: after the prediction ran out of memory, the budget its own OOM line says it lacked.
enum class TrialRole : std::uint8_t { top, prediction, reaim, probe, step, bisection, confirm };
[[nodiscard]] std::string_view to_string(TrialRole role);

// One run of the search: at a budget (frontier) or at a value of a setting (fit).
struct Trial {
  std::uint64_t value = 0;         // the budget in bytes, or the setting's value
  std::uint64_t budget_bytes = 0;  // the budget it ran under
  Outcome outcome = Outcome::completed;
  std::optional<Cause> cause;
  std::optional<std::uint64_t> request_bytes;  // the request that ran out of memory
  std::optional<std::uint64_t> free_bytes;     // what the device had free then, as the OOM said
  std::string message;                         // the program's OOM line, or why it failed
  std::string library;  // the CUDA library whose own allocation failed (cuBLAS), if one did
  std::uint64_t peak_bytes = 0;  // a program's sampled peak; a scenario's live bytes at most
  std::uint64_t used_bytes = 0;  // what it took of the budget at the most (reserved)
  int exit_code = -1;            // a program's
  double seconds = 0.0;
  TrialRole role = TrialRole::top;
  bool verifies_prediction = false;  // the prediction, or the run one step beyond it
};

// --confirm: the answer and the value beyond it (the budget under the frontier, the value above
// the largest that fits), each rerun `runs` times.
struct Confirmation {
  unsigned runs = 0;
  unsigned answer_completed = 0;
  unsigned beyond_completed = 0;
};

// What a search found, whichever command ran it.
struct BoundaryResult {
  std::optional<std::uint64_t> answer;  // the value nearest the boundary that completes
  std::optional<std::uint64_t> beyond;  // the nearest that does not (none: all of the range fits)
  std::vector<Trial> trials;            // every run, the first and --confirm's included
  bool timed_out = false;               // a trial passed its limit: the search stopped there
  std::string stopped;  // a trial failed for another reason than memory: its message
  std::optional<std::uint64_t> predicted;  // the model's answer, when there was one
  // How it was predicted, or why there is no prediction; of a model's answer (fit_series'), its
  // own caveat on it ("" none).
  std::string prediction_note;
  Confirmation confirmation;
  // Runs that contradict each other: a value beyond the answer completed after it had failed.
  std::optional<std::pair<Trial, Trial>> not_monotonic;  // (the failure, the completion)
  [[nodiscard]] std::size_t runs() const { return trials.size(); }
  [[nodiscard]] bool stopped_early() const { return timed_out || !stopped.empty(); }
};

// What the search knows: `bad` fails, `good` completes (none: not yet known).
struct Bracket {
  std::optional<std::uint64_t> bad;
  std::optional<std::uint64_t> good;
};

// The positions that may be tried, both ends included.
struct Axis {
  std::uint64_t least = 0;
  std::uint64_t most = 0;
};

// Which of the rule's runs a trial is: the first probe, a step outward, or a bisection.
enum class StepKind : std::uint8_t { probe, step, bisection };

// Whether the run at `position` completes; none when its answer is not known (a trial timed out
// or failed otherwise): the search stops there.
using CompletesAt = std::function<std::optional<bool>(std::uint64_t position, StepKind kind)>;
// Where a guide sends the search: a better probe (a prediction: the guide is not asked again),
// or, `more`, a run it wants before it can say (the search goes on from there, steps as far
// apart as the two runs, and the guide is asked again).
struct Aim {
  std::uint64_t position = 0;
  bool more = false;
};
// Asked after each run of the steps: where to go, or none.
using Guide = std::function<std::optional<Aim>(const Bracket& known)>;

// From `probe` (clamped into the axis and the bracket; a probe that is already known is not run
// again), steps of `first_step`, then twice that, and so on away from it, until the answer
// changes, then bisection: the bracket closed (good == bad + 1; or good == axis.least with no bad:
// every position completes; or bad == axis.most with no good: none does). None when a run's
// answer was not known.
[[nodiscard]] std::optional<Bracket> search_from(std::uint64_t probe, std::uint64_t first_step,
                                                 Bracket known, Axis axis,
                                                 const CompletesAt& completes,
                                                 const Guide& guide = {});

// --confirm: `answer` and `beyond` (when there is one) rerun `runs` times each, alternately.
// Stops at a run whose answer is unknown.
[[nodiscard]] Confirmation confirm_boundary(
    std::uint64_t answer, std::optional<std::uint64_t> beyond, unsigned runs,
    const std::function<std::optional<bool>(std::uint64_t position)>& completes);

}  // namespace oomlab
