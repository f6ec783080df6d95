// What the harness costs. Over a backend that does nothing, every nanosecond is oomlab's own:
//   null_backend                 the floor: a virtual allocate + deallocate and nothing else
//   recorder/null_backend        + the Recording adaptor and the event log (per event)
//   scenario_api/null_backend    + the scenario API a scenario calls (live-block table, checks)
// On a GPU, oomlab's fragmentation fill against a bare loop making the same calls on the same
// backend under the same budget, in pairs (each goes first every other iteration):
//   fill_vs_bare/<cuda|async>                  counter `ratio` = oomlab fill time / bare loop time
//   fill_vs_bare/<cuda|async>/no_events_csv    the same without writing events.csv
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/registry.hpp"
#include "record/event_log.hpp"
#include "record/phase_table.hpp"
#include "record/recording.hpp"
#include "run/harness_context.hpp"
#include "run/runner.hpp"

#if defined(OOMLAB_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace oomlab::literals;

// Hands out one fake address and forgets it: the floor under any real backend.
class NullAllocator final : public oomlab::Allocator {
 private:
  [[nodiscard]] std::string_view do_name() const override { return "null"; }
  oomlab::AllocResult do_allocate(std::size_t /*bytes*/, oomlab::Stream /*stream*/) override {
    return {reinterpret_cast<void*>(0x1000), oomlab::AllocStatus::ok, 0};  // NOLINT
  }
  void do_deallocate(void* /*ptr*/, std::size_t /*bytes*/, oomlab::Stream /*stream*/) override {}
  [[nodiscard]] oomlab::MemoryState do_state() const override { return {}; }
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override { return 0; }
  [[nodiscard]] bool do_simulated() const override { return true; }
};

void per_event(benchmark::State& state) {
  const auto events = static_cast<double>(state.iterations() * 2);
  state.SetItemsProcessed(state.iterations() * 2);
  state.counters["time_per_event"] =
      benchmark::Counter(events, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_NullBackend(benchmark::State& state) {
  NullAllocator null;
  oomlab::Allocator& a = null;
  for (auto _ : state) {
    const oomlab::AllocResult r = a.allocate(4096, {});
    a.deallocate(r.ptr, 4096, {});
    benchmark::DoNotOptimize(r.ptr);
  }
  per_event(state);
}
BENCHMARK(BM_NullBackend)->Name("null_backend");

void BM_RecorderOverNullBackend(benchmark::State& state) {
  oomlab::EventLog log(std::make_unique<oomlab::NullSink>());
  oomlab::Recording rec(std::make_unique<NullAllocator>(), log, oomlab::Recording::Clock::now());
  for (auto _ : state) {
    const oomlab::AllocResult r = rec.allocate(4096, {});
    rec.deallocate(r.ptr, 4096, {});
  }
  per_event(state);
  log.close();
}
BENCHMARK(BM_RecorderOverNullBackend)->Name("recorder/null_backend");

// What a scenario's try_allocate + release cost: the recorder plus the harness's bookkeeping,
// with 1,000 blocks live so that the live-block table is not trivially empty.
void BM_ScenarioApiOverNullBackend(benchmark::State& state) {
  oomlab::EventLog log(std::make_unique<oomlab::NullSink>());
  oomlab::Recording rec(std::make_unique<NullAllocator>(), log, oomlab::Recording::Clock::now());
  oomlab::PhaseTable phases;
  oomlab::HarnessContext ctx(
      rec, phases, {.budget_bytes = 1_TiB, .simulated = true, .verify = oomlab::VerifyMode::off});
  ctx.phase("fill");
  std::vector<oomlab::Block> held;
  for (int i = 0; i < 1000; ++i)
    held.push_back(ctx.try_allocate(4096, "held"));
  for (auto _ : state) {
    oomlab::Block b = ctx.try_allocate(4096, "fill");
    ctx.release(b);
  }
  per_event(state);
  ctx.release_all();
  log.close();
}
BENCHMARK(BM_ScenarioApiOverNullBackend)->Name("scenario_api/null_backend");

#if defined(OOMLAB_WITH_CUDA)

constexpr std::uint64_t kFillBudget = 8_GiB;
constexpr std::size_t kFillBlock = 64_KiB;

bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// The bare loop: a ballast leaving kFillBudget free, as oomlab's runner makes one; then 64 KiB
// blocks until the first refusal, from a pool made as oomlab's async backend makes it (device
// 0, CUDA's defaults) or from cudaMalloc. Seconds for the fill alone; everything is freed after.
double bare_fill_seconds(oomlab::BackendKind kind) {
  cudaDeviceSynchronize();
  std::size_t free = 0;
  std::size_t total = 0;
  cudaMemGetInfo(&free, &total);
  void* ballast = nullptr;
  if (free > kFillBudget + 2_MiB) cudaMalloc(&ballast, (free - kFillBudget) / 2_MiB * 2_MiB);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaMemPool_t pool = nullptr;
  if (kind == oomlab::BackendKind::async) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    cudaMemPoolCreate(&pool, &props);
  }
  std::vector<void*> blocks;
  blocks.reserve(kFillBudget / kFillBlock + 1);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    void* p = nullptr;
    const cudaError_t status = pool != nullptr
                                   ? cudaMallocFromPoolAsync(&p, kFillBlock, pool, stream)
                                   : cudaMalloc(&p, kFillBlock);
    if (status != cudaSuccess) break;
    blocks.push_back(p);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)cudaGetLastError();
  for (void* p : blocks) {
    if (pool != nullptr) {
      cudaFreeAsync(p, stream);
    } else {
      cudaFree(p);
    }
  }
  cudaStreamSynchronize(stream);
  if (pool != nullptr) cudaMemPoolDestroy(pool);
  cudaStreamDestroy(stream);
  cudaFree(ballast);
  return seconds;
}

oomlab::RunConfig fill_config(oomlab::BackendKind kind, bool events_file) {
  oomlab::RunConfig config;
  config.scenario = "fragmentation";
  config.params = oomlab::Params(oomlab::Registry::global().find("fragmentation")->params);
  config.params.set("block", oomlab::Bytes{kFillBlock});
  config.params.set("touch", false);  // the bare loop only allocates
  config.allocator = kind;
  config.allocator_options = oomlab::Params(oomlab::backend_info(kind).options);
  config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{kFillBudget}};
  config.verify = oomlab::VerifyMode::off;  // nor does it write data
  // Events go to a file, as in any run: the writer thread works while the fill goes on.
  if (events_file)
    config.events_csv = std::filesystem::temp_directory_path() / "oomlab_bench_fill_events.csv";
  return config;
}

double metric(const oomlab::RunResult& r, std::string_view name) {
  for (const auto& [key, value] : r.metrics) {
    if (key == name) return value;
  }
  return -1;
}

// One oomlab fill: seconds, and the blocks it took; 0 seconds when the run did not end in OOM.
std::pair<double, double> oomlab_fill(const oomlab::RunConfig& config, std::string& error) {
  const oomlab::RunResult r = oomlab::run_scenario(config);
  const double fill_ms = metric(r, "fill_ms");
  if (r.outcome != oomlab::Outcome::oom || fill_ms < 0) {
    error = "fragmentation did not end in OOM: " + r.error_message;
    return {0, 0};
  }
  return {fill_ms / 1e3, metric(r, "fill_blocks")};
}

void fill_vs_bare(benchmark::State& state, oomlab::BackendKind kind, bool events_file) {
  if (!have_device()) return state.SkipWithError("needs a CUDA device");
  const oomlab::RunConfig config = fill_config(kind, events_file);
  std::string error;
  static_cast<void>(bare_fill_seconds(kind));  // warm up: the context, the driver's tables
  static_cast<void>(oomlab_fill(config, error));
  double oomlab_total = 0;
  double bare_total = 0;
  double blocks = 0;
  std::vector<double> ratios;  // one per pair: the pairs share whatever the machine did then
  bool bare_first = true;
  for (auto _ : state) {
    // Each goes first every other time: whatever one leaves behind (memory the driver is still
    // taking back) weighs on both alike.
    double bare = 0;
    if (bare_first) bare = bare_fill_seconds(kind);
    const auto [seconds, filled] = oomlab_fill(config, error);
    if (seconds == 0) return state.SkipWithError(error.c_str());
    if (!bare_first) bare = bare_fill_seconds(kind);
    bare_first = !bare_first;
    blocks = filled;
    oomlab_total += seconds;
    bare_total += bare;
    ratios.push_back(seconds / bare);
    state.SetIterationTime(seconds);
  }
  if (events_file) std::filesystem::remove(config.events_csv);
  const auto n = static_cast<double>(state.iterations());
  state.counters["fill_blocks"] = blocks;
  state.counters["ns_per_block"] = oomlab_total / n / blocks * 1e9;
  state.counters["bare_ns_per_block"] = bare_total / n / blocks * 1e9;
  // The median of the paired ratios: one slow bare loop (the machine busy elsewhere) moves it
  // less than it moves a ratio of totals.
  std::ranges::sort(ratios);
  const std::size_t mid = ratios.size() / 2;
  state.counters["ratio"] =
      ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
}

const bool registered = [] {
  for (const auto kind : {oomlab::BackendKind::async, oomlab::BackendKind::cuda}) {
    for (const bool events_file : {true, false}) {
      const std::string name = std::string("fill_vs_bare/") + oomlab::backend_info(kind).name +
                               (events_file ? "" : "/no_events_csv");
      benchmark::RegisterBenchmark(name.c_str(), fill_vs_bare, kind, events_file)
          ->UseManualTime()
          ->Iterations(8)  // pairs a repetition: each fill takes ~0.2 s
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

#endif

}  // namespace
