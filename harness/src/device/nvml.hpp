// NVML through dlopen (no link-time NVML: the binary must start without a driver): the driver's
// version string and a device's memory without creating a CUDA context on it, which on a shared
// multi-GPU machine would take memory from other jobs' GPUs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlab {

class Nvml {
 public:
  struct Memory {
    std::uint64_t total = 0;
    std::uint64_t free = 0;
  };

  Nvml();  // loads and initialises NVML when it is there; never throws
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  Nvml(Nvml&&) = delete;
  Nvml& operator=(Nvml&&) = delete;

  [[nodiscard]] bool available() const { return ready_; }
  [[nodiscard]] std::optional<std::string> driver_version() const;
  // By the device's UUID ("GPU-…"), since NVML's and CUDA's device orders can differ.
  [[nodiscard]] std::optional<Memory> memory(const std::string& uuid) const;
  // Processes with a CUDA context on the device, this one included (none: NVML cannot say, as
  // in some containers).
  [[nodiscard]] std::optional<unsigned> compute_processes(const std::string& uuid) const;
  // Those processes and the device memory each uses, its CUDA context included. Their pids are
  // the host's: in a container with its own pid namespace they match nothing here.
  struct ProcessMemory {
    unsigned pid = 0;
    std::uint64_t used_bytes = 0;
  };
  [[nodiscard]] std::optional<std::vector<ProcessMemory>> process_memory(
      const std::string& uuid) const;

 private:
  void* library_ = nullptr;
  bool ready_ = false;
};

}  // namespace oomlab
