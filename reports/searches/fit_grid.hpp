// A grid's answer (`fit exec --grid`): the largest value for every combination of the program's
// knobs, as a table in text and Markdown and as oomlab.fit-grid.v1, each combination's own
// oomlab.fit.v1 inside it. Field names are a contract: fields may be added, never renamed.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exec/exec_grid.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab {

struct FitGrid {
  FitRange range;
  std::vector<GridAxis> axes;
  std::vector<GridCell> cells;  // grid_combinations' order
  std::size_t gpus = 1;
  double seconds = 0.0;  // the grid's wall time, to the last answer
};

// The combination with the largest answer (the first of equals); none when none completes.
[[nodiscard]] std::optional<std::size_t> best_cell(const FitGrid& grid);
// "the largest batch under 8.00 GiB: 17, with vae=--vae-slicing, attn=(empty) (4 settings, ...)".
[[nodiscard]] std::string grid_answer(const FitGrid& grid);
// The table, one row a combination: its values, the answer, the value above it and how it ended,
// the runs, the prediction and the seconds of its runs.
[[nodiscard]] std::string grid_text(const FitGrid& grid);
[[nodiscard]] std::string grid_markdown(const FitGrid& grid,
                                        const std::vector<std::string>& command);
// `subject`: the program (its command with the placeholders), its environment written once.
[[nodiscard]] nlohmann::ordered_json fit_grid_json(const SearchSubject& subject,
                                                   const FitGrid& grid);

}  // namespace oomlab
