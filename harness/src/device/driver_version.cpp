// The driver version without linking NVML: dlopen it, as DESIGN.md asks, so the binary starts
// on machines without a driver.
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <sstream>

#include "device/device.hpp"

namespace oomlab {

namespace {

std::optional<std::string> driver_version_from_nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  using InitFn = int (*)();
  using VersionFn = int (*)(char*, unsigned int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
  std::optional<std::string> result;
  if (init != nullptr && version != nullptr && shutdown != nullptr && init() == 0) {
    std::array<char, 96> buffer{};
    if (version(buffer.data(), buffer.size()) == 0) result = std::string(buffer.data());
    shutdown();
  }
  dlclose(lib);
  return result;
}

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

}  // namespace

std::optional<std::string> read_driver_version() {
  if (auto v = driver_version_from_nvml()) return v;
  return driver_version_from_proc();
}

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

}  // namespace oomlab
