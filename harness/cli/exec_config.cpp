#include "cli/exec_config.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cli/matrix_plan.hpp"
#include "cli/parse.hpp"
#include "exec/program.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {

namespace {

double seconds_of(std::string_view flag, const std::string& text, double least, double most) {
  double seconds = 0;
  try {
    seconds = parse_real(text);
  } catch (const Error& e) {
    throw_usage(fmt::format("{}: {}", flag, e.what()));
  }
  if (!(seconds >= least && seconds <= most)) {
    throw_usage(
        fmt::format("{}: '{}' is not a number of seconds from {} to {}", flag, text, least, most));
  }
  return seconds;
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1e3));
}

SnapshotOptions snapshot_options_from(const ExecOptions& o) {
  SnapshotOptions snapshot{.enabled = !o.no_snapshot};
  if (o.snapshot_stacks != "none" && o.snapshot_stacks != "python") {
    throw_usage(fmt::format("--snapshot-stacks: '{}' is not none or python", o.snapshot_stacks));
  }
  snapshot.python_stacks = o.snapshot_stacks == "python";
  if (o.snapshot_entries.empty()) return snapshot;
  std::uint64_t entries = 0;
  try {
    entries = parse_unsigned(o.snapshot_entries);
  } catch (const Error& e) {
    throw_usage(fmt::format("--snapshot-entries: {}", e.what()));
  }
  if (entries < 1 || entries > (1ULL << 40)) {
    throw_usage(fmt::format("--snapshot-entries: '{}' is not a number of entries from 1 to 2^40",
                            o.snapshot_entries));
  }
  snapshot.max_entries = entries;
  return snapshot;
}

std::vector<std::string> comma_parts(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    parts.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

}  // namespace

std::map<int, BudgetRequest> device_budgets_from(const ExecOptions& o) {
  std::map<int, BudgetRequest> budgets;
  if (o.budgets.empty()) return budgets;
  if (o.budget_given) {
    throw_usage(
        "--budget and --budgets: give one (--budget is the same on every device, --budgets "
        "each device's own)");
  }
  for (const std::string& part : comma_parts(o.budgets)) {
    const std::size_t equals = part.find('=');
    if (equals == std::string::npos) {
      throw_usage(fmt::format("--budgets: '{}' is not DEVICE=BUDGET (0=20GiB,1=24GiB)", part));
    }
    int device = 0;
    try {
      device = parse_device_index(part.substr(0, equals));
    } catch (const Error& e) {
      throw_usage(fmt::format("--budgets: '{}': {}", part, e.what()));
    }
    BudgetRequest budget;
    try {
      budget = parse_budget(part.substr(equals + 1));
    } catch (const Error& e) {
      throw_usage(fmt::format("--budgets: '{}': {}", part, e.what()));
    }
    if (!budgets.emplace(device, budget).second)
      throw_usage(fmt::format("--budgets: device {} is given twice", device));
  }
  return budgets;
}

ExecConfig exec_config_from(const ExecOptions& o) {
  if (o.command.empty()) {
    throw_usage(
        "exec: no program to run: put it after '--' (oomlab exec --budget 24GiB -- python "
        "train.py)");
  }
  if (!find_program(o.command.front())) {
    throw_usage(fmt::format("exec: cannot run '{}': no such executable file{}", o.command.front(),
                            o.command.front().find('/') == std::string::npos ? " on PATH" : ""));
  }
  ExecConfig config;
  config.command = o.command;
  try {
    config.budget = parse_budget(o.budget);
  } catch (const Error& e) {
    throw_usage(fmt::format("--budget: {}", e.what()));
  }
  if (!o.timeout.empty())
    config.timeout = millis(seconds_of("--timeout", o.timeout, 0.001, 7 * 86400.0));
  config.grace = millis(seconds_of("--grace", o.grace, 0.0, 600.0));
  std::uint64_t interval = 0;
  try {
    interval = parse_unsigned(o.interval);
  } catch (const Error& e) {
    throw_usage(fmt::format("--interval: {}", e.what()));
  }
  if (interval < 1 || interval > 1000)
    throw_usage(fmt::format("--interval: '{}' is not a number of ms from 1 to 1000", o.interval));
  config.interval = std::chrono::microseconds(interval * 1000);
  config.snapshot = snapshot_options_from(o);
  config.device_budgets = device_budgets_from(o);
  return config;
}

std::vector<int> exec_devices_from(const ExecOptions& o, const Environment& environment) {
  const std::map<int, BudgetRequest> budgets = device_budgets_from(o);
  if (!budgets.empty()) {
    if (o.devices.empty()) {
      std::vector<int> named;
      named.reserve(budgets.size());
      for (const auto& [device, budget] : budgets)
        named.push_back(device);
      return named;
    }
    std::vector<int> devices = choose_devices(o.devices, environment);
    for (const auto& [device, budget] : budgets) {
      if (std::find(devices.begin(), devices.end(), device) == devices.end())
        throw_usage(fmt::format("--budgets: device {} is not in --devices {}", device, o.devices));
    }
    for (const int device : devices) {
      if (!budgets.contains(device))
        throw_usage(fmt::format("--budgets: device {} of --devices has no budget", device));
    }
    return devices;
  }
  if (!o.devices.empty()) return choose_devices(o.devices, environment);
  try {
    return {parse_device_index(o.device)};
  } catch (const Error& e) {
    throw_usage(fmt::format("--device: {}", e.what()));
  }
}

void check_gpu_flags(const ExecOptions& options) {
  if (options.gpus.empty() && options.gpus_per_trial != "1")
    throw_usage("--gpus-per-trial: only with --gpus (the GPUs the trials' groups are made of)");
  if (!options.gpus.empty() && !options.devices.empty()) {
    throw_usage(
        "--gpus: not with --devices: a program that spans several GPUs a trial takes them from "
        "--gpus (--gpus 0,1,2,3 --gpus-per-trial 2)");
  }
}

std::size_t gpus_per_trial(const ExecOptions& options, std::size_t gpus) {
  std::uint64_t per = 0;
  try {
    per = parse_unsigned(options.gpus_per_trial);
  } catch (const Error& e) {
    throw_usage(fmt::format("--gpus-per-trial: {}", e.what()));
  }
  if (per == 0) throw_usage("--gpus-per-trial: 0: a trial's program needs a GPU at least");
  if (gpus % per != 0) {
    throw_usage(fmt::format("--gpus-per-trial {}: --gpus {} names {} GPU{}, not a multiple of {}",
                            per, options.gpus, gpus, gpus == 1 ? "" : "s", per));
  }
  return static_cast<std::size_t>(per);
}

ExecSearchSession::ExecSearchSession(const ExecOptions& options, ExecConfig& config,
                                     Console& console, const std::string& gpus) {
  config.notice = [&console](std::string_view text) { console.notice(text); };
  config.environment = probe_environment();
  if (gpus.empty()) {
    devices_.push_back(open_exec_devices(exec_devices_from(options, *config.environment)));
  } else {
    const std::vector<int> chosen = choose_devices(gpus, *config.environment, "--gpus");
    const std::size_t per = gpus_per_trial(options, chosen.size());
    for (std::size_t at = 0; at < chosen.size(); at += per)
      devices_.push_back(
          open_exec_devices({chosen.begin() + static_cast<std::ptrdiff_t>(at),
                             chosen.begin() + static_cast<std::ptrdiff_t>(at + per)}));
  }
  config.stop = StopOnSignal::flag();
}

std::vector<ExecDevices*> ExecSearchSession::gpus() const {
  std::vector<ExecDevices*> out;
  for (const auto& d : devices_)
    out.push_back(d.get());
  return out;
}

}  // namespace oomlab::cli
