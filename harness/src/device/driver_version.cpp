// NVML through dlopen, the driver version with a /proc fallback, and the host name.
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>

#include "device/device.hpp"
#include "device/nvml.hpp"

namespace oomlab {

namespace {

// The few NVML entry points used, declared here rather than from nvml.h (not needed to build).
struct NvmlMemoryV1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlDevice = struct NvmlDeviceOpaque*;
using InitFn = int (*)();
using VersionFn = int (*)(char*, unsigned int);
using HandleByUuidFn = int (*)(const char*, NvmlDevice*);
using MemoryInfoFn = int (*)(NvmlDevice, NvmlMemoryV1*);
// Called with no buffer, it only counts: the process structure's layout never matters.
using ProcessesFn = int (*)(NvmlDevice, unsigned int*, void*);
constexpr int kNvmlInsufficientSize = 7;
// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it (NVML 11 and later).
struct NvmlProcessInfoV3 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using ProcessListFn = int (*)(NvmlDevice, unsigned int*, NvmlProcessInfoV3*);
// What NVML reports when a process's usage is not known (NVML_VALUE_NOT_AVAILABLE).
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

template <typename Fn>
Fn symbol(void* library, const char* name) {
  return library == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(library, name));
}

}  // namespace

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ..." -> "580.159.04"
std::optional<std::string> driver_version_from_proc() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(file, line)) return std::nullopt;
  const auto at = line.find("Kernel Module");
  if (at == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(at + std::string_view("Kernel Module").size()));
  std::string version;
  rest >> version;
  if (version.empty()) return std::nullopt;
  return version;
}

Nvml::Nvml() : library_(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
  const auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  ready_ = init != nullptr && init() == 0;
}

Nvml::~Nvml() {
  if (ready_) {
    if (const auto shutdown = symbol<InitFn>(library_, "nvmlShutdown")) shutdown();
  }
  if (library_ != nullptr) dlclose(library_);
}

std::optional<std::string> Nvml::driver_version() const {
  const auto version = symbol<VersionFn>(library_, "nvmlSystemGetDriverVersion");
  if (!ready_ || version == nullptr) return std::nullopt;
  std::array<char, 96> buffer{};
  if (version(buffer.data(), buffer.size()) != 0) return std::nullopt;
  return std::string(buffer.data());
}

std::optional<Nvml::Memory> Nvml::memory(const std::string& uuid) const {
  const auto by_uuid = symbol<HandleByUuidFn>(library_, "nvmlDeviceGetHandleByUUID");
  const auto memory_info = symbol<MemoryInfoFn>(library_, "nvmlDeviceGetMemoryInfo");
  if (!ready_ || by_uuid == nullptr || memory_info == nullptr) return std::nullopt;
  NvmlDevice device = nullptr;
  NvmlMemoryV1 memory{};
  if (by_uuid(uuid.c_str(), &device) != 0 || memory_info(device, &memory) != 0) return std::nullopt;
  return Memory{memory.total, memory.free};
}

std::optional<unsigned> Nvml::compute_processes(const std::string& uuid) const {
  const auto by_uuid = symbol<HandleByUuidFn>(library_, "nvmlDeviceGetHandleByUUID");
  const auto processes = symbol<ProcessesFn>(library_, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!ready_ || by_uuid == nullptr || processes == nullptr) return std::nullopt;
  NvmlDevice device = nullptr;
  if (by_uuid(uuid.c_str(), &device) != 0) return std::nullopt;
  unsigned int count = 0;
  const int status = processes(device, &count, nullptr);
  if (status != 0 && status != kNvmlInsufficientSize) return std::nullopt;
  return count;
}

std::optional<std::vector<Nvml::ProcessMemory>> Nvml::process_memory(
    const std::string& uuid) const {
  const auto by_uuid = symbol<HandleByUuidFn>(library_, "nvmlDeviceGetHandleByUUID");
  const auto list = symbol<ProcessListFn>(library_, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!ready_ || by_uuid == nullptr || list == nullptr) return std::nullopt;
  NvmlDevice device = nullptr;
  if (by_uuid(uuid.c_str(), &device) != 0) return std::nullopt;
  // Processes come and go between the count and the list: asked again with room to spare.
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned int count = 0;
    int status = list(device, &count, nullptr);
    if (status != 0 && status != kNvmlInsufficientSize) return std::nullopt;
    std::vector<NvmlProcessInfoV3> infos(count + 8);
    count = static_cast<unsigned int>(infos.size());
    status = list(device, &count, infos.data());
    if (status == kNvmlInsufficientSize) continue;
    if (status != 0) return std::nullopt;
    std::vector<ProcessMemory> result;
    for (unsigned int i = 0; i < count; ++i) {
      const unsigned long long used = infos[i].used_gpu_memory;
      result.push_back({infos[i].pid, used == kNvmlValueNotAvailable ? 0 : used});
    }
    return result;
  }
  return std::nullopt;
}

std::optional<std::string> read_driver_version() {
  const Nvml nvml;
  if (auto v = nvml.driver_version()) return v;
  return driver_version_from_proc();
}

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

}  // namespace oomlab
