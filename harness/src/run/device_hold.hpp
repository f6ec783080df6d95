// A run on a device: the session, the verify counter, the ballast that leaves the budget free,
// and on the way out everything freed and device free memory checked against what it was.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "device/device.hpp"
#include "kernels/kernels.hpp"
#include "oomlab/allocator.hpp"
#include "run/run_plan.hpp"

namespace oomlab {

// What a run holds on a device. Members are destroyed in reverse order: the ballast goes after
// everything the run allocated (those are freed before this is destroyed), then the verify
// counter, then the stream; counter and stream were made before free memory was measured.
struct DeviceHold {
  std::optional<DeviceSession> session;
  std::optional<kernels::MismatchCounter> counter;
  std::optional<Ballast> ballast;
  std::uint64_t free_before = 0;
  std::uint64_t free_at_start = 0;  // after the ballast
  std::uint64_t budget_bytes = 0;
};

// Opens the device, resolves the budget against its free memory, takes the ballast (retried when
// another process takes memory in between) and makes the plan's backend on it. Records the
// budget, the ballast and the cap in `result`.
[[nodiscard]] std::unique_ptr<Allocator> place_on_device(const RunConfig& config,
                                                         const RunPlan& plan, DeviceHold& hold,
                                                         RunResult& result);

// Frees the ballast, then checks free memory is back (waiting for the driver's late release,
// telling another process's share and managed memory's own pages from a harness leak). `memory`
// is the backend the run's memory came from (memory_source: torch over managed is managed).
void release_device(const RunConfig& config, BackendKind memory, DeviceHold& hold,
                    RunResult& result);

}  // namespace oomlab
