// The devices a program runs on under `oomlab exec`, each cut down to the budget by a ballast
// held in oomlab's own process for the program's whole life, and read while it runs: the
// device's free memory and the memory the program's processes use on it. An interface, so that
// the run itself is tested without a GPU.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "device/device.hpp"

namespace oomlab {

struct DeviceReading {
  std::uint64_t free_bytes = 0;
  // What the program (its processes, children included) uses on the device, its CUDA context
  // included; none when this process cannot tell its processes from others'.
  std::optional<std::uint64_t> program_bytes;
};

class ExecDevices {
 public:
  ExecDevices() = default;
  virtual ~ExecDevices() = default;
  ExecDevices(const ExecDevices&) = delete;
  ExecDevices& operator=(const ExecDevices&) = delete;
  ExecDevices(ExecDevices&&) = delete;
  ExecDevices& operator=(ExecDevices&&) = delete;

  [[nodiscard]] virtual const std::vector<DeviceFacts>& facts() const = 0;
  // Free memory on device `i` as the CUDA runtime counts it (what a ballast is sized from).
  [[nodiscard]] virtual std::uint64_t free_bytes(std::size_t i) = 0;
  // Takes `bytes` of device `i` and keeps it until release(); throws Error(device) when refused.
  virtual void hold(std::size_t i, std::uint64_t bytes) = 0;
  virtual void release() = 0;
  // Device `i` now, as the program sees it; called from the sampling thread, at 100 Hz or more.
  [[nodiscard]] virtual DeviceReading read(std::size_t i, pid_t program) = 0;
};

// The CUDA devices `indices` (oomlab's numbering), each with a CUDA context of oomlab's own.
// Throws Error(no_device) when one cannot be used (or this oomlab was built without CUDA).
[[nodiscard]] std::unique_ptr<ExecDevices> open_exec_devices(const std::vector<int>& indices);

// Whether `pid` is `root` or was started by it (through /proc): a program's helpers and workers.
[[nodiscard]] bool descends_from(pid_t pid, pid_t root);

}  // namespace oomlab
