// matrix.json, schema oomlab.matrix.v1: the environment once, then every cell of a matrix with
// the oomlab.run.v1 summary its child process printed. A cell that ran N times keeps each
// repeat's outcome and OOM point, the spread of those points, and as its `summary` the repeat
// whose OOM point is the median (the one `compare` and the report show).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "record/formats.hpp"

namespace oomlab {

struct MatrixRepeat {
  std::string outcome;  // the child's own (oom, completed, error, interrupted), or crash/timeout
  int exit_code = 0;
  std::optional<std::string> signal;  // SIGABRT, ... when a signal ended it
  double duration_ms = 0.0;
  std::string dir;                      // relative to the matrix folder
  std::vector<std::string> last_lines;  // the child's last stderr lines
  nlohmann::ordered_json summary;       // oomlab.run.v1, or null when it printed none
};

struct MatrixCell {
  std::string id;  // "<scenario>-<allocator>", unique, a folder name
  std::string scenario;
  std::string allocator;  // as asked, options included: "async:release_threshold=max"
  int device = 0;
  std::string budget;          // as asked: "8GiB", "50%", "all"
  nlohmann::ordered_json key;  // scenario, allocator, options, params, budget: what compare matches
  std::vector<MatrixRepeat> repeats;
};

// The cell's outcome over its repeats: crash, then timeout, error, interrupted win over oom and
// completed; repeats that disagree between oom and completed make it oom.
[[nodiscard]] std::string cell_outcome(const MatrixCell& cell);
// Index of the repeat the cell shows: the median OOM point among repeats that OOMed, else the
// first with a summary, else the first.
[[nodiscard]] std::size_t representative_repeat(const MatrixCell& cell);

// The least, the median and the largest of one figure of the OOM points of a cell's repeats.
struct RepeatSpread {
  std::uint64_t min = 0;
  std::uint64_t median = 0;
  std::uint64_t max = 0;
};
// How a cell's repeats spread (matrix.json's `spread`, and the table's column).
struct CellSpread {
  std::size_t runs = 0;
  std::size_t oom_runs = 0;
  std::optional<RepeatSpread> oom_live_bytes;  // none when no repeat OOMed
  std::optional<RepeatSpread> oom_step;
  std::optional<RepeatSpread> oom_event;
};
// None for a cell run once.
[[nodiscard]] std::optional<CellSpread> cell_spread(const MatrixCell& cell);

// An unsigned number of a summary's object, 0 when it is missing or not one.
[[nodiscard]] std::uint64_t unsigned_field(const nlohmann::ordered_json& object, const char* name);

[[nodiscard]] nlohmann::ordered_json cell_json(const MatrixCell& cell);
[[nodiscard]] nlohmann::ordered_json matrix_json(const nlohmann::ordered_json& environment,
                                                 const nlohmann::ordered_json& config,
                                                 const std::vector<MatrixCell>& cells);

}  // namespace oomlab
