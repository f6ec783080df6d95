// What `oomlab matrix` will run, checked before any cell starts: the cells (scenario x allocator),
// each with the parameters its scenario declares and the key `compare` matches it by, and the
// table and matrix.json written from the cells' results.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "reports/matrix/matrix_json.hpp"

namespace oomlab::cli {

struct PlannedCell {
  std::string id;  // its folder: "<scenario>-<allocator>"
  std::string scenario;
  std::string allocator;  // as given, options included
  int device = 0;
  std::vector<std::string> params;  // KEY=VALUE, only the ones this scenario declares
  std::string command;              // a program's cell (--exec): run through /bin/sh -c
  nlohmann::ordered_json key;
};

struct MatrixPlan {
  std::string self;  // this binary, run once per cell
  std::vector<PlannedCell> cells;
  std::size_t scenario_count = 0;
  std::size_t allocator_count = 0;
  std::vector<int> devices;
  std::string budget;
  std::string seed;
  std::string verify;
  std::uint32_t repeat = 1;
  std::chrono::milliseconds timeout{600'000};
  std::filesystem::path out;
  std::filesystem::path directory;  // the working directory every cell (and program) runs in
  nlohmann::ordered_json environment;
  nlohmann::ordered_json config;
};

// --devices: "0,1" or "all" (every device found; 0 when none is, so that the run says why).
// `flag` names the option in its errors.
[[nodiscard]] std::vector<int> choose_devices(const std::string& text, const Environment& env,
                                              std::string_view flag = "--devices");

// Throws Error(usage) naming the flag for anything wrong; notes (skipped scenarios) go to `err`.
[[nodiscard]] MatrixPlan plan_matrix(const MatrixOptions& options, std::ostream& err);

// A finished child's outcome: timeout, interrupted, crash (a signal, or an exit code that is not
// oomlab's), error (oomlab's own failure exits, or a summary whose run failed a check), or the
// summary's own outcome.
[[nodiscard]] std::string cell_outcome(const ChildResult& child, const nlohmann::json& summary);

void write_matrix_json(const MatrixPlan& plan, const std::vector<MatrixCell>& cells);
// One line for a cell: "oom at 6.02 GiB live (request 1 GiB, fragmentation)", "crash: SIGABRT ...".
[[nodiscard]] std::string cell_line(const MatrixCell& cell);
[[nodiscard]] std::string matrix_table(const std::vector<MatrixCell>& cells);

}  // namespace oomlab::cli
