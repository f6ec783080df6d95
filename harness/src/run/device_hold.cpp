#include "run/device_hold.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "allocators/backends.hpp"
#include "device/nvml.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// How long a shortfall of device free memory after a run may take to disappear (the driver's late
// release) before it is reported as a harness leak.
constexpr std::chrono::seconds kLateReleaseWait{2};
constexpr int kBallastAttempts = 5;

// What the driver keeps back of the run's device when idle, as NVML said before the run.
std::uint64_t kept_back_here(const RunConfig& config, const RunResult& result) {
  for (const DeviceFacts& d : result.environment.devices) {
    if (d.index == config.device) return kept_back_bytes(&d);
  }
  return kept_back_bytes(nullptr);
}

}  // namespace

std::unique_ptr<Allocator> place_on_device(const RunConfig& config, const RunPlan& plan,
                                           DeviceHold& hold, RunResult& result) {
  const BackendKind kind = plan.kind;
  // torch over managed takes managed memory, and is held to the budget as managed is.
  const bool managed = memory_source(kind, plan.allocator_options) == BackendKind::managed;
  hold.session.emplace(config.device);
  hold.counter.emplace();
  kernels::preload();  // module memory now, not from the budget
  if (managed) settle_managed_memory(hold.session->stream());
  hold.session->trim_default_pool();
  hold.session->synchronize();
  // Another process can take memory between the reading and the ballast (several oomlab runs
  // started together on one GPU): the ballast is then refused, and the reading is taken again.
  for (int attempt = 1;; ++attempt) {
    hold.free_before = hold.session->free_bytes();
    result.budget_bytes = resolve_budget(
        config.budget, config.notice, result, hold.session->total_bytes(), hold.free_before,
        fmt::format("free on device {}", config.device), kept_back_here(config, result));
    if (!holds_ballast(kind, plan.allocator_options)) break;
    result.ballast_bytes = round_down(hold.free_before - result.budget_bytes, kDevicePageBytes);
    try {
      if (result.ballast_bytes > 0) hold.ballast.emplace(result.ballast_bytes);
      // Taken, but another process may have taken some of the budget in between.
      if (attempt == kBallastAttempts ||
          hold.session->free_bytes() + kDevicePageBytes >= result.budget_bytes)
        break;
      hold.ballast.reset();
      notify(config, result,
             fmt::format("device free memory fell under the budget as the ballast was taken "
                         "(another process?): reading it again ({} of {})",
                         attempt + 1, kBallastAttempts));
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    } catch (const Error& e) {
      // Only a refusal for want of memory is another process's doing; anything else is real.
      if (attempt == kBallastAttempts || !e.out_of_memory()) throw;
      notify(config, result,
             fmt::format("device free memory changed while the ballast was taken (another "
                         "process?): reading it again ({} of {})",
                         attempt + 1, kBallastAttempts));
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    }
  }
  hold.free_at_start = hold.session->free_bytes();
  if (managed) result.cap_bytes = managed_cap_bytes(result.budget_bytes);
  hold.budget_bytes = result.budget_bytes;
  return make_backend(kind, plan.allocator_options,
                      {.budget_bytes = hold.budget_bytes,
                       .device = config.device,
                       .stream = hold.session->stream(),
                       .recorded = plan.recorded ? &*plan.recorded : nullptr});
}

void release_device(const RunConfig& config, BackendKind memory, DeviceHold& hold,
                    RunResult& result) {
  try {
    hold.ballast.reset();
    if (memory == BackendKind::managed) settle_managed_memory(hold.session->stream());  // as before
    hold.session->trim_default_pool();
    hold.session->synchronize();
    result.cleanup = Cleanup{.device_free_before = hold.free_before,
                             .device_free_after = hold.session->free_bytes()};
    // The driver takes some memory back after the call that freed it returns (managed pages
    // above all): a shortfall is looked at again for a while before it is called a leak.
    const auto deadline = std::chrono::steady_clock::now() + kLateReleaseWait;
    while (result.cleanup->difference() > static_cast<std::int64_t>(kDevicePageBytes) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      result.cleanup->device_free_after = hold.session->free_bytes();
    }
    const std::int64_t missing = result.cleanup->difference();
    if (missing > static_cast<std::int64_t>(kDevicePageBytes) && result.device) {
      const Nvml nvml;
      const std::optional<unsigned> processes = nvml.compute_processes(result.device->uuid);
      if (processes && *processes > 1) result.cleanup->other_processes = *processes - 1;
    }
    const bool all_freed = result.allocations == result.frees;
    if (missing > static_cast<std::int64_t>(kDevicePageBytes) &&
        result.cleanup->other_processes > 0) {
      result.cleanup->not_counted =
          fmt::format("{} other process(es) use this device: the difference may be theirs",
                      result.cleanup->other_processes);
    } else if (missing > static_cast<std::int64_t>(kDevicePageBytes) &&
               memory == BackendKind::managed && all_freed) {
      // Measured on an H100: after some managed runs free memory stays 4 to 34 MiB lower for
      // seconds although every cudaFree returned and memcheck finds no allocation leaked: the
      // managed-memory driver keeps pages of its own.
      result.cleanup->not_counted =
          "managed memory: the driver keeps pages of its own after cudaFree (every block and the "
          "ballast were freed)";
    }
    if (!result.cleanup->not_counted.empty()) {
      notify(config, result,
             fmt::format("device free memory is {} lower than before the run, not counted as a "
                         "harness leak: {}",
                         format_bytes(static_cast<std::uint64_t>(missing)),
                         result.cleanup->not_counted));
    } else if (missing > static_cast<std::int64_t>(kDevicePageBytes)) {
      notify(config, result,
             fmt::format("harness leak: device free memory is {} lower than before the run, "
                         "{} after it ended: memory was left behind",
                         format_bytes(static_cast<std::uint64_t>(missing)), "2 s"));
    }
  } catch (const std::exception& e) {
    record_failure(result, "releasing the device", e.what());
  }
}

}  // namespace oomlab
