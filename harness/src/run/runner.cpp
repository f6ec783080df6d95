#include "run/runner.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "allocators/torch/torch_options.hpp"
#include "device/device.hpp"
#include "device/nvml.hpp"
#include "kernels/kernels.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "record/csv_sink.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"
#include "run/harness_context.hpp"

namespace oomlab {

std::string_view to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::oom:
      return "oom";
    case Outcome::completed:
      return "completed";
    case Outcome::error:
      return "error";
    case Outcome::interrupted:
      return "interrupted";
    case Outcome::timeout:
      return "timeout";
  }
  return "?";
}

BackendKind resolve_auto_allocator(const Environment& env, std::string* why) {
  if (!env.devices.empty()) return BackendKind::async;
  if (why != nullptr) *why = env.cuda_problem;
  return BackendKind::sim;
}

namespace {

// How long a shortfall of device free memory after a run may take to disappear (the driver's late
// release) before it is reported as a harness leak.
constexpr std::chrono::seconds kLateReleaseWait{2};
constexpr std::size_t kLastEvents = 8;  // in an error's record
constexpr int kBallastAttempts = 5;

// What a run holds on a device. Members are destroyed in reverse order: the ballast goes after
// everything the run allocated (those are freed before this is destroyed), then the verify
// counter, then the stream; counter and stream were made before free memory was measured.
struct DeviceHold {
  std::optional<DeviceSession> session;
  std::optional<kernels::MismatchCounter> counter;
  std::optional<Ballast> ballast;
  std::uint64_t free_before = 0;
  std::uint64_t free_at_start = 0;  // after the ballast
};

// Calls `tick` every `interval` on a thread of its own until destroyed.
class Ticker {
 public:
  Ticker(std::chrono::milliseconds interval, std::function<void()> tick) {
    if (!tick) return;
    thread_ = std::thread([this, interval, tick = std::move(tick)] {
      std::unique_lock lock(mutex_);
      while (!cv_.wait_for(lock, interval, [&] { return done_; }))
        tick();
    });
  }
  ~Ticker() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;
  Ticker(Ticker&&) = delete;
  Ticker& operator=(Ticker&&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// --timeout, from before the device is set up: at the deadline it sets `timed_out` (the run
// stops at its next event); if the scenario has not returned `hang_grace` later, a call never
// returned. Once the scenario has returned, the clean-up (freeing everything, waiting for the
// driver's late release) has kCleanupGrace of its own, whatever the timeout. Either way a hang
// hands the record so far to config.on_hung: a copy made before the run started, with the
// events counted so far and the time; nothing the run's own thread is writing is read.
class Watchdog {
 public:
  static constexpr std::chrono::seconds kCleanupGrace{60};

  Watchdog(const RunConfig& config, const RunResult& before_start, std::atomic<bool>& timed_out)
      : start_(std::chrono::steady_clock::now()) {
    if (config.timeout.count() <= 0) return;
    thread_ = std::thread([this, &config, record = before_start, &timed_out]() mutable {
      std::unique_lock lock(mutex_);
      auto deadline = start_ + config.timeout;
      bool cleaning = false;
      for (;;) {
        if (cv_.wait_until(lock, deadline, [&] { return done_ || cleaning_ != cleaning; })) {
          if (done_) return;
          cleaning = true;  // the scenario returned: the clean-up's own allowance from now
          deadline = std::chrono::steady_clock::now() + kCleanupGrace;
          continue;
        }
        if (!cleaning && !timed_out.load(std::memory_order_relaxed)) {
          timed_out.store(true, std::memory_order_relaxed);
          deadline = std::chrono::steady_clock::now() + config.hang_grace;
          continue;
        }
        break;  // past the grace: hung
      }
      if (!config.on_hung) {
        cv_.wait(lock, [&] { return done_; });
        return;
      }
      record.outcome = Outcome::timeout;
      record.events = recording_ != nullptr ? recording_->events_seen() : 0;
      record.duration_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
              .count();
      record.error_message =
          cleaning_ ? fmt::format(
                          "freeing the run's memory did not end within {} s: a call never "
                          "returned (after event {}); the process ends without freeing, "
                          "and the driver takes its device memory back when it exits",
                          kCleanupGrace.count(), record.events)
                    : fmt::format(
                          "the run passed its timeout of {:.3g} s and then did not stop "
                          "for {:.3g} s more: a call never returned (after event {}); the "
                          "process ends without freeing, and the driver takes its device "
                          "memory back when it exits",
                          std::chrono::duration<double>(config.timeout).count(),
                          std::chrono::duration<double>(config.hang_grace).count(), record.events);
      config.on_hung(record);
    });
  }
  ~Watchdog() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  Watchdog(Watchdog&&) = delete;
  Watchdog& operator=(Watchdog&&) = delete;

  // The recording whose event count a hung run's record gives (nullptr: none now).
  void watch(const Recording* recording) {
    const std::lock_guard lock(mutex_);
    recording_ = recording;
  }

  // The scenario has returned (or thrown): what follows is the clean-up.
  void cleaning_up() {
    {
      const std::lock_guard lock(mutex_);
      cleaning_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool cleaning_ = false;
  const Recording* recording_ = nullptr;
  std::thread thread_;
};

void notify(const RunConfig& config, RunResult& result, std::string text) {
  if (config.notice) config.notice(text);
  result.notices.push_back(std::move(text));
}

void record_failure(RunResult& result, std::string_view what, std::string_view why) {
  result.outcome = Outcome::error;
  if (!result.error_message.empty()) result.error_message += "; ";
  result.error_message += fmt::format("{}: {}", what, why);
}

std::uint64_t resolve_budget(const RunConfig& config, RunResult& result, std::uint64_t total,
                             std::uint64_t available, std::string_view available_what) {
  const BudgetRequest& request = config.budget;
  std::uint64_t budget = request.bytes.value;
  if (request.kind == BudgetRequest::Kind::percent) {
    budget = static_cast<std::uint64_t>(static_cast<double>(total) * request.percent.value / 100.0);
  } else if (request.kind == BudgetRequest::Kind::all) {
    budget = available;
  }
  if (budget > available) {
    notify(config, result,
           fmt::format("budget {} is more than the {} {}: clamped to {}", format_bytes(budget),
                       format_bytes(available), available_what, format_bytes(available)));
    budget = available;
  }
  if (budget == 0) throw_usage("the budget resolves to 0 bytes: nothing could be allocated");
  return budget;
}

std::unique_ptr<Allocator> place_on_device(const RunConfig& config, BackendKind kind,
                                           RunResult& result, DeviceHold& hold,
                                           const torch::TorchConfig* torch) {
  hold.session.emplace(config.device);
  hold.counter.emplace();
  kernels::preload();  // module memory now, not from the budget
  if (kind == BackendKind::managed) settle_managed_memory(hold.session->stream());
  hold.session->trim_default_pool();
  hold.session->synchronize();
  // Another process can take memory between the reading and the ballast (several oomlab runs
  // started together on one GPU): the ballast is then refused, and the reading is taken again.
  for (int attempt = 1;; ++attempt) {
    hold.free_before = hold.session->free_bytes();
    result.budget_bytes =
        resolve_budget(config, result, hold.session->total_bytes(), hold.free_before,
                       fmt::format("free on device {}", config.device));
    if (!backend_info(kind).holds_ballast) break;
    result.ballast_bytes = round_down(hold.free_before - result.budget_bytes, kDevicePageBytes);
    try {
      if (result.ballast_bytes > 0) hold.ballast.emplace(result.ballast_bytes);
      // Taken, but another process may have taken some of the budget in between.
      if (attempt == kBallastAttempts ||
          hold.session->free_bytes() + kDevicePageBytes >= result.budget_bytes)
        break;
      hold.ballast.reset();
      notify(config, result,
             fmt::format("device free memory fell under the budget as the ballast was taken "
                         "(another process?): reading it again ({} of {})",
                         attempt + 1, kBallastAttempts));
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    } catch (const Error& e) {
      // Only a refusal for want of memory is another process's doing; anything else is real.
      if (attempt == kBallastAttempts ||
          std::string_view(e.what()).find("cudaErrorMemoryAllocation") == std::string_view::npos)
        throw;
      notify(config, result,
             fmt::format("device free memory changed while the ballast was taken (another "
                         "process?): reading it again ({} of {})",
                         attempt + 1, kBallastAttempts));
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    }
  }
  hold.free_at_start = hold.session->free_bytes();
  if (kind == BackendKind::managed) result.cap_bytes = managed_cap_bytes(result.budget_bytes);
  return make_device_backend(kind, result.allocator_options, config.device, hold.session->stream(),
                             result.budget_bytes, torch);
}

void run_and_catch(Scenario& scenario, HarnessContext& ctx, RunResult& result) {
  try {
    scenario.run(ctx);
    result.outcome = ctx.oom() ? Outcome::oom : Outcome::completed;
  } catch (const TimedOut&) {
    result.outcome = Outcome::timeout;
  } catch (const Interrupted&) {
    result.outcome = Outcome::interrupted;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) throw;  // a request that cannot run: bad usage, exit 2
    record_failure(result, "the run failed", e.what());
  } catch (const std::exception& e) {
    record_failure(result, "the run failed", e.what());
  } catch (...) {
    record_failure(result, "the run failed", "an exception that is not a std::exception");
  }
}

std::unique_ptr<EventSink> make_sink(const RunConfig& config, const PhaseTable& phases) {
  if (config.events_csv.empty()) return std::make_unique<NullSink>();
  return std::make_unique<CsvFileSink>(config.events_csv, phases);
}

std::function<void()> progress_tick(const RunConfig& config, const Recording& recording,
                                    const PhaseTable& phases, std::uint64_t budget,
                                    Recording::Clock::time_point start) {
  if (!config.progress) return {};
  return [&config, &recording, &phases, budget, start] {
    config.progress(
        {.events = recording.events_seen(),
         .live_bytes = recording.live_bytes(),
         .budget_bytes = budget,
         .step = recording.step(),
         .phase = phases.name(recording.phase()),
         .elapsed_s = std::chrono::duration<double>(Recording::Clock::now() - start).count()});
  };
}

void collect(const HarnessContext& ctx, const Recording& recording, RunResult& result) {
  result.oom = ctx.oom();
  result.metrics = ctx.metrics();
  result.verify = ctx.integrity().mode();
  result.integrity_checked = ctx.integrity().checked();
  result.integrity_corrupted = ctx.integrity().corrupted();
  result.integrity_corrupted_words = ctx.integrity().corrupted_words();
  result.notes = ctx.notes();
  result.trials = ctx.trials();
  result.peak_live_bytes = recording.peak_live_bytes();
  result.peak_reserved_bytes = recording.peak_reserved_bytes();
  result.allocations = recording.allocations();
  result.frees = recording.frees();
  result.failed = recording.failed();
  result.events = recording.events();
}

void drive(const RunConfig& config, Scenario& scenario, std::unique_ptr<Allocator> backend,
           DeviceHold& hold, RunResult& result, Watchdog& watchdog,
           const std::atomic<bool>& timed_out) {
  PhaseTable phases;
  const auto start = Recording::Clock::now();
  EventLog log(make_sink(config, phases));
  Recording recording(std::move(backend), log, start);
  watchdog.watch(&recording);
  struct Unwatch {
    Watchdog& w;
    ~Unwatch() { w.watch(nullptr); }
  } const unwatch{watchdog};
  HarnessContext ctx(
      recording, phases,
      {.params = config.params,
       .seed = config.seed,
       .budget_bytes = result.budget_bytes,
       .stream = hold.session ? hold.session->stream() : Stream{},
       .probe = config.probe,
       .simulated = result.simulated,
       .verify = result.simulated ? VerifyMode::off : config.verify,
       .device_free_at_start = result.simulated ? result.budget_bytes : hold.free_at_start,
       .stop = config.stop,
       .timed_out = config.timeout.count() > 0 ? &timed_out : nullptr,
       .mismatch_counter = hold.counter ? &*hold.counter : nullptr,
       .new_stream =
           hold.session ? std::function<Stream()>([&hold] { return hold.session->create_stream(); })
                        : std::function<Stream()>()});
  {
    const Ticker ticker(config.progress_interval,
                        progress_tick(config, recording, phases, result.budget_bytes, start));
    run_and_catch(scenario, ctx, result);
  }
  watchdog.cleaning_up();
  // What the run was doing when it ended, before the clean-up's own frees (kept if it turns out
  // to be an error, here or in the clean-up).
  const auto [first_seq, tail] = log.tail(kLastEvents);
  const std::vector<Event> last(tail.begin(), tail.end());
  result.duration_ms =
      std::chrono::duration<double, std::milli>(Recording::Clock::now() - start).count();
  try {
    ctx.verify_live_blocks();  // the end-of-run integrity check, while the blocks are still there
  } catch (const std::exception& e) {
    record_failure(result, "verifying the blocks' data", e.what());
  }
  try {
    ctx.release_all();
  } catch (const std::exception& e) {
    record_failure(result, "freeing the scenario's blocks", e.what());
  }
  if (result.outcome == Outcome::error || result.outcome == Outcome::timeout) {
    for (std::size_t i = 0; i < last.size(); ++i) {
      const Event& e = last[i];
      result.last_events.push_back({.seq = first_seq + i,
                                    .op = std::string(to_string(e.op)),
                                    .bytes = e.bytes,
                                    .status = std::string(to_string(e.status)),
                                    .phase = std::string(phases.name(e.phase)),
                                    .step = e.step,
                                    .live_bytes = e.live_bytes});
    }
  }
  collect(ctx, recording, result);
  try {
    log.close();
  } catch (const std::exception& e) {
    record_failure(result, "writing events", e.what());
  }
}

void release_device(const RunConfig& config, BackendKind kind, DeviceHold& hold,
                    RunResult& result) {
  try {
    hold.ballast.reset();
    if (kind == BackendKind::managed) settle_managed_memory(hold.session->stream());  // as before
    hold.session->trim_default_pool();
    hold.session->synchronize();
    result.cleanup = Cleanup{.device_free_before = hold.free_before,
                             .device_free_after = hold.session->free_bytes()};
    // The driver takes some memory back after the call that freed it returns (managed pages
    // above all): a shortfall is looked at again for a while before it is called a leak.
    const auto deadline = std::chrono::steady_clock::now() + kLateReleaseWait;
    while (result.cleanup->difference() > static_cast<std::int64_t>(kDevicePageBytes) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      result.cleanup->device_free_after = hold.session->free_bytes();
    }
    const std::int64_t missing = result.cleanup->difference();
    if (missing > static_cast<std::int64_t>(kDevicePageBytes) && result.device) {
      const Nvml nvml;
      const std::optional<unsigned> processes = nvml.compute_processes(result.device->uuid);
      if (processes && *processes > 1) result.cleanup->other_processes = *processes - 1;
    }
    const bool all_freed = result.allocations == result.frees;
    if (missing > static_cast<std::int64_t>(kDevicePageBytes) &&
        result.cleanup->other_processes > 0) {
      result.cleanup->not_counted =
          fmt::format("{} other process(es) use this device: the difference may be theirs",
                      result.cleanup->other_processes);
    } else if (missing > static_cast<std::int64_t>(kDevicePageBytes) &&
               kind == BackendKind::managed && all_freed) {
      // Measured on an H100: after some managed runs free memory stays 4 to 34 MiB lower for
      // seconds although every cudaFree returned and memcheck finds no allocation leaked: the
      // managed-memory driver keeps pages of its own.
      result.cleanup->not_counted =
          "managed memory: the driver keeps pages of its own after cudaFree (every block and the "
          "ballast were freed)";
    }
    if (!result.cleanup->not_counted.empty()) {
      notify(config, result,
             fmt::format("device free memory is {} lower than before the run, not counted as a "
                         "harness leak: {}",
                         format_bytes(static_cast<std::uint64_t>(missing)),
                         result.cleanup->not_counted));
    } else if (missing > static_cast<std::int64_t>(kDevicePageBytes)) {
      notify(config, result,
             fmt::format("harness leak: device free memory is {} lower than before the run, "
                         "{} after it ended: memory was left behind",
                         format_bytes(static_cast<std::uint64_t>(missing)), "2 s"));
    }
  } catch (const std::exception& e) {
    record_failure(result, "releasing the device", e.what());
  }
}

}  // namespace

RunResult run_scenario(const RunConfig& config) {
  const std::unique_ptr<Scenario> scenario = Registry::global().create(config.scenario);
  if (!scenario) throw_usage(fmt::format("unknown scenario '{}'", config.scenario));
  scenario->validate(config.params);
  scenario->prepare(config.params);

  RunResult result;
  result.environment = config.environment ? *config.environment : probe_environment();
  result.scenario = config.scenario;
  result.params = config.params;
  result.seed = config.seed;
  BackendKind kind = config.allocator;
  result.allocator_options = config.allocator_options;
  if (kind == BackendKind::automatic) {
    std::string why;
    kind = resolve_auto_allocator(result.environment, &why);
    if (kind == BackendKind::sim)
      notify(config, result, fmt::format("{}: using the simulated allocator 'sim'", why));
    result.allocator_options = Params(backend_info(kind).options);
  }
  result.allocator = backend_info(kind).name;
  std::optional<torch::TorchConfig> torch;
  if (kind == BackendKind::torch) {
    const auto recorded = scenario->recorded_allocator_settings();
    torch::ResolvedTorch resolved =
        torch::resolve_torch(result.allocator_options, recorded ? &*recorded : nullptr);
    result.allocator_options = std::move(resolved.effective);
    torch = resolved.config;
    if (!resolved.note.empty()) notify(config, result, std::move(resolved.note));
  }
  result.simulated = !uses_device(kind, result.allocator_options);

  std::atomic<bool> timed_out{false};
  Watchdog watchdog(config, result, timed_out);  // device set-up included
  DeviceHold hold;
  std::unique_ptr<Allocator> backend;
  if (result.simulated) {
    const std::uint64_t total = simulated_total_bytes(kind, result.allocator_options);
    result.budget_bytes = resolve_budget(config, result, total, total, "of the simulated card");
    backend = torch ? make_torch_sim_backend(*torch, result.allocator_options, result.budget_bytes)
                    : make_sim_backend(result.allocator_options, result.budget_bytes);
  } else {
    backend = place_on_device(config, kind, result, hold, torch ? &*torch : nullptr);
    for (const DeviceFacts& d : result.environment.devices) {
      if (d.index == config.device) result.device = d;
    }
  }
  drive(config, *scenario, std::move(backend), hold, result, watchdog, timed_out);
  if (hold.session) release_device(config, kind, hold, result);
  return result;
}

}  // namespace oomlab
