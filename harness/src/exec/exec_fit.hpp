// `oomlab fit exec --budget SIZE --range NAME=LO..HI -- CMD ... {NAME} ...`: the largest value of a
// program's setting (a batch size) at which it exits 0 under the budget, each trial a fresh
// process on a card cut down by the ballast (unlike in-process finders, whose earlier OOMs leave
// the next trial a fragmented cache). `{NAME}` in the arguments becomes the value, and the program
// also finds it in OOMLAB_FIT_<NAME> (NAME upper-cased). For a PyTorch program the model guides the
// search: once two runs have completed, each one's whole-process need (its snapshot's frontier
// through the model, plus what the process held outside the framework's allocator) gives a line in
// the value, and the search goes to the largest value the line says fits and verifies it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "exec/exec_run.hpp"
#include "run/fit.hpp"
#include "trace/trace_series.hpp"

namespace oomlab {

struct ProgramModelling;  // oomlab/framework.hpp

// A trace series' answer asked of a framework's model (ProgramModelling::fit_series, its
// frontier_series): the series, the values asked (frontier_series: range.lo, the one value), the
// budget (fit_series: the allocator's; frontier_series: the modelled card, the most tried), and
// how the transient requests are made.
struct SeriesQuestion {
  const trace::TraceSeries& series;
  FitRange range;
  std::uint64_t budget_bytes = 0;
  const std::atomic<bool>* stop = nullptr;
  trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines;
  // What the process held beside the allocator, taken from the card already in `budget_bytes`
  // (an allocator that sizes its pool from the card adds it back).
  std::uint64_t outside_bytes = 0;
};

struct ExecFitSearch {
  FitRange range;
  unsigned confirm = 0;
  std::function<void(const Trial&)> on_trial;
  // With several GPUs: a round about to run (ValueSearch::on_round).
  std::function<void(const std::vector<std::uint64_t>& values, std::size_t done)> on_round;
  // What a completed run needed of the card, whole process (none: no model for it); unset: no
  // model at all (the plain search).
  std::function<std::optional<std::uint64_t>(RunResult& run)> need_of;
};

// Each trial runs `base.command` at a value. Throws Interrupted on a stop, what run_exec throws
// for a program that cannot be started.
[[nodiscard]] FitResult fit_exec(const ExecConfig& base, ExecDevices& devices,
                                 const ExecFitSearch& search);
// The same search with a trial on each of `gpus` at once (each a trial's devices, with its own
// ballast), in rounds (run/value_rounds.hpp): the same answer, sooner. One: the search above.
[[nodiscard]] FitResult fit_exec(const ExecConfig& base, std::span<ExecDevices* const> gpus,
                                 const ExecFitSearch& search);

// The command at `value`: every `{NAME}` in its words replaced.
[[nodiscard]] std::vector<std::string> command_at(const std::vector<std::string>& command,
                                                  const std::string& name, std::uint64_t value);
// OOMLAB_FIT_<NAME>, NAME upper-cased: where the program finds the value in its environment.
[[nodiscard]] std::string fit_variable(const std::string& name);

// Where three runs' needs (value, whole-process bytes), in increasing value, lie on one line:
// the need's growth per 1 of the value from the first to the second and from the second to the
// third within kLineTolerance of each other. At the smallest values a program's peak is often set
// by what does not grow with the value (its optimizer step, a workspace chosen for the shape), so
// a line read from two runs there can miss by half: on the H100, the model's need for
// tests/data/exec/lightning_fit.py grew 33.5 MB per image from batch 1 to 2, 61.9 MB from 2 to 4
// and 64.0 MB from 4 to 30. None when they agree; else why, in words.
inline constexpr long double kLineTolerance = 0.10L;
[[nodiscard]] std::optional<std::string> off_the_line(std::pair<std::uint64_t, std::uint64_t> a,
                                                      std::pair<std::uint64_t, std::uint64_t> b,
                                                      std::pair<std::uint64_t, std::uint64_t> c,
                                                      const std::string& name);

// Two runs' needs (value, whole-process bytes), the larger value second: the largest value whose
// need, on the line through them, is within `budget`. None when the need does not grow with it.
[[nodiscard]] Prediction predict_largest(std::pair<std::uint64_t, std::uint64_t> smaller,
                                         std::pair<std::uint64_t, std::uint64_t> larger,
                                         std::uint64_t budget, const std::string& name);

// Where fit exec's second run goes for a model whose small values are noise to it
// (ProgramModelling::far_second_run): the largest value up to `hi` that the first run's trace,
// each request grown in proportion to the value (trace::TraceSeries::in_proportion), completes
// at in the model, on the card of `budget_bytes` (the allocator's) and `outside_bytes`. No need
// grows faster from a part that does not grow with the value (the parameters) and one that grows
// in proportion (the activations), so the run there completes, and the line to it is long. None
// where that is not past the next value, or under modelling.far_second_run. Throws what the
// model throws for the trace.
[[nodiscard]] std::optional<std::uint64_t> far_second_value(const ProgramModelling& modelling,
                                                            const SeriesQuestion& first);

}  // namespace oomlab
