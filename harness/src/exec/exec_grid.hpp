// `oomlab fit exec --grid NAME=V1,V2 ...`: the largest value of the range for every combination of
// a program's knobs (attention slicing off or on, fp16 or fp32), each combination's search as
// fit exec's own, the combinations spread over the GPUs: "which remedy buys the largest batch?"
// answered in one table, each cell of it measured.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "exec/exec_fit.hpp"

namespace oomlab {

// One knob: `{name}` in the command, and its values in the order given. An empty value removes
// the word it leaves empty (`--grid vae=,--vae-slicing`: the flag off, then on).
struct GridAxis {
  std::string name;
  std::vector<std::string> values;
};

// One combination of the knobs' values, in the axes' order, and its search's answer.
struct GridCell {
  std::vector<std::string> values;
  FitResult fit;
};

struct ExecGridSearch {
  std::vector<GridAxis> axes;
  // Each combination's search: its range, --confirm and model; its on_trial and on_round are
  // replaced by those below.
  ExecFitSearch fit;
  // A trial of the combination `cell` (an index into grid_combinations) ended; a combination's
  // search began or ended. Called one at a time, from whichever thread ran it.
  std::function<void(std::size_t cell, const Trial&)> on_trial;
  std::function<void(std::size_t cell)> on_start;
  std::function<void(std::size_t cell, const FitResult&)> on_done;
};

// Every combination, the first axis's value changing slowest.
[[nodiscard]] std::vector<std::vector<std::string>> grid_combinations(
    const std::vector<GridAxis>& axes);

// `base` at one combination: `{NAME}` in the command's words replaced by its value (a word left
// empty by an empty value removed), and OOMLAB_FIT_<NAME> set to it.
[[nodiscard]] ExecConfig config_at_combination(const ExecConfig& base,
                                               const std::vector<GridAxis>& axes,
                                               const std::vector<std::string>& values);

// The GPUs each concurrent search gets: with as many combinations as GPUs or more, one each (a
// search one run at a time, the combinations taken in order as GPUs come free); with fewer, each
// combination its own share of them, in order (its search in rounds over them), so that every
// combination's trials are the same run after run.
[[nodiscard]] std::vector<std::vector<std::size_t>> grid_groups(std::size_t combinations,
                                                                std::size_t gpus);

// Each combination's fit exec (exec_fit.hpp), in grid_combinations' order, whichever ended first.
// Throws Interrupted on a stop once every running search has ended, and the first error a
// search threw (a program that cannot be started) once the others have.
[[nodiscard]] std::vector<GridCell> fit_exec_grid(const ExecConfig& base,
                                                  std::span<ExecDevices* const> gpus,
                                                  const ExecGridSearch& search);

}  // namespace oomlab
