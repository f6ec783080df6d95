// The sim's cost per event (items_per_second = allocate/free events a second):
//   sim/pairs_among_live/<N>   allocate + free pairs of 64 KiB at random places among N live
//                              blocks, N = 1k ... 1M: the curve that shows O(log n) or better
//   sim/fill/<N>               N blocks of 64 KiB into an empty sim
//   sim/scattered_free/<N>     N live blocks freed in random order
//   sim/large_requests/<N>     1 GiB requests (512 pages from anywhere) among N live small
//                              blocks whose free pages lie scattered
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "allocators/sim_allocator.hpp"
#include "oomlab/rng.hpp"

namespace {

using namespace oomlab::literals;

constexpr std::size_t kBlock = 64_KiB;

std::vector<void*> fill(oomlab::SimAllocator& sim, std::size_t count) {
  std::vector<void*> blocks(count);
  for (void*& b : blocks)
    b = sim.allocate(kBlock, {}).ptr;
  return blocks;
}

void BM_PairsAmongLive(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  oomlab::SimAllocator sim({.capacity_bytes = live * kBlock * 2});
  std::vector<void*> blocks = fill(sim, live);
  oomlab::Rng rng(1);
  // The caller's own table of 1M blocks is 8 MB: its random slot is fetched one pair ahead, so
  // that the figure is the sim's time and not this loop's cache miss.
  std::size_t next = rng.uniform(0, live - 1);
  for (auto _ : state) {
    const std::size_t i = next;
    next = rng.uniform(0, live - 1);
    __builtin_prefetch(&blocks[next], 1);
    sim.deallocate(blocks[i], kBlock, {});
    blocks[i] = sim.allocate(kBlock, {}).ptr;
    benchmark::DoNotOptimize(blocks[i]);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // events: one free, one allocate
}
BENCHMARK(BM_PairsAmongLive)
    ->Name("sim/pairs_among_live")
    ->RangeMultiplier(10)
    ->Range(1'000, 1'000'000);

void BM_Fill(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    oomlab::SimAllocator sim({.capacity_bytes = count * kBlock * 2});
    std::vector<void*> blocks(count);
    const auto start = std::chrono::steady_clock::now();
    for (void*& b : blocks)
      b = sim.allocate(kBlock, {}).ptr;
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    benchmark::DoNotOptimize(blocks.back());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Fill)
    ->Name("sim/fill")
    ->Arg(1'000'000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_ScatteredFree(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  oomlab::Rng rng(3);
  for (std::size_t i = count - 1; i > 0; --i)  // Fisher-Yates with oomlab's own generator
    std::swap(order[i], order[rng.uniform(0, i)]);
  for (auto _ : state) {
    oomlab::SimAllocator sim({.capacity_bytes = count * kBlock * 2});
    const std::vector<void*> blocks = fill(sim, count);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < count; ++k) {
      // The caller's table, fetched ahead (see pairs_among_live).
      if (k + 8 < count) __builtin_prefetch(&blocks[order[k + 8]]);
      sim.deallocate(blocks[order[k]], kBlock, {});
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ScatteredFree)
    ->Name("sim/scattered_free")
    ->Arg(1'000'000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// 2N blocks, then every block of a random half of the 2 MiB pages freed: N live blocks with
// free pages scattered among theirs. Each iteration: a 1 GiB request and its free.
void BM_LargeRequests(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  oomlab::SimAllocator sim({.capacity_bytes = live * kBlock * 2 + 4_GiB});
  std::vector<void*> blocks = fill(sim, live * 2);
  constexpr std::size_t kPerPage = 2_MiB / kBlock;
  oomlab::Rng rng(5);
  std::size_t freed = 0;
  for (std::size_t page = 0; page * kPerPage < blocks.size(); ++page) {
    if (freed >= live || !rng.chance(0.5)) continue;
    for (std::size_t i = page * kPerPage; i < (page + 1) * kPerPage && i < blocks.size(); ++i) {
      sim.deallocate(blocks[i], kBlock, {});
      ++freed;
    }
  }
  for (auto _ : state) {
    const oomlab::AllocResult r = sim.allocate(1_GiB, {});
    if (!r.ok()) return state.SkipWithError("the 1 GiB request failed");
    sim.deallocate(r.ptr, 1_GiB, {});
  }
  state.counters["live_blocks"] = static_cast<double>(blocks.size() - freed);
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_LargeRequests)->Name("sim/large_requests")->Arg(1'000'000);

}  // namespace
