// A run, end to end: resolve the allocator and the budget, hold the ballast, build
// Recording(backend), drive the scenario, then free everything on every exit path (the ballast
// after the scenario's blocks and the backend) and check that the device has its memory back.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "allocators/backends.hpp"
#include "device/cards.hpp"
#include "oomlab/params.hpp"
#include "oomlab/units.hpp"
#include "run/run_result.hpp"
#include "run/verify_mode.hpp"

namespace oomlab {

// What the user asked the budget to be: a size, a share of the device's total memory, all of
// its free memory, or a named card's (device/cards.hpp). Resolved against the device (or the
// modelled card) when the run starts.
struct BudgetRequest {
  enum class Kind : std::uint8_t { bytes, percent, all, card };
  Kind kind = Kind::bytes;
  Bytes bytes{8_GiB};
  Percent percent{};
  const Card* card = nullptr;
};

// What the progress line shows; read on another thread while the run goes on.
struct ProgressSnapshot {
  std::uint64_t events = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t budget_bytes = 0;
  std::uint64_t step = 0;
  std::string phase;
  double elapsed_s = 0.0;
  // Before the run: its input (a trace) being read.
  bool loading = false;
  std::uint64_t input_read_bytes = 0;   // 0 where its reader does not say
  std::uint64_t input_total_bytes = 0;  // the file's size
};

// Everything a run needs, typed: the CLI builds it from the user's text.
struct RunConfig {
  std::string scenario;  // a registered scenario's name (the CLI's); unused when `trace` is set
  Params params;         // complete: the scenario's defaults with the user's values over them
  // A typed replay: this trace, already read, replayed by the registry's trace player with
  // `params` (its parameters; their trace is not read again). Null: `scenario` by name.
  std::shared_ptr<const trace::Trace> trace;
  std::uint64_t seed = 1;
  BackendKind allocator = BackendKind::automatic;
  Params allocator_options;  // the backend's options (ignored for automatic: its pick's defaults)
  BudgetRequest budget;
  int device = 0;
  bool probe = true;
  VerifyMode verify = VerifyMode::sample;  // on real devices; the sim has nothing to check
  std::filesystem::path events_csv;        // empty: the events are not written
  std::optional<Environment> environment;  // probed already (saves a second probe)
  const std::atomic<bool>* stop = nullptr;
  // 0: none. Past it the run stops at its next event (outcome "timeout", everything freed);
  // if it has not ended `hang_grace` later, a call never returned: `on_hung` gets the record
  // so far, on the watchdog's thread, and should end the process (the CLI writes the record
  // and exits); without one the watchdog only waits.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds hang_grace{10'000};
  std::function<void(const RunResult&)> on_hung;
  std::function<void(std::string_view)> notice;           // one-line notices
  std::function<void(const ProgressSnapshot&)> progress;  // called from another thread
  std::chrono::milliseconds progress_interval{250};
  // The notice of the model `auto` became for the trace's recorded allocator (the CLI's pick, by
  // the trace's head or --format): said once the trace is read, not before a refusal of it.
  std::string allocator_notice;
};

// Throws Error(usage) for a bad request (unknown scenario, parameters that cannot run together,
// a budget the model cannot hold), Error(no_device) when the chosen allocator has no device;
// anything that goes wrong once the run has started is its outcome ("error"), with everything
// freed.
[[nodiscard]] RunResult run_scenario(const RunConfig& config);

}  // namespace oomlab
