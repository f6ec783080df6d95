#include "exec/exec_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "device/nvml.hpp"
#include "exec/exec_outcome.hpp"
#include "exec/exec_watch.hpp"
#include "exec/memory_timeline.hpp"
#include "exec/oom_message.hpp"
#include "exec/program.hpp"
#include "exec/rank_attribution.hpp"
#include "exec/snapshot_shim.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "run/run_plan.hpp"
#include "trace/trace.hpp"

namespace oomlab {

namespace {

using Clock = std::chrono::steady_clock;

// Each device's budget, and its ballast taken: free memory read with oomlab's own context made.
struct Held {
  std::vector<std::uint64_t> free_before;
  std::vector<std::uint64_t> budgets;
  std::vector<std::uint64_t> ballasts;
};

Held take_ballast(const ExecConfig& config, ExecDevices& devices, RunResult& result) {
  Held held;
  for (std::size_t i = 0; i < devices.facts().size(); ++i) {
    const DeviceFacts& facts = devices.facts()[i];
    const auto own = config.device_budgets.find(facts.index);
    const BudgetRequest& request = own != config.device_budgets.end() ? own->second : config.budget;
    const std::uint64_t free = devices.free_bytes(i);
    const std::uint64_t budget =
        resolve_budget(request, config.notice, result, facts.total_bytes, free,
                       fmt::format("free on device {}", facts.index), kept_back_bytes(&facts));
    const std::uint64_t ballast = round_down(free - budget, kDevicePageBytes);
    devices.hold(i, ballast);
    held.free_before.push_back(free);
    held.budgets.push_back(budget);
    held.ballasts.push_back(ballast);
    if (i == 0) {
      result.budget_bytes = budget;
      result.ballast_bytes = ballast;
    }
  }
  return held;
}

// The value the program would see for `name`: what exec sets itself (--check-remedy's, a fit's),
// else oomlab's own environment, which the program inherits.
std::optional<std::string> program_value(const ExecConfig& config, std::string_view name) {
  for (const auto* list : {&config.variables, &config.program_environment}) {
    for (auto it = list->rbegin(); it != list->rend(); ++it) {
      if (it->first == name) return it->second;
    }
  }
  const char* value = std::getenv(std::string(name).c_str());  // NOLINT(concurrency-mt-unsafe)
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Each framework that sizes its allocator from the device's total memory, sized from a card of
// the (first device's) budget instead; the lines that say so, by the word that names each.
std::vector<std::pair<std::string, std::string>> size_to_card(
    const ExecConfig& config, const ExecDevices& devices, const Held& held,
    std::vector<std::pair<std::string, std::string>>& environment) {
  std::vector<std::pair<std::string, std::string>> notes;
  if (held.budgets.empty()) return notes;
  const std::uint64_t total = devices.facts().front().total_bytes;
  const auto current = [&config](std::string_view name) { return program_value(config, name); };
  for (const Framework& framework : Registry::global().frameworks()) {
    if (!framework.card_sizing || framework.card_sizing->variables == nullptr) continue;
    CardSizing::Variables sized =
        framework.card_sizing->variables(held.budgets.front(), total, current);
    environment.insert(environment.end(), sized.set.begin(), sized.set.end());
    if (!sized.note.empty()) notes.emplace_back(framework.card_sizing->hint, std::move(sized.note));
  }
  return notes;
}

// The first framework's log that the user did not ask to see themselves, its level turned on
// and its lines kept apart (Framework::program_log): copied into the run folder, or, where the
// run has none and the log is a trace, beside the snapshots. The log kept as a trace, or null.
const ProgramLog* keep_log_apart(const ExecConfig& config, const SnapshotShim* shim,
                                 ProgramSpec& spec) {
  for (const Framework& framework : Registry::global().frameworks()) {
    if (!framework.program_log || framework.program_log->is_log_line == nullptr) continue;
    const ProgramLog& log = *framework.program_log;
    if (program_value(config, log.level_variable)) continue;  // the user's level, the user's view
    const bool recorded = config.snapshot.enabled && shim != nullptr;
    spec.environment.insert(spec.environment.end(), log.set.begin(), log.set.end());
    if (recorded) {
      for (const auto& [name, value] : log.record) {
        if (!program_value(config, name)) spec.environment.emplace_back(name, value);
      }
    }
    spec.is_log_line = log.is_log_line;
    if (!config.folder.empty()) spec.log_copy = config.folder / log.file;
    if (recorded && log.is_trace && spec.log_copy.empty())
      spec.log_copy = shim->folder() / log.file;
    if (recorded && log.recording != nullptr) {
      // Absolute: the program may change its working folder before it writes there.
      std::error_code ec;
      std::filesystem::path folder = std::filesystem::absolute(spec.log_copy.parent_path(), ec);
      if (ec) folder.clear();
      const RecordedRun run{
          .current = [&config](std::string_view name) { return program_value(config, name); },
          .folder = folder,
          .predicting = config.snapshot.predicting};
      for (auto& assignment : log.recording(run))
        spec.environment.push_back(std::move(assignment));
    }
    return recorded && log.is_trace ? &log : nullptr;
  }
  return nullptr;
}

// A run with no snapshot whose framework's log was kept apart: the log, where it is a trace of
// the allocator, is the run's snapshot (its framework's model reads it); else where that record
// is, beside why there is no snapshot.
void say_log_kept(const std::filesystem::path& log_copy, const ProgramLog* trace_log,
                  RunResult& result) {
  if (!result.program || !result.program->snapshots.empty() || log_copy.empty()) return;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(log_copy, ec);
  if (ec || size == 0) return;
  const std::vector<FrameworkSeen>& seen = result.program->frameworks;
  const bool its_framework =
      trace_log != nullptr && std::any_of(seen.begin(), seen.end(), [&](const FrameworkSeen& f) {
        return f.name == trace_log->seen_as;
      });
  if (its_framework && !trace::file_format(log_copy).empty()) {
    result.program->snapshots.push_back(log_copy);
    result.program->snapshot_note.clear();
    return;
  }
  std::string& note = result.program->snapshot_note;
  note += fmt::format(
      "{}the framework's own log is kept in {} ({}; oomlab run replay --trace "
      "reads it where its format is known: oomlab list)",
      note.empty() ? "" : "; ", log_copy.filename().string(), format_bytes(size));
}

ProgramSpec program_spec(const ExecConfig& config, const ExecDevices& devices,
                         const SnapshotShim* shim) {
  std::vector<std::string> uuids;
  for (const DeviceFacts& f : devices.facts())
    uuids.push_back(f.uuid);
  ProgramSpec spec{
      .argv = config.command,
      .environment = {{"CUDA_VISIBLE_DEVICES", fmt::format("{}", fmt::join(uuids, ","))}},
      .out_fd = config.out_fd,
      .err_fd = config.err_fd};
  for (const auto& setting : config.program_environment)
    spec.environment.push_back(setting);
  if (shim != nullptr) {
    const char* python_path = std::getenv("PYTHONPATH");  // NOLINT(concurrency-mt-unsafe)
    for (auto& setting : shim->environment(
             python_path != nullptr ? std::optional<std::string>(python_path) : std::nullopt))
      spec.environment.push_back(std::move(setting));
  }
  if (!config.folder.empty()) {
    spec.out_copy = config.folder / "stdout.txt";
    spec.err_copy = config.folder / "stderr.txt";
  }
  // Then --check-remedy's setting wins over any other, but for a framework's card sizing, which
  // comes after it and scales a share of the device that it sets (run_exec: size_to_card).
  spec.environment.insert(spec.environment.end(), config.variables.begin(), config.variables.end());
  // Last, over anything the user's or the program's environment says: NVLink multicast off.
  for (const auto& [name, value] : kMulticastOff)
    spec.environment.emplace_back(name, value);
  for (const Framework& framework : Registry::global().frameworks()) {
    spec.environment.insert(spec.environment.end(), framework.program_environment.begin(),
                            framework.program_environment.end());
  }
  return spec;
}

// The ballast freed, then free memory watched until the driver has taken the program's back.
void give_back(ExecDevices& devices, const Held& held, RunResult& result) {
  devices.release();
  std::uint64_t before = 0;
  for (const std::uint64_t f : held.free_before)
    before += f;
  const auto free_now = [&] {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < held.free_before.size(); ++i)
      sum += devices.free_bytes(i);
    return sum;
  };
  result.cleanup = Cleanup{.device_free_before = before, .device_free_after = free_now()};
  const auto deadline = Clock::now() + kProgramReleaseWait;
  while (result.cleanup->difference() > static_cast<std::int64_t>(kDevicePageBytes) &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    result.cleanup->device_free_after = free_now();
  }
  const std::int64_t missing = result.cleanup->difference();
  if (missing <= static_cast<std::int64_t>(kDevicePageBytes)) return;
  const Nvml nvml;
  const auto processes = nvml.compute_processes(devices.facts().front().uuid);
  if (processes && *processes > 1) {
    result.cleanup->other_processes = *processes - 1;
    result.cleanup->not_counted = fmt::format(
        "{} other process(es) use this device: the difference may be theirs", *processes - 1);
  }
}

// Each device's figures and its own events file (several devices only).
void record_devices(const ExecConfig& config, const ExecDevices& devices, const Held& held,
                    const std::vector<DeviceTimeline>& timelines, RunResult& result) {
  const bool several = devices.facts().size() > 1;
  for (std::size_t i = 0; i < devices.facts().size(); ++i) {
    const DeviceFacts& f = devices.facts()[i];
    DeviceRun d{.index = f.index,
                .uuid = f.uuid,
                .budget_bytes = held.budgets[i],
                .ballast_bytes = held.ballasts[i]};
    if (i < timelines.size()) {
      d.peak_bytes = timelines[i].peak.program_bytes;
      d.peak_used_bytes = timelines[i].peak_used_bytes;
      d.first_bytes = timelines[i].first_bytes;
      if (timelines[i].full_ns) d.full_ms = static_cast<double>(*timelines[i].full_ns) / 1e6;
    }
    if (several && !config.folder.empty()) d.events_file = device_events_file(f.index);
    result.program->device_runs.push_back(std::move(d));
  }
}

TimelineSetup timeline_setup(const ExecConfig& config, ExecDevices& devices, const Held& held) {
  TimelineSetup setup{.budgets = held.budgets, .interval = config.interval};
  for (std::size_t i = 0; i < held.free_before.size(); ++i)
    setup.free_at_start.push_back(devices.read(i, 0).free_bytes);
  if (config.folder.empty()) return setup;
  setup.events_csv = config.folder / "events.csv";
  if (devices.facts().size() > 1) {
    for (const DeviceFacts& f : devices.facts())
      setup.device_csvs.push_back(config.folder / device_events_file(f.index));
  }
  return setup;
}

}  // namespace

std::string device_events_file(int index) {
  return fmt::format("events-gpu{}.csv", index);
}

std::string command_line(const std::vector<std::string>& command) {
  std::vector<std::string> words;
  for (const std::string& word : command) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-+=./:,@%") == std::string::npos;
    if (plain) {
      words.push_back(word);
      continue;
    }
    std::string quoted = "'";
    for (const char c : word)
      quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    words.push_back(quoted + "'");
  }
  return fmt::format("{}", fmt::join(words, " "));
}

RunResult run_exec(const ExecConfig& config, ExecDevices& devices) {
  if (config.command.empty()) throw_usage("exec: no program to run (give it after --)");
  if (!find_program(config.command.front())) {
    throw_usage(
        fmt::format("exec: cannot run '{}': no such executable file{}", config.command.front(),
                    config.command.front().find('/') == std::string::npos ? " on PATH" : ""));
  }
  const auto start = Clock::now();
  RunResult result = exec_result_frame(config, devices);
  // Made before any memory is taken: a failure to make it is the run's error, not a leak.
  std::optional<SnapshotShim> shim;
  if (config.snapshot.enabled) shim.emplace(config.snapshot, config.folder);
  const Held held = take_ballast(config, devices, result);
  std::optional<ProgramEnd> end;
  std::optional<ExecObservation> seen;
  std::vector<std::pair<std::string, std::string>> card_notes;
  std::filesystem::path log_copy;
  const ProgramLog* log_trace = nullptr;
  try {
    MemoryTimeline timeline(devices, timeline_setup(config, devices, held));
    ExecWatch watch(timeline, devices.facts().size(), config.grace);
    watch.hint(command_line(config.command));
    timeline.start();
    ProgramSpec spec = program_spec(config, devices, shim ? &*shim : nullptr);
    log_trace = keep_log_apart(config, shim ? &*shim : nullptr, spec);
    card_notes = size_to_card(config, devices, held, spec.environment);
    log_copy = spec.log_copy;
    end = run_program(spec,
                      {.timeout = config.timeout,
                       .grace = config.grace,
                       .stop = config.stop,
                       .guardian = config.guardian,
                       .left_waiting = [&watch] { return watch.left_waiting(); }},
                      watch);
    try {
      timeline.finish();
    } catch (const Error& e) {
      result.events_error = e.what();
    }
    seen = observe(timeline, watch.scanner(), watch.noted(), watch.hints());
    for (auto& [hint, note] : card_notes) {
      if (watch.hints().words.contains(hint)) result.notes.push_back(std::move(note));
    }
    record_devices(config, devices, held, seen->devices, result);
    std::vector<int> indices;
    for (const DeviceFacts& f : devices.facts())
      indices.push_back(f.index);
    attribute_ranks({.watch = watch,
                     .device_indices = std::move(indices),
                     .devices = seen->devices,
                     .failed = !end->succeeded()},
                    *result.program);
  } catch (...) {
    devices.release();
    throw;
  }
  give_back(devices, held, result);
  settle_outcome(config, held.budgets, *end, *seen, result);
  settle_snapshots(config, shim ? &*shim : nullptr, result);
  say_log_kept(log_copy, log_trace, result);
  // Whatever reads the snapshots in this run reads them here, while a temporary folder lasts.
  if (shim && shim->temporary()) forget_temporary_snapshots(result);
  result.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

}  // namespace oomlab
