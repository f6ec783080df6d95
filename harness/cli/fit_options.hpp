// fit's own flags made typed: --range NAME=LO..HI, and the checks that a fit's setting is one the
// scenario has (a whole number) or one the program's command takes ({NAME} in its words).
#pragma once

#include <string>
#include <vector>

#include "exec/exec_grid.hpp"
#include "oomlab/params.hpp"
#include "run/fit.hpp"

namespace oomlab::cli {

// "batch=1..512": NAME (letters, digits, '_', not starting with a digit), LO <= HI, whole numbers
// of 1 or more.
// Error(usage) naming --range and what was expected.
[[nodiscard]] FitRange parse_fit_range(const std::string& text);

// The scenario's parameter NAME must be a whole number that LO may be, and not also set by
// --param. Error(usage) otherwise.
void check_fit_parameter(const FitRange& range, const std::string& scenario, const ParamSpec& spec,
                         const std::vector<std::string>& assignments);

// --confirm N: at most 100.
[[nodiscard]] unsigned parse_confirm(const std::string& text);

// 0 an answer; 1 none (not even LO completes), a run that failed for another reason, or runs that
// contradict each other; 4 a run passed --timeout.
[[nodiscard]] int fit_exit_code(const FitResult& result);

// --outside SIZE: what a process holds outside its framework's allocator. Error(usage) naming it.
[[nodiscard]] std::uint64_t parse_outside(const std::string& text);

// The program's words must hold {NAME}: where the value goes. Error(usage) otherwise.
void check_fit_command(const FitRange& range, const std::vector<std::string>& command);

// --grid NAME=V1,V2,... (repeatable): a knob each, its values in order, an empty one allowed
// (`vae=,--vae-slicing`); a name unlike the range's and the others', in the command as {NAME};
// values distinct; at most kMostGridSettings combinations. Error(usage) naming --grid.
inline constexpr std::size_t kMostGridSettings = 256;
[[nodiscard]] std::vector<GridAxis> parse_grid(const std::vector<std::string>& texts,
                                               const FitRange& range,
                                               const std::vector<std::string>& command);

}  // namespace oomlab::cli
