#include "exec/exec_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <thread>

#include "device/nvml.hpp"
#include "exec/exec_outcome.hpp"
#include "exec/memory_timeline.hpp"
#include "exec/oom_message.hpp"
#include "exec/program.hpp"
#include "exec/snapshot_shim.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "run/run_plan.hpp"

namespace oomlab {

namespace {

using Clock = std::chrono::steady_clock;

// Each device's budget, and its ballast taken: free memory read with oomlab's own context made.
struct Held {
  std::vector<std::uint64_t> free_before;
  std::vector<std::uint64_t> budgets;
};

Held take_ballast(const ExecConfig& config, ExecDevices& devices, RunResult& result) {
  Held held;
  for (std::size_t i = 0; i < devices.facts().size(); ++i) {
    const DeviceFacts& facts = devices.facts()[i];
    const std::uint64_t free = devices.free_bytes(i);
    const std::uint64_t budget =
        resolve_budget(config.budget, config.notice, result, facts.total_bytes, free,
                       fmt::format("free on device {}", facts.index), kept_back_bytes(&facts));
    const std::uint64_t ballast = round_down(free - budget, kDevicePageBytes);
    devices.hold(i, ballast);
    held.free_before.push_back(free);
    held.budgets.push_back(budget);
    if (i == 0) {
      result.budget_bytes = budget;
      result.ballast_bytes = ballast;
    }
  }
  return held;
}

// Scans the program's lines; the first OOM line seen becomes an oom row of the timeline.
class OomWatch final : public ProgramObserver {
 public:
  explicit OomWatch(MemoryTimeline& timeline) : timeline_(timeline) {}
  void started(pid_t pid) override { timeline_.set_program(pid); }
  void line(std::string_view text, bool /*from_stderr*/) override {
    scanner_.feed_line(text);  // a preallocation is told from a request by the budget, later
    // XLA's own log lines do not say whether JAX or TensorFlow built it; the traceback does.
    hint(text);
    if (!noted_ && scanner_.found()) {
      const ProgramOom& oom = *scanner_.found();
      noted_ = timeline_.note_oom(oom.request_bytes.value_or(0), stated_by(oom));
    }
  }
  [[nodiscard]] const OomScanner& scanner() const { return scanner_; }
  [[nodiscard]] FrameworkHints hints() const { return saw_; }
  // The command itself says, at times (`python jax_job.py`).
  void hint(std::string_view text) {
    saw_.jax = saw_.jax || text.find("jax") != std::string_view::npos;
    saw_.tensorflow = saw_.tensorflow || text.find("tensorflow") != std::string_view::npos;
  }
  [[nodiscard]] const std::optional<std::pair<std::uint64_t, MemoryReading>>& noted() const {
    return noted_;
  }

 private:
  MemoryTimeline& timeline_;
  OomScanner scanner_;
  FrameworkHints saw_;
  std::optional<std::pair<std::uint64_t, MemoryReading>> noted_;
};

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
  // Last: --check-remedy's PYTORCH_CUDA_ALLOC_CONF wins over any other.
  spec.environment.insert(spec.environment.end(), config.variables.begin(), config.variables.end());
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

}  // namespace

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
  std::vector<std::uint64_t> free_at_start;
  for (std::size_t i = 0; i < held.free_before.size(); ++i)
    free_at_start.push_back(devices.read(i, 0).free_bytes);
  std::optional<ProgramEnd> end;
  std::optional<ExecObservation> seen;
  try {
    MemoryTimeline timeline(
        devices, free_at_start, config.interval,
        config.folder.empty() ? std::filesystem::path() : config.folder / "events.csv");
    OomWatch watch(timeline);
    watch.hint(command_line(config.command));
    timeline.start();
    end = run_program(program_spec(config, devices, shim ? &*shim : nullptr),
                      {.timeout = config.timeout,
                       .grace = config.grace,
                       .stop = config.stop,
                       .guardian = config.guardian},
                      watch);
    try {
      timeline.finish();
    } catch (const Error& e) {
      result.events_error = e.what();
    }
    seen = observe(timeline, watch.scanner(), watch.noted(), watch.hints());
  } catch (...) {
    devices.release();
    throw;
  }
  give_back(devices, held, result);
  settle_outcome(config, held.budgets, *end, *seen, result);
  settle_snapshots(config, shim ? &*shim : nullptr, result);
  // Whatever reads the snapshots in this run reads them here, while a temporary folder lasts.
  if (shim && shim->temporary()) forget_temporary_snapshots(result);
  result.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return result;
}

}  // namespace oomlab
