// The machine a run happens on, and a run's hold on one device. Free of CUDA types, so that the
// same interface builds with CUDA (cuda_device.cpp) and without (no_cuda_device.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/allocator.hpp"

namespace oomlab {

struct DeviceFacts {
  int index = 0;
  std::string name;
  std::string uuid;                // "GPU-8c2d…", as nvidia-smi prints it
  std::string compute_capability;  // "9.0"
  std::string pci_bus_id;
  std::uint64_t total_bytes = 0;
  std::optional<std::uint64_t> free_bytes;  // from NVML; unknown without it
  // NVML's total: the driver's reserve included, which the CUDA runtime's total leaves out.
  std::optional<std::uint64_t> nvml_total_bytes;
  int multiprocessors = 0;
  bool memory_pools = false;  // cudaMallocAsync pools
  bool managed_memory = false;
  bool concurrent_managed_access = false;
  std::uint64_t vmm_granularity = 0;  // cuMemGetAllocationGranularity, 0 when unknown
  bool operator==(const DeviceFacts&) const = default;
};

struct Environment {
  bool cuda_built = false;                    // this binary was built with CUDA
  std::string cuda_problem;                   // why no device is usable, empty when one is
  std::optional<std::string> driver_version;  // "580.159.04"
  int cuda_driver_api = 0;                    // cudaDriverGetVersion, 0 when there is no driver
  int cuda_runtime = 0;                       // cudaRuntimeGetVersion (the runtime linked in)
  std::vector<DeviceFacts> devices;
  std::string host;
};

// Never throws: what cannot be found is left empty and said in cuda_problem. Creates no CUDA
// context on any device (free memory comes from NVML).
[[nodiscard]] Environment probe_environment();
// The host alone, for a simulated run: no CUDA or NVML call (initialising either costs 100 ms
// or more, ten times the whole of a small sim run); the driver version comes from /proc.
[[nodiscard]] Environment probe_host_environment();
// The driver's version string through NVML (dlopen'ed), else /proc/driver/nvidia/version.
[[nodiscard]] std::optional<std::string> read_driver_version();
// The version in /proc/driver/nvidia/version alone (no NVML), or nothing.
[[nodiscard]] std::optional<std::string> driver_version_from_proc();
[[nodiscard]] std::string host_name();
// "cudaErrorMemoryAllocation" for 2: the name CUDA gives an error code.
[[nodiscard]] std::string cuda_error_name(int code);

// A run's hold on one device: makes it current and gives the run a stream of its own.
// Throws Error(no_device) when the device cannot be used.
class DeviceSession {
 public:
  explicit DeviceSession(int device);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;
  DeviceSession(DeviceSession&&) = delete;
  DeviceSession& operator=(DeviceSession&&) = delete;

  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] Stream stream() const { return stream_; }
  [[nodiscard]] std::uint64_t free_bytes() const;
  [[nodiscard]] std::uint64_t total_bytes() const;
  void synchronize() const;
  // Another stream on this device, destroyed with the session.
  [[nodiscard]] Stream create_stream();
  // Gives back what the device's default pool caches, so that free memory is what it says.
  void trim_default_pool() const;

 private:
  int device_;
  Stream stream_;
  std::vector<Stream> more_streams_;
};

// Device memory held for the whole run so that the driver itself says "out of memory" at the
// budget. Freed last (destructor).
class Ballast {
 public:
  explicit Ballast(std::uint64_t bytes);  // throws Error(device) when cudaMalloc refuses
  ~Ballast();  // NOLINT(performance-trivially-destructible): cudaFree, in the CUDA build
  Ballast(const Ballast&) = delete;
  Ballast& operator=(const Ballast&) = delete;
  Ballast(Ballast&&) = delete;
  Ballast& operator=(Ballast&&) = delete;

  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }

 private:
  [[maybe_unused]] void* ptr_ = nullptr;  // unused in a build without CUDA
  std::uint64_t bytes_ = 0;
};

}  // namespace oomlab
