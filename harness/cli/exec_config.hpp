// exec's and frontier exec's flags made typed (the CLI is the one place strings are parsed).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/signals.hpp"
#include "device/device.hpp"
#include "exec/exec_devices.hpp"
#include "exec/exec_run.hpp"

namespace oomlab::cli {

// Throws Error(usage) naming the flag; a program that is not there is refused here, before any
// device is touched.
[[nodiscard]] ExecConfig exec_config_from(const ExecOptions& options);
// --budgets as each device's budget, refused (Error(usage)) with --budget, a repeated device or
// a bad size; empty without it.
[[nodiscard]] std::map<int, BudgetRequest> device_budgets_from(const ExecOptions& options);
// --devices (each checked against --budgets), else the devices --budgets names, else --device.
[[nodiscard]] std::vector<int> exec_devices_from(const ExecOptions& options,
                                                 const Environment& environment);

// The searches' GPU flags together (fit exec, frontier exec): --gpus-per-trial only with --gpus,
// and --gpus not with --devices (a program on several GPUs takes its group from --gpus).
// Error(usage) naming the flag; before anything is written.
void check_gpu_flags(const ExecOptions& options);

// --gpus-per-trial N: how many of --gpus' `gpus` each trial's program spans (its group, in the
// order given: --gpus 0,1,2,3 --gpus-per-trial 2 runs trials on 0,1 and on 2,3 at once).
// Error(usage) for 0, a bad number, or a count --gpus is not a multiple of.
[[nodiscard]] std::size_t gpus_per_trial(const ExecOptions& options, std::size_t gpus);

// What a search over a program holds while its runs go (frontier exec, fit exec, frontier exec
// --from): Ctrl-C as `config`'s stop, the console's notices, the environment probed into it and
// the devices opened with their ballasts. close() gives the devices back before the answer.
class ExecSearchSession {
 public:
  // `gpus` (--gpus, "" none): the GPUs trials run on at once, each opened on its own.
  ExecSearchSession(const ExecOptions& options, ExecConfig& config, Console& console,
                    const std::string& gpus = "");
  [[nodiscard]] ExecDevices& devices() { return *devices_.front(); }
  // A trial's devices on each GPU of --gpus (one: those of --device or --devices).
  [[nodiscard]] std::vector<ExecDevices*> gpus() const;
  void close() { devices_.clear(); }

 private:
  StopOnSignal signals_;
  std::vector<std::unique_ptr<ExecDevices>> devices_;
};

}  // namespace oomlab::cli
