// Where the harness's own cost on the GPU goes (issue 26), one hypothesis at a time. Each
// fill_hypothesis/<h> benchmark fills the same 8 GiB (a ballast holds the rest of the device)
// with 64 KiB blocks from a fresh pool, in each iteration once as the bare loop of CUDA calls and
// once per variant, in an order that turns every iteration; a variant adds one thing to the bare
// loop, or two variants differ in one thing. Counters per variant V (medians over iterations):
//   V_ratio   its fill time over the bare loop's in the same iteration
//   V_ns      nanoseconds a block over the bare loop's
//   V_faults  minor page faults of the filling thread per 1,000 blocks (bare_faults: the floor)
//   V_in_call_ns, V_outside_ns   (*_timed variants) ns a block inside the allocation call and
//             outside it: g_in_call splits the harness's gap into the driver call's and its own
// On every machine: clock/* (one event's timestamp: ns a read, the clock source as the label) and
// first_touch/* (ns to touch a fresh 4 KiB page, and a page already touched).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "fill_variants.hpp"
#include "record/event_clock.hpp"

namespace {

std::string clock_label() {
  std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source = "unknown";
  in >> source;
  return "clocksource " + source +
         (oomlab::EventClock::reads_tsc() ? ", events read the TSC" : ", events read steady_clock");
}

// The recorder's clock read, as Recording::emit makes it once an event.
void BM_EventClock(benchmark::State& state) {
  const oomlab::EventClock clock(std::chrono::steady_clock::now());
  for (auto _ : state)
    benchmark::DoNotOptimize(clock.now_ns());
  state.SetLabel(clock_label());
}
BENCHMARK(BM_EventClock)->Name("clock/event_clock");

void BM_SteadyClock(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(std::chrono::steady_clock::now());
  state.SetLabel(clock_label());
}
BENCHMARK(BM_SteadyClock)->Name("clock/steady_clock");

// Touches every 4 KiB page of a fresh 16 MiB mapping (`fresh`: each one faults) or of one touched
// before (the floor); manual time, per page.
void BM_FirstTouch(benchmark::State& state) {
  constexpr std::size_t kBytes = 16U << 20U;
  constexpr std::size_t kPage = 4096;
  const bool fresh = state.range(0) != 0;
  double seconds = 0;
  for (auto _ : state) {
    void* map = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return state.SkipWithError("mmap failed");
    auto* bytes = static_cast<volatile char*>(map);
    if (!fresh) {
      for (std::size_t i = 0; i < kBytes; i += kPage)
        bytes[i] = 1;
    }
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kBytes; i += kPage)
      bytes[i] = 2;
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += took;
    state.SetIterationTime(took);
    munmap(map, kBytes);
  }
  const auto pages = static_cast<double>(state.iterations() * (kBytes / kPage));
  state.counters["ns_per_page"] = seconds * 1e9 / pages;
}
BENCHMARK(BM_FirstTouch)->Name("first_touch")->ArgName("fresh")->Arg(1)->Arg(0)->UseManualTime();

#if defined(OOMLAB_WITH_CUDA)

using oomlab::bench::FillTime;
using oomlab::bench::Variant;

double median(std::vector<double> v) {
  std::ranges::sort(v);
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// The bare loop and each variant once an iteration, the order turning; see the file's comment.
void fill_hypothesis(benchmark::State& state, const std::vector<Variant>& variants) {
  if (!oomlab::bench::have_device()) return state.SkipWithError("needs a CUDA device");
  oomlab::bench::FillFixture fixture;
  std::vector<Variant> all = {Variant::bare};
  all.insert(all.end(), variants.begin(), variants.end());
  for (const Variant v : all)  // warm up: the context, the driver's tables, the warm variants
    static_cast<void>(oomlab::bench::run_variant(v, fixture));
  std::vector<std::vector<double>> ratio(all.size());
  std::vector<std::vector<double>> extra_ns(all.size());
  std::vector<std::vector<double>> faults(all.size());
  std::vector<std::vector<double>> in_ns(all.size());
  std::vector<std::vector<double>> out_ns(all.size());
  std::vector<double> bare_ns;
  std::size_t turn = 0;
  for (auto _ : state) {
    std::vector<FillTime> got(all.size());
    for (std::size_t k = 0; k < all.size(); ++k) {
      const std::size_t j = (k + turn) % all.size();
      got[j] = oomlab::bench::run_variant(all[j], fixture);
      if (got[j].blocks == 0) return state.SkipWithError("a fill took no block");
    }
    ++turn;
    const double bare = got[0].seconds / static_cast<double>(got[0].blocks);
    bare_ns.push_back(bare * 1e9);
    for (std::size_t j = 0; j < all.size(); ++j) {
      const double per_block = got[j].seconds / static_cast<double>(got[j].blocks);
      ratio[j].push_back(per_block / bare);
      extra_ns[j].push_back((per_block - bare) * 1e9);
      faults[j].push_back(got[j].faults * 1e3 / static_cast<double>(got[j].blocks));
      if (got[j].in_call_seconds > 0) {
        const double inside = got[j].in_call_seconds / static_cast<double>(got[j].blocks);
        in_ns[j].push_back(inside * 1e9);
        out_ns[j].push_back((per_block - inside) * 1e9);
      }
    }
    state.SetIterationTime(got[0].seconds);
  }
  state.counters["bare_ns_per_block"] = median(bare_ns);
  state.counters["bare_faults"] = median(faults[0]);
  for (std::size_t j = 1; j < all.size(); ++j) {
    const std::string name(oomlab::bench::variant_name(all[j]));
    state.counters[name + "_ratio"] = median(ratio[j]);
    state.counters[name + "_ns"] = median(extra_ns[j]);
    state.counters[name + "_faults"] = median(faults[j]);
    if (!in_ns[j].empty()) {  // a *_timed variant: inside the call and outside it, ns a block
      state.counters[name + "_in_call_ns"] = median(in_ns[j]);
      state.counters[name + "_outside_ns"] = median(out_ns[j]);
    }
  }
}

const bool registered = [] {
  const std::vector<std::pair<const char*, std::vector<Variant>>> hypotheses = {
      {"a_chunks_first_touch", {Variant::recorded, Variant::recorded_warm_log}},
      {"b_clock", {Variant::clock_read}},
      {"c_virtual_call", {Variant::backend_direct, Variant::backend_virtual}},
      {"d_events_csv", {Variant::recorded, Variant::recorded_csv}},
      {"e_live_table", {Variant::live_table, Variant::live_table_warm}},
      {"e_block_list", {Variant::block_list_grown, Variant::block_list_reserved}},
      {"layers", {Variant::backend_virtual, Variant::recorded, Variant::harness}},
      {"g_in_call", {Variant::bare_timed, Variant::harness_timed}},
      {"h_cache_traffic",
       {Variant::bare_timed, Variant::bare_timed_traffic, Variant::harness_timed}},
  };
  for (const auto& [name, variants] : hypotheses) {
    benchmark::RegisterBenchmark((std::string("fill_hypothesis/") + name).c_str(), fill_hypothesis,
                                 variants)
        ->UseManualTime()
        ->Iterations(3)  // each iteration fills 8 GiB once a variant: ~0.3 s each
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

#endif

}  // namespace
