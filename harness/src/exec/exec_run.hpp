// `oomlab exec`: a program run on devices cut down to the budget. The ballast is taken in this
// process and held for the program's whole life, so the budget is all the program's processes
// may use on a device, their CUDA contexts included (what a smaller card would give them). Its
// memory is sampled into events.csv, its output scanned for a framework's OOM message, and the
// run recorded as any run is (summary.json), with everything given back on every way out.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/exec_devices.hpp"
#include "run/run_result.hpp"
#include "run/runner.hpp"

namespace oomlab {

// The exec shim's recording of PyTorch's memory history (a Python program that imports torch).
struct SnapshotOptions {
  bool enabled = true;                       // --no-snapshot turns it off
  bool python_stacks = false;                // --snapshot-stacks python; none by default
  std::optional<std::uint64_t> max_entries;  // --snapshot-entries; PyTorch's default without
  // A run a search predicts from: its framework's ProgramLog::recording is told so.
  bool predicting = false;
  // Where the snapshots go: empty, the run folder (or, without one, a temporary folder removed
  // at the end); a search's trials name one so that the first run's snapshot outlives the run.
  std::filesystem::path folder;
};

struct ExecConfig {
  std::vector<std::string> command;
  BudgetRequest budget{.kind = BudgetRequest::Kind::all};  // on each device
  // --budgets: a device's own budget (by oomlab's device index), over `budget` for it.
  std::map<int, BudgetRequest> device_budgets;
  std::optional<std::chrono::milliseconds> timeout;
  // After SIGINT/SIGTERM, before SIGKILL; and after a rank's OOM, how long no output and no
  // device's memory moving make the other ranks' wait a hang that is ended.
  std::chrono::milliseconds grace{5'000};
  std::chrono::microseconds interval{5'000};  // between samples
  std::filesystem::path folder;  // events.csv, stdout.txt, stderr.txt; empty: none written
  int out_fd = 1;                // where its output goes on (-1: nowhere)
  int err_fd = 2;
  bool guardian = true;  // its group ended should oomlab be killed
  std::optional<Environment> environment;
  // Variables set (or replaced) in the program's environment: --check-remedy's
  // PYTORCH_CUDA_ALLOC_CONF.
  std::vector<std::pair<std::string, std::string>> variables;
  const std::atomic<bool>* stop = nullptr;
  std::function<void(std::string_view)> notice;
  SnapshotOptions snapshot;
  // What the program's environment gains beyond CUDA_VISIBLE_DEVICES and the shim's (fit: the
  // value tried, OOMLAB_FIT_<NAME>).
  std::vector<std::pair<std::string, std::string>> program_environment;
};

// How long the driver may take to give a finished program's memory back before the shortfall is
// called a leak.
inline constexpr std::chrono::seconds kProgramReleaseWait{10};

// Throws Error(usage) when the budget cannot be met or the program cannot be started (checked
// before any memory is taken) and Error(device) when the ballast is refused; how the program
// ended is the result's outcome.
[[nodiscard]] RunResult run_exec(const ExecConfig& config, ExecDevices& devices);

// Set in every program's environment over any value it had: NVLink multicast (NVLS) off in
// NCCL and NVSHMEM, and in each framework that has its own switch
// (Framework::program_environment). Its buffers lie outside every allocator and the budget's
// account, and shared machines may not allow it.
inline constexpr std::array<std::pair<const char*, const char*>, 2> kMulticastOff{{
    {"NCCL_NVLS_ENABLE", "0"},
    {"NVSHMEM_DISABLE_NVLS", "1"},
}};

// A device's own rows of a run on several devices, in the run folder: "events-gpu1.csv".
[[nodiscard]] std::string device_events_file(int index);

// The program's command as one line, each word quoted as a shell would need.
[[nodiscard]] std::string command_line(const std::vector<std::string>& command);

}  // namespace oomlab
