// Traces: parsing (RMM CSV rows a second, the reference PyTorch pickle), replay on the sim (events
// a second, against a bare loop of the same calls), and replay on `async` against a bare loop
// issuing the same pool calls on the GPU, measured in pairs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "allocators/backends.hpp"
#include "device/device.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"
#include "replay_fixture.hpp"
#include "run/runner.hpp"
#include "trace/trace.hpp"

#if defined(OOMLAB_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

using oomlab::bench::synthetic_rmm_log;

constexpr std::size_t kEvents = oomlab::bench::kReplayEvents;

// OOMLAB_RMM_CSV names another RMM log to parse (bench/peers/rmm_csv_peer.py: the file pandas
// reads too); without it, the synthetic log.
void BM_ParseRmmCsv(benchmark::State& state) {
  const char* given = std::getenv("OOMLAB_RMM_CSV");
  const fs::path log = given != nullptr ? fs::path(given) : synthetic_rmm_log(kEvents);
  std::size_t rows = 0;
  std::size_t held = 0;
  for (auto _ : state) {
    const oomlab::trace::Trace t = oomlab::trace::load(log, {.format = oomlab::trace::Format::rmm});
    rows = t.events.size();
    held = t.events.bytes_held();
    benchmark::DoNotOptimize(held);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows));
  state.counters["rows"] = static_cast<double>(rows);
  // What the trace takes in memory once read, per event (the target: at most 24 bytes).
  state.counters["bytes_per_event"] =
      rows == 0 ? 0.0 : static_cast<double>(held) / static_cast<double>(rows);
  state.counters["rows_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * rows), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseRmmCsv)->Unit(benchmark::kMillisecond);

// The sample snapshot, or the file OOMLAB_PICKLE names (bench/peers/pickle_peer.py passes a large
// one): `trace::load` of it, everything included.
void BM_ParsePyTorchPickle(benchmark::State& state) {
  const char* dir =
      std::getenv("OOMLAB_TEST_DATA");  // a copy of the tree elsewhere (the GPU machine)
  const char* file = std::getenv("OOMLAB_PICKLE");
  const fs::path snapshot = file != nullptr ? fs::path(file)
                                            : fs::path(dir != nullptr ? dir : OOMLAB_TEST_DATA) /
                                                  "pytorch_gpt_fp32_snapshot.pickle";
  for (auto _ : state) {
    const oomlab::trace::Trace t = oomlab::trace::load(snapshot, {});
    benchmark::DoNotOptimize(t.events.size());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(fs::file_size(snapshot)));
}
BENCHMARK(BM_ParsePyTorchPickle)->Unit(benchmark::kMillisecond);

using oomlab::bench::replay_config;

const oomlab::BudgetRequest kEightGiB{.kind = oomlab::BudgetRequest::Kind::bytes,
                                      .bytes = oomlab::Bytes{8_GiB}};
const oomlab::BudgetRequest kWholeDevice{.kind = oomlab::BudgetRequest::Kind::all};

// The replay alone (the trace is read before the run starts): events a second.
void BM_ReplayOnSim(benchmark::State& state) {
  const oomlab::RunConfig config = replay_config("sim", kEightGiB);
  for (auto _ : state) {
    const oomlab::RunResult r = oomlab::run_scenario(config);
    if (r.outcome != oomlab::Outcome::completed) {
      state.SkipWithError(("replay: " + r.error_message).c_str());
      return;
    }
    state.SetIterationTime(r.duration_ms / 1e3);
  }
  state.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kEvents), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayOnSim)->UseManualTime()->Unit(benchmark::kMillisecond);

// The same calls straight to a sim allocator: the difference to BM_ReplayOnSim is what the
// harness (recorder, live-block table, replay bookkeeping) costs per event.
void BM_BareLoopOnSim(benchmark::State& state) {
  const oomlab::trace::Trace t = oomlab::trace::load(synthetic_rmm_log(kEvents), {});
  const oomlab::BackendInfo& sim = *oomlab::find_backend("sim");
  std::vector<std::pair<void*, std::uint64_t>> blocks(t.slots);
  for (auto _ : state) {
    const std::unique_ptr<oomlab::Allocator> allocator =
        oomlab::make_sim_backend(oomlab::Params(sim.options), 8_GiB);
    const auto start = std::chrono::steady_clock::now();
    oomlab::trace::EventReader events(t.events);  // read as the replay reads them
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const oomlab::trace::Event& e = events[i];
      if (e.op == oomlab::trace::Op::alloc && e.slot != oomlab::trace::Event::kNone) {
        blocks[e.slot] = {allocator->allocate(e.bytes, {}).ptr, e.bytes};
      } else if (e.op == oomlab::trace::Op::free && e.slot != oomlab::trace::Event::kNone) {
        allocator->deallocate(blocks[e.slot].first, blocks[e.slot].second, {});
        blocks[e.slot] = {};
      }
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (auto& b : blocks)
      b = {};  // the allocator goes with what it still holds
  }
  state.counters["events_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * t.events.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BareLoopOnSim)->UseManualTime()->Unit(benchmark::kMillisecond);

// What writing events.csv costs a replay: the same replay with the file and without, in pairs
// (each going first every other time), timed around the whole run so that the file's last
// writes and its commit count. `ratio` is the median of the pairs' ratios (target <= 1.3).
// range(0): 0 writes the file to the temp folder (a disk, as a user's run does), 1 to /dev/shm
// (memory: oomlab's own cost, without the disk's write bandwidth; ~100 bytes a row).
double replay_seconds(const oomlab::RunConfig& config, std::string& error) {
  const auto start = std::chrono::steady_clock::now();
  const oomlab::RunResult r = oomlab::run_scenario(config);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (r.outcome != oomlab::Outcome::completed) error = "replay: " + r.error_message;
  return took.count();
}

void BM_ReplayEventsCsvOverhead(benchmark::State& state) {
  const fs::path folder = state.range(0) == 0 ? fs::temp_directory_path() : fs::path("/dev/shm");
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return state.SkipWithError("no /dev/shm here");
  const oomlab::RunConfig bare = replay_config("sim", kEightGiB);
  oomlab::RunConfig with_file = bare;
  with_file.events_csv = folder / "oomlab_bench_replay_events.csv";
  std::string error;
  static_cast<void>(replay_seconds(with_file, error));  // warm up: the trace is read once
  std::vector<double> ratios;
  bool file_first = true;
  for (auto _ : state) {
    double without = 0;
    if (!file_first) without = replay_seconds(bare, error);
    const double with = replay_seconds(with_file, error);
    if (file_first) without = replay_seconds(bare, error);
    file_first = !file_first;
    if (!error.empty()) return state.SkipWithError(error.c_str());
    ratios.push_back(with / without);
    state.SetIterationTime(with);
  }
  fs::remove(with_file.events_csv);
  std::sort(ratios.begin(), ratios.end());
  const std::size_t mid = ratios.size() / 2;
  state.counters["ratio"] =
      ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}
BENCHMARK(BM_ReplayEventsCsvOverhead)
    ->ArgName("to_memory")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(6)
    ->Unit(benchmark::kMillisecond);

#if defined(OOMLAB_WITH_CUDA)
bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// The floor: the trace's calls straight to a pool of the bench's own (replay_fixture.hpp). Under
// a budget, a ballast holds the rest of the free memory first, as oomlab's does (a pool on a
// nearly full device is slower, and that is not the harness's cost). Seconds for the loop alone.
double bare_loop_seconds(const oomlab::trace::Trace& t, bool with_ballast) {
  return oomlab::bench::bare_replay_loop(t, {.with_ballast = with_ballast}).seconds;
}

// oomlab's replay on `async` against the bare loop, in pairs: each iteration runs both, each going
// first every other time, so that a noisy machine slows both alike. range(0): 0 for the whole
// device (no ballast), 1 for an 8 GiB budget. The manual time is the replay's; `ratio` is the
// median of the pairs' replay / bare ratios (a ratio of sums let one slow loop move it by 15 %).
void BM_ReplayVsBareLoopOnAsync(benchmark::State& state) {
  if (!have_device()) return state.SkipWithError("needs a CUDA device");
  const bool budget = state.range(0) != 0;
  const oomlab::trace::Trace t = oomlab::trace::load(synthetic_rmm_log(kEvents), {});
  const oomlab::RunConfig config = replay_config("async", budget ? kEightGiB : kWholeDevice);
  double replay_total = 0;
  double bare_total = 0;
  std::vector<double> ratios;
  bool bare_first = true;
  for (auto _ : state) {
    double bare = bare_first ? bare_loop_seconds(t, budget) : 0;
    const oomlab::RunResult r = oomlab::run_scenario(config);
    if (r.outcome != oomlab::Outcome::completed)
      return state.SkipWithError(("replay: " + r.error_message).c_str());
    if (!bare_first) bare = bare_loop_seconds(t, budget);
    bare_first = !bare_first;
    const double replay = r.duration_ms / 1e3;
    replay_total += replay;
    bare_total += bare;
    ratios.push_back(replay / bare);
    state.SetIterationTime(replay);
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["events_per_second"] = static_cast<double>(kEvents) * n / replay_total;
  state.counters["bare_events_per_second"] = static_cast<double>(kEvents) * n / bare_total;
  std::sort(ratios.begin(), ratios.end());
  const std::size_t mid = ratios.size() / 2;
  state.counters["ratio"] =
      ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}
BENCHMARK(BM_ReplayVsBareLoopOnAsync)
    ->ArgName("budget_8GiB")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(2)  // pairs a repetition (~5 s each): each order once
    ->Unit(benchmark::kMillisecond);

// Where a replay's time goes on `async`, a layer at a time (issue 16: timers around each part of
// the path). The same trace, in each iteration through each of:
//   bare      the CUDA calls alone on a pool of the bench's own (the floor: bare_loop_seconds)
//   backend   oomlab's async allocator object: its bookkeeping, its periodic pool reading
//   recorded  the same under the recorder: a clock read and an event to the log (a null sink)
//   run       a whole oomlab run of the replay: scenario, harness, live-block table, verdict
// Each counter is that layer's nanoseconds an event, the median over the iterations; the time a
// layer adds is its figure less the one before.
double layer_seconds(const oomlab::trace::Trace& t, bool record) {
  const oomlab::DeviceSession session(0);
  std::unique_ptr<oomlab::Allocator> allocator = oomlab::make_backend(
      oomlab::BackendKind::async, oomlab::Params(oomlab::find_backend("async")->options),
      {.budget_bytes = session.free_bytes(), .device = 0, .stream = session.stream()});
  std::optional<oomlab::EventLog> log;
  if (record) {
    log.emplace(std::make_unique<oomlab::NullSink>());
    allocator = std::make_unique<oomlab::Recording>(std::move(allocator), *log,
                                                    oomlab::Recording::Clock::now());
  }
  std::vector<std::pair<void*, std::uint64_t>> blocks(t.slots);
  oomlab::trace::EventReader events(t.events);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const oomlab::trace::Event& e = events[i];
    if (e.slot == oomlab::trace::Event::kNone) continue;
    if (e.op == oomlab::trace::Op::alloc) {
      blocks[e.slot] = {allocator->allocate(e.bytes, session.stream()).ptr, e.bytes};
    } else if (e.op == oomlab::trace::Op::free) {
      allocator->deallocate(blocks[e.slot].first, blocks[e.slot].second, session.stream());
      blocks[e.slot] = {};
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [ptr, bytes] : blocks) {  // what the trace never freed
    if (ptr != nullptr) allocator->deallocate(ptr, bytes, session.stream());
  }
  session.synchronize();
  allocator.reset();
  if (log) log->close();
  return seconds;
}

void BM_ReplayPathLayersOnAsync(benchmark::State& state) {
  if (!have_device()) return state.SkipWithError("needs a CUDA device");
  const oomlab::trace::Trace t = oomlab::trace::load(synthetic_rmm_log(kEvents), {});
  const oomlab::RunConfig config = replay_config("async", kWholeDevice);
  std::array<std::vector<double>, 4> seconds;
  for (auto _ : state) {
    seconds[0].push_back(bare_loop_seconds(t, false));
    seconds[1].push_back(layer_seconds(t, false));
    seconds[2].push_back(layer_seconds(t, true));
    const oomlab::RunResult r = oomlab::run_scenario(config);
    if (r.outcome != oomlab::Outcome::completed)
      return state.SkipWithError(("replay: " + r.error_message).c_str());
    seconds[3].push_back(r.duration_ms / 1e3);
    state.SetIterationTime(seconds[3].back());
  }
  const std::array<const char*, 4> names = {"bare_ns", "backend_ns", "recorded_ns", "run_ns"};
  for (std::size_t k = 0; k < names.size(); ++k) {
    std::sort(seconds[k].begin(), seconds[k].end());
    state.counters[names[k]] = seconds[k][seconds[k].size() / 2] * 1e9 / kEvents;
  }
}
BENCHMARK(BM_ReplayPathLayersOnAsync)
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace
