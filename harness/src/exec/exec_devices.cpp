#include "exec/exec_devices.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include "device/nvml.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {

std::optional<pid_t> parent_of(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  char state = 0;
  long parent = 0;
  if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &parent) != 2) return std::nullopt;
  return static_cast<pid_t>(parent);
}

// Real devices: a DeviceSession and a Ballast each; readings from NVML, which needs no context.
class CudaExecDevices final : public ExecDevices {
 public:
  CudaExecDevices(const std::vector<int>& indices, const Environment& environment) {
    for (const int index : indices) {
      const auto it = std::find_if(environment.devices.begin(), environment.devices.end(),
                                   [&](const DeviceFacts& f) { return f.index == index; });
      if (it == environment.devices.end()) {
        throw Error(ErrorKind::no_device,
                    fmt::format("there is no CUDA device {} ({} found{})", index,
                                environment.devices.size(),
                                environment.cuda_problem.empty()
                                    ? std::string()
                                    : fmt::format(": {}", environment.cuda_problem)));
      }
      facts_.push_back(*it);
    }
    for (const DeviceFacts& f : facts_)
      sessions_.push_back(std::make_unique<DeviceSession>(f.index));
    ballasts_.resize(facts_.size());
  }
  ~CudaExecDevices() override { release(); }
  CudaExecDevices(const CudaExecDevices&) = delete;
  CudaExecDevices& operator=(const CudaExecDevices&) = delete;
  CudaExecDevices(CudaExecDevices&&) = delete;
  CudaExecDevices& operator=(CudaExecDevices&&) = delete;

  [[nodiscard]] const std::vector<DeviceFacts>& facts() const override { return facts_; }
  [[nodiscard]] std::uint64_t free_bytes(std::size_t i) override {
    sessions_.at(i)->trim_default_pool();
    sessions_.at(i)->synchronize();
    return sessions_.at(i)->free_bytes();
  }
  void hold(std::size_t i, std::uint64_t bytes) override {
    static_cast<void>(sessions_.at(i)->free_bytes());  // makes device i current
    ballasts_.at(i).reset();
    if (bytes > 0) ballasts_.at(i) = std::make_unique<Ballast>(bytes);
  }
  void release() override {
    for (std::size_t i = 0; i < ballasts_.size(); ++i) {
      if (!ballasts_[i]) continue;
      static_cast<void>(sessions_[i]->free_bytes());
      ballasts_[i].reset();
    }
  }
  [[nodiscard]] DeviceReading read(std::size_t i, pid_t program) override {
    DeviceReading reading;
    if (const auto memory = nvml_.memory(facts_.at(i).uuid)) reading.free_bytes = memory->free;
    const auto processes = nvml_.process_memory(facts_[i].uuid);
    if (!processes) return reading;
    // This process holds a context on the device: if NVML does not list it, its pids are
    // another namespace's and cannot be matched.
    bool self_listed = false;
    std::uint64_t program_bytes = 0;
    for (const Nvml::ProcessMemory& p : *processes) {
      const auto pid = static_cast<pid_t>(p.pid);
      self_listed = self_listed || pid == ::getpid();
      if (program > 0 && belongs(pid, program)) program_bytes += p.used_bytes;
    }
    if (self_listed) reading.program_bytes = program_bytes;
    return reading;
  }

 private:
  bool belongs(pid_t pid, pid_t program) {
    const auto known = lineage_.find(pid);
    if (known != lineage_.end()) return known->second;
    const bool result = descends_from(pid, program);
    lineage_[pid] = result;
    return result;
  }

  std::vector<DeviceFacts> facts_;
  std::vector<std::unique_ptr<DeviceSession>> sessions_;
  std::vector<std::unique_ptr<Ballast>> ballasts_;
  Nvml nvml_;
  std::map<pid_t, bool> lineage_;  // the answer for a pid does not change while it lives
};

}  // namespace

bool descends_from(pid_t pid, pid_t root) {
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == root) return true;
    const std::optional<pid_t> parent = parent_of(pid);
    if (!parent) return false;
    pid = *parent;
  }
  return pid == root;
}

std::unique_ptr<ExecDevices> open_exec_devices(const std::vector<int>& indices) {
  const Environment environment = probe_environment();
  if (!environment.cuda_built || environment.devices.empty()) {
    throw Error(ErrorKind::no_device,
                fmt::format("exec needs a CUDA device: {}", environment.cuda_problem.empty()
                                                                ? "none was found"
                                                                : environment.cuda_problem));
  }
  return std::make_unique<CudaExecDevices>(indices, environment);
}

}  // namespace oomlab
