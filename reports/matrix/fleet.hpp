// `oomlab compare --fleet`: the results of many runners side by side, one row per cell and one
// column per environment (GPU model, driver, CUDA runtime, and for a program cell its
// frameworks), each environment's cell judged against the previous version's on the same GPU
// model with compare's verdicts and tolerance. Everything here is typed: the CLI reads the flags.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/matrix/compare.hpp"

namespace oomlab {

struct FleetEnvironment {
  std::string gpu;                   // the device's name; "none (simulated)" on the sim
  std::string driver;                // "580.159.04"; "unknown"
  std::string cuda_runtime;          // "13.0"; "unknown"
  std::string framework;             // a program cell's frameworks_text(); "" for other cells
  std::vector<std::string> runners;  // the inputs that ran in it, in the order given
  // "driver 580.159.04 · CUDA 13.0 · torch 2.11.0": what differs between versions of one GPU.
  [[nodiscard]] std::string versions() const;
  // The GPU model, then versions().
  [[nodiscard]] std::string label() const;
};

// One comparison of a row's cell in environment `to` with the one before it in `from`.
struct FleetStep {
  std::size_t row = 0;
  std::optional<std::size_t> from;  // none: the first cell of its row on this GPU model
  std::size_t to = 0;
  CellVerdict verdict;  // `missing`: the row is in `from` and in none of `to`'s runner's cells
  bool same_environment = false;  // another runner of the same environment as `from`
};

struct FleetRow {
  nlohmann::json key;  // what cells match by: compare's key, a program cell's without its command
  std::string name;    // "fragmentation/async @ 4GiB", "exec:train/exec @ 4GiB"
  std::vector<std::optional<CompareCell>> cells;  // one a environment (its first runner's)
};

struct Fleet {
  double tolerance = 0.02;
  std::vector<std::string> inputs;
  std::vector<FleetEnvironment> environments;  // by GPU model, then driver, CUDA, framework
  std::vector<FleetRow> rows;                  // in the order first seen
  std::vector<FleetStep> steps;                // by row, then environment

  [[nodiscard]] std::size_t count(Verdict verdict) const;
  [[nodiscard]] std::size_t regressions() const;
  // The step that judged row `row`'s cell in `environment` (not another runner's), or null.
  [[nodiscard]] const FleetStep* step_at(std::size_t row, std::size_t environment) const;
};

// Every input is one runner's matrix or run. Throws nothing of its own: the inputs are read.
[[nodiscard]] Fleet compare_fleet(const std::vector<CompareInput>& inputs, double tolerance);

// "REGRESSION: 2 of 40 comparisons (1 earlier-oom, 1 new-failure)" or "no regression in 40
// comparisons across 6 environments".
[[nodiscard]] std::string fleet_conclusion(const Fleet& fleet);
// "incomplete: 2 cells missing from a newer version (...)" or "".
[[nodiscard]] std::string fleet_incomplete(const Fleet& fleet);
// "exec:train @ 4GiB on NVIDIA H100: driver 570.86.15 → 580.159.04: earlier-oom: ..."
[[nodiscard]] std::string fleet_step_text(const Fleet& fleet, const FleetStep& step);

// The writers (fleet_writers.cpp).
[[nodiscard]] std::string fleet_table(const Fleet& fleet);
[[nodiscard]] std::string fleet_markdown(const Fleet& fleet);
[[nodiscard]] nlohmann::ordered_json fleet_json(const Fleet& fleet);
[[nodiscard]] std::vector<JUnitCase> fleet_junit_cases(const Fleet& fleet);

}  // namespace oomlab
