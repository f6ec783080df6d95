// Soak: one scenario run again and again in one process (`oomlab run --repeat N`), each cycle a
// whole run — its OOM, then everything freed — and, after each, what must have come back: the
// process's resident memory, the device's free memory, and the allocator's count of blocks
// (every allocation freed). A leak of any of them shows as a trend across cycles.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "run/runner.hpp"

namespace oomlab {

struct SoakCycle {
  Outcome outcome = Outcome::completed;
  std::uint64_t oom_live_bytes = 0;  // 0 without an OOM
  std::uint64_t events = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t rss_bytes = 0;     // the process's resident memory after the cycle
  std::optional<Cleanup> cleanup;  // real devices: free memory before and after the cycle
  double duration_ms = 0.0;
};

struct SoakResult {
  std::vector<SoakCycle> cycles;
  RunResult last;  // the last cycle's whole record
  std::uint64_t rss_before_bytes = 0;
  bool stopped = false;  // interrupted or timed out before the last cycle

  [[nodiscard]] std::size_t ooms() const;
  // Resident memory after the last cycle over what it was after the first tenth of the cycles
  // (the allocator's and the C library's own caches have settled by then).
  [[nodiscard]] std::int64_t rss_growth_bytes() const;
  // The largest shortfall of device free memory after a cycle (0 on the sim).
  [[nodiscard]] std::int64_t worst_device_shortfall_bytes() const;
  // Cycles that ended with blocks not freed (allocations - failed != frees).
  [[nodiscard]] std::size_t unbalanced_cycles() const;
};

// The process's resident memory now (VmRSS), 0 where /proc is not there.
[[nodiscard]] std::uint64_t resident_bytes();

// Runs `config` `cycles` times (events.csv, if asked for, of the first cycle only); `on_cycle(i,
// cycle)` after each (progress). Stops early when a cycle is interrupted or times out. Throws what
// run_scenario throws for a bad request.
[[nodiscard]] SoakResult soak(const RunConfig& config, std::uint32_t cycles,
                              const std::function<void(std::uint32_t, const SoakCycle&)>& on_cycle);

}  // namespace oomlab
