#include "run/runner.hpp"

#include <fmt/format.h>

#include <chrono>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/sim.hpp"
#include "record/csv_sink.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"
#include "run/device_hold.hpp"
#include "run/harness_context.hpp"
#include "run/run_plan.hpp"
#include "run/watchdog.hpp"
#include "trace/load_status.hpp"

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

namespace {

constexpr std::size_t kLastEvents = 8;  // in an error's record

void run_and_catch(Scenario& scenario, HarnessContext& ctx, RunResult& result) {
  try {
    scenario.run(ctx);
    ctx.check_stop();  // a scenario that noticed the stop and returned was stopped all the same
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

// On the sim, the card a budget stands for: a named card's memory, a card of a size's own; 0 for
// N% and all, which are of the modelled card.
std::uint64_t simulated_card_bytes(const BudgetRequest& request, std::uint64_t budget) {
  if (request.kind == BudgetRequest::Kind::card && request.card != nullptr)
    return request.card->total_bytes;
  return request.kind == BudgetRequest::Kind::bytes ? budget : 0;
}

// Where a run's memory comes from: the backend itself, or an adaptor's upstream.
const BackendInfo& memory_source_info(const RunPlan& plan) {
  return backend_info(memory_source(plan.kind, plan.allocator_options));
}

ContextSettings context_settings(const RunConfig& config, const RunPlan& plan, std::uint64_t budget,
                                 DeviceHold& hold, const std::atomic<bool>& timed_out,
                                 RunResult& result) {
  return {
      .params = config.params,
      .seed = config.seed,
      .budget_bytes = budget,
      .stream = hold.session ? hold.session->stream() : Stream{},
      .probe = config.probe,
      .simulated = plan.simulated,
      .verify = plan.simulated ? VerifyMode::off : config.verify,
      .device_free_at_start = plan.simulated ? budget : hold.free_at_start,
      .granularity_bytes = memory_source_info(plan).granularity_bytes,
      .oom_source = memory_source_info(plan).oom_source,
      .card_bytes = plan.simulated ? simulated_card_bytes(config.budget, budget) : 0,
      .stop = config.stop,
      .timed_out = config.timeout.count() > 0 ? &timed_out : nullptr,
      .mismatch_counter = hold.counter ? &*hold.counter : nullptr,
      .new_stream = hold.session
                        ? std::function<Stream()>([&hold] { return hold.session->create_stream(); })
                        : std::function<Stream()>(),
      .notice = [&config, &result](std::string text) { notify(config, result, std::move(text)); }};
}

// What the run was doing when it ended in error or timeout: its last events, numbered.
void keep_last_events(std::uint64_t first_seq, const std::vector<Event>& last,
                      const PhaseTable& phases, RunResult& result) {
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

void drive(const RunConfig& config, Scenario& scenario, const RunPlan& plan,
           std::unique_ptr<Allocator> backend, std::uint64_t budget, DeviceHold& hold,
           RunResult& result, Watchdog& watchdog, const std::atomic<bool>& timed_out) {
  PhaseTable phases;
  const auto start = Recording::Clock::now();
  EventLog log(make_sink(config, phases));
  Recording recording(std::move(backend), log, start);
  watchdog.watch(&recording);
  struct Unwatch {
    Watchdog& w;
    ~Unwatch() { w.watch(nullptr); }
  } const unwatch{watchdog};
  HarnessContext ctx(recording, phases,
                     context_settings(config, plan, budget, hold, timed_out, result));
  {
    const Ticker ticker(config.progress_interval,
                        progress_tick(config, recording, phases, budget, start));
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
  if (result.outcome == Outcome::error || result.outcome == Outcome::timeout)
    keep_last_events(first_seq, last, phases, result);
  collect(ctx, recording, result);
  try {
    log.close();
  } catch (const Error& e) {
    // A full disk loses the file, not the run: its outcome stands, the CLI says what is missing.
    if (e.kind() == ErrorKind::io) {
      result.events_error = e.what();
    } else {
      record_failure(result, "writing events", e.what());
    }
  } catch (const std::exception& e) {
    record_failure(result, "writing events", e.what());
  }
}

// What the progress line shows while a trace is read (nothing for a scenario without one).
std::function<void()> loading_tick(const RunConfig& config,
                                   std::chrono::steady_clock::time_point start) {
  if (!config.progress) return {};
  return [&config, start] {
    const trace::LoadStatus status = trace::load_status();
    if (!status.loading) return;
    config.progress(
        {.events = status.events,
         .phase = "load",
         .elapsed_s =
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
         .loading = true,
         .input_read_bytes = status.bytes_read,
         .input_total_bytes = status.bytes_total});
  };
}

// The scenario's input (a trace) read under the run's Ctrl-C and --timeout: false when a stop
// came first. The outcome then says which; nothing was allocated, and events.csv has no events.
bool prepare_input(const RunConfig& config, Scenario& scenario, RunResult& result,
                   const std::atomic<bool>& timed_out) {
  const auto check_stop = [&] {
    if (timed_out.load(std::memory_order_relaxed)) throw TimedOut();
    if (config.stop != nullptr && config.stop->load(std::memory_order_relaxed)) throw Interrupted();
  };
  try {
    const auto start = std::chrono::steady_clock::now();
    const Ticker ticker(config.progress_interval, loading_tick(config, start));
    if (config.trace) {
      scenario.adopt(config.params, config.trace);
    } else {
      scenario.prepare(config.params, check_stop);
    }
    result.input_trace = scenario.input_trace();
    return true;
  } catch (const TimedOut&) {
    result.outcome = Outcome::timeout;
  } catch (const Interrupted&) {
    result.outcome = Outcome::interrupted;
  }
  notify(config, result,
         fmt::format("{} while the scenario's input was read: nothing was run",
                     result.outcome == Outcome::timeout ? "timed out" : "stopped"));
  const PhaseTable phases;
  EventLog log(make_sink(config, phases));
  log.close();
  return false;
}

// The scenario a run drives: the registry's trace player for a typed replay, else the one named.
const Registry::Entry& scenario_entry(const RunConfig& config) {
  const Registry& registry = Registry::global();
  const Registry::Entry* entry =
      config.trace ? registry.trace_player() : registry.find(config.scenario);
  if (entry == nullptr && config.trace)
    throw Error(ErrorKind::internal, "a trace to replay, but no scenario replays traces");
  if (entry == nullptr) throw_usage(fmt::format("unknown scenario '{}'", config.scenario));
  return *entry;
}

}  // namespace

namespace {

// The simulated card: a budget given as a size or a card's name larger than the default modelled
// card is the card asked about (cards of 141 to 288 GB are sold), modelled as given up to the
// largest card the sim holds; past it no card could be, and it is refused. A card named with the
// allocator's 'total' stays that card (a larger budget is clamped to it, with a notice).
std::uint64_t simulated_card_bytes(const BudgetRequest& budget, RunPlan& plan) {
  std::uint64_t total = simulated_total_bytes(plan.kind, plan.allocator_options);
  std::uint64_t asked = 0;
  if (budget.kind == BudgetRequest::Kind::card && budget.card != nullptr) {
    asked = card_budget_bytes(*budget.card, kept_back_bytes(nullptr));
  } else if (budget.kind == BudgetRequest::Kind::bytes) {
    asked = budget.bytes.value;
  }
  if (asked > kSimMaxCapacityBytes) {
    throw Error(ErrorKind::usage,
                fmt::format("--budget: no card holds {}: the simulated card goes up to {}",
                            format_bytes(asked), format_bytes(kSimMaxCapacityBytes)));
  }
  if (asked > total && !plan.allocator_options.was_set("total")) {
    total = asked;
    if (plan.allocator_options.values().contains("total"))
      plan.allocator_options.set("total", Bytes{total});
  }
  return total;
}

}  // namespace

RunResult run_scenario(const RunConfig& config) {
  const Registry::Entry& entry = scenario_entry(config);
  const std::unique_ptr<Scenario> scenario = entry.factory();
  scenario->validate(config.params);

  RunResult result;
  result.environment = config.environment ? *config.environment : probe_environment();
  result.scenario = entry.name;
  result.params = config.params;
  result.seed = config.seed;
  RunPlan plan = plan_allocator(config, result.environment, result);
  result.allocator = backend_info(plan.kind).name;
  result.backend = plan.kind;
  result.allocator_options = plan.allocator_options;

  std::atomic<bool> timed_out{false};
  Watchdog watchdog(config, result, timed_out);  // the input's load and device set-up included
  if (!prepare_input(config, *scenario, result, timed_out)) return result;
  settle_plan(config, *scenario, plan, result);  // a model's settings from the loaded trace
  result.allocator = backend_info(plan.kind).name;
  result.backend = plan.kind;
  result.allocator_options = plan.allocator_options;
  result.simulated = plan.simulated;

  DeviceHold hold;
  std::unique_ptr<Allocator> backend;
  std::uint64_t budget = 0;
  if (plan.simulated) {
    const std::uint64_t total = simulated_card_bytes(config.budget, plan);
    result.allocator_options = plan.allocator_options;
    budget = resolve_budget(config.budget, config.notice, result, total, total,
                            "of the simulated card", kept_back_bytes(nullptr));
    result.budget_bytes = budget;
    backend = make_backend(
        plan.kind, plan.allocator_options,
        {.budget_bytes = budget, .recorded = plan.recorded ? &*plan.recorded : nullptr});
  } else {
    backend = place_on_device(config, plan, hold, result);
    budget = hold.budget_bytes;
    for (const DeviceFacts& d : result.environment.devices) {
      if (d.index == config.device) result.device = d;
    }
  }
  drive(config, *scenario, plan, std::move(backend), budget, hold, result, watchdog, timed_out);
  if (result.outcome == Outcome::completed && result.peak_reserved_bytes > budget) {
    // PyTorch's cudaMallocAsync backend under a fraction caps what it hands out, not its pool.
    notify(config, result,
           fmt::format("completed, though the allocator held {} at its peak, {} over the {} "
                       "budget: the budget capped what the program asked for, not what the "
                       "allocator held; a card of {} would have refused sooner",
                       format_bytes(result.peak_reserved_bytes),
                       format_bytes(result.peak_reserved_bytes - budget), format_bytes(budget),
                       format_bytes(budget)));
  }
  if (hold.session)
    release_device(config, memory_source(plan.kind, plan.allocator_options), hold, result);
  return result;
}

}  // namespace oomlab
