#include "run/runner.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "allocators/backends.hpp"
#include "device/device.hpp"
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

std::string resolve_auto_allocator(const Environment& env, std::string* why) {
  if (!env.devices.empty()) return "async";
  if (why != nullptr) *why = env.cuda_problem;
  return "sim";
}

namespace {

// What a run holds on a device, released in reverse order of the members: the ballast first,
// then the verify counter, then the stream and the device.
struct Placement {
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

void tell(const RunConfig& config, RunResult& result, std::string text) {
  if (config.notice) config.notice(text);
  result.notices.push_back(std::move(text));
}

std::uint64_t resolve_budget(const RunConfig& config, RunResult& result, std::uint64_t total,
                             std::uint64_t available, std::string_view available_what) {
  const BudgetRequest& request = config.budget;
  std::uint64_t budget = request.bytes;
  if (request.kind == BudgetRequest::Kind::percent) {
    budget = static_cast<std::uint64_t>(static_cast<double>(total) * request.percent / 100.0);
  } else if (request.kind == BudgetRequest::Kind::all) {
    budget = available;
  }
  if (budget > available) {
    tell(config, result,
         fmt::format("budget {} is more than the {} {}: clamped to {}", format_bytes(budget),
                     format_bytes(available), available_what, format_bytes(available)));
    budget = available;
  }
  if (budget == 0) throw_usage("the budget resolves to 0 bytes: nothing could be allocated");
  return budget;
}

std::unique_ptr<Allocator> place_on_device(const RunConfig& config, RunResult& result,
                                           Placement& place) {
  place.session.emplace(config.device);
  place.counter.emplace();
  kernels::preload();  // module memory now, not from the budget
  place.session->trim_default_pool();
  place.session->synchronize();
  place.free_before = place.session->free_bytes();
  const std::uint64_t total = place.session->total_bytes();
  result.budget_bytes = resolve_budget(config, result, total, place.free_before,
                                       fmt::format("free on device {}", config.device));
  if (uses_ballast(result.allocator)) {
    const std::uint64_t ballast =
        round_down(place.free_before - result.budget_bytes, kDevicePageBytes);
    if (ballast > 0) place.ballast.emplace(ballast);
    result.ballast_bytes = ballast;
  }
  place.free_at_start = place.session->free_bytes();
  if (result.allocator == "managed") result.cap_bytes = managed_cap_bytes(result.budget_bytes);
  return make_device_backend(result.allocator, result.allocator_options, config.device,
                             place.session->stream(), result.budget_bytes);
}

void run_and_catch(Scenario& scenario, HarnessContext& ctx, RunResult& result) {
  try {
    scenario.run(ctx);
    result.outcome = ctx.oom() ? Outcome::oom : Outcome::completed;
  } catch (const Interrupted&) {
    result.outcome = Outcome::interrupted;
  } catch (const std::exception& e) {
    result.outcome = Outcome::error;
    result.error_message = e.what();
  }
}

void fail(RunResult& result, std::string_view what, const std::exception& e) {
  result.outcome = Outcome::error;
  if (!result.error_message.empty()) result.error_message += "; ";
  result.error_message += fmt::format("{}: {}", what, e.what());
}

void drive(const RunConfig& config, Scenario& scenario, std::unique_ptr<Allocator> backend,
           Placement& place, RunResult& result) {
  PhaseTable phases;
  std::unique_ptr<EventSink> sink;
  if (config.events_csv.empty()) {
    sink = std::make_unique<NullSink>();
  } else {
    sink = std::make_unique<CsvFileSink>(config.events_csv, phases);
  }
  const auto start = Recording::Clock::now();
  EventLog log(std::move(sink));
  Recording recording(std::move(backend), log, start);
  HarnessContext ctx(
      recording, phases,
      {.params = config.params,
       .seed = config.seed,
       .budget_bytes = result.budget_bytes,
       .stream = place.session ? place.session->stream() : Stream{},
       .probe = config.probe,
       .simulated = result.simulated,
       .device_free_at_start = result.simulated ? result.budget_bytes : place.free_at_start,
       .stop = config.stop,
       .mismatch_counter = place.counter ? &*place.counter : nullptr});
  {
    std::function<void()> tick;
    if (config.progress) {
      tick = [&] {
        config.progress(
            {.events = recording.events_seen(),
             .live_bytes = recording.live_seen(),
             .budget_bytes = result.budget_bytes,
             .step = recording.step(),
             .phase = phases.name(recording.phase()),
             .elapsed_s = std::chrono::duration<double>(Recording::Clock::now() - start).count()});
      };
    }
    const Ticker ticker(config.progress_interval, std::move(tick));
    run_and_catch(scenario, ctx, result);
  }
  result.duration_ms =
      std::chrono::duration<double, std::milli>(Recording::Clock::now() - start).count();
  try {
    ctx.release_all();
  } catch (const std::exception& e) {
    fail(result, "freeing the scenario's blocks", e);
  }
  result.oom = ctx.oom();
  result.metrics = ctx.metrics();
  result.integrity_checked = ctx.integrity_checked();
  result.integrity_corrupted = ctx.integrity_corrupted();
  result.peak_live_bytes = recording.peak_live_bytes();
  result.peak_reserved_bytes = recording.peak_reserved_bytes();
  result.allocations = recording.allocations();
  result.frees = recording.frees();
  result.failed = recording.failed();
  result.events = recording.events();
  try {
    log.close();
  } catch (const std::exception& e) {
    fail(result, "writing events", e);
  }
}

void release_device(const RunConfig& config, Placement& place, RunResult& result) {
  try {
    place.ballast.reset();
    place.session->trim_default_pool();
    place.session->synchronize();
    result.cleanup = Cleanup{.device_free_before = place.free_before,
                             .device_free_after = place.session->free_bytes()};
    const std::int64_t missing = result.cleanup->difference();
    if (missing > static_cast<std::int64_t>(kDevicePageBytes)) {
      tell(config, result,
           fmt::format("device free memory is {} lower than before the run: memory was left behind",
                       format_bytes(static_cast<std::uint64_t>(missing))));
    }
  } catch (const std::exception& e) {
    fail(result, "releasing the device", e);
  }
}

}  // namespace

RunResult run_scenario(const RunConfig& config) {
  const std::unique_ptr<Scenario> scenario = Registry::global().create(config.scenario);
  if (!scenario) throw_usage(fmt::format("unknown scenario '{}'", config.scenario));
  scenario->validate(config.params);

  RunResult result;
  result.environment = probe_environment();
  result.scenario = config.scenario;
  result.params = config.params;
  result.seed = config.seed;
  result.allocator = config.allocator;
  result.allocator_options = config.allocator_options;
  if (config.allocator == "auto") {
    std::string why;
    result.allocator = resolve_auto_allocator(result.environment, &why);
    if (result.allocator == "sim")
      tell(config, result, fmt::format("{}: using the simulated allocator 'sim'", why));
    result.allocator_options = Params(find_backend(result.allocator)->options);
  }
  const BackendInfo* backend_info = find_backend(result.allocator);
  if (backend_info == nullptr) throw_usage(fmt::format("unknown allocator '{}'", result.allocator));
  result.simulated = !backend_info->needs_device;

  Placement place;
  std::unique_ptr<Allocator> backend;
  if (result.simulated) {
    const std::uint64_t total = result.allocator_options.bytes("total");
    result.budget_bytes = resolve_budget(config, result, total, total, "of the simulated card");
    backend = make_sim_backend(result.allocator_options, result.budget_bytes);
  } else {
    backend = place_on_device(config, result, place);
    for (const DeviceFacts& d : result.environment.devices) {
      if (d.index == config.device) result.device = d;
    }
  }
  drive(config, *scenario, std::move(backend), place, result);
  if (place.session) release_device(config, place, result);
  return result;
}

}  // namespace oomlab
