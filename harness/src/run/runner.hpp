// A run, end to end: resolve the allocator and the budget, hold the ballast, build
// Recording(backend), drive the scenario, then free everything (ballast last) on every exit
// path and check that the device has its memory back.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "oomlab/params.hpp"
#include "oomlab/units.hpp"
#include "run/run_result.hpp"

namespace oomlab {

struct BudgetRequest {
  enum class Kind : std::uint8_t { bytes, percent, all };
  Kind kind = Kind::bytes;
  std::uint64_t bytes = 8_GiB;
  double percent = 0.0;  // of the device's total memory
};

struct ProgressSnapshot {
  std::uint64_t events = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t budget_bytes = 0;
  std::uint64_t step = 0;
  std::string phase;
  double elapsed_s = 0.0;
};

struct RunConfig {
  std::string scenario;
  Params params;  // complete: the scenario's defaults with the user's values over them
  std::uint64_t seed = 1;
  std::string allocator = "auto";
  Params allocator_options;
  BudgetRequest budget;
  int device = 0;
  bool probe = true;
  std::filesystem::path events_csv;  // empty: the events are not written
  const std::atomic<bool>* stop = nullptr;
  std::function<void(std::string_view)> notice;           // one-line notices
  std::function<void(const ProgressSnapshot&)> progress;  // called from another thread
  std::chrono::milliseconds progress_interval{250};
};

// Throws Error(usage) for a bad request (unknown scenario, a budget the model cannot hold),
// Error(no_device) when the chosen allocator has no device; anything that goes wrong once the
// run has started is its outcome ("error"), with everything freed.
[[nodiscard]] RunResult run_scenario(const RunConfig& config);

// "async" where a device is usable, otherwise "sim"; `why` gets the reason for sim.
[[nodiscard]] std::string resolve_auto_allocator(const Environment& env, std::string* why);

}  // namespace oomlab
