// The sim's cost per event as live blocks grow (1k ... 1M): allocate + free pairs of small blocks
// among N live ones, and large requests across scattered free pages.
#include <benchmark/benchmark.h>

#include <vector>

#include "allocators/sim_allocator.hpp"
#include "oomlab/rng.hpp"

namespace {

using namespace oomlab::literals;

// N live 64 KiB blocks, then alloc/free pairs at random positions among them.
void BM_SimSmallPairsAmongLive(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  oomlab::SimAllocator sim({.capacity_bytes = live * 64_KiB * 2});
  std::vector<void*> blocks(live);
  for (auto& b : blocks)
    b = sim.allocate(64_KiB, {}).ptr;
  oomlab::Rng rng(1);
  for (auto _ : state) {
    const std::size_t i = rng.uniform(0, live - 1);
    sim.deallocate(blocks[i], 64_KiB, {});
    blocks[i] = sim.allocate(64_KiB, {}).ptr;
    benchmark::DoNotOptimize(blocks[i]);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // events: one free, one allocate
}
BENCHMARK(BM_SimSmallPairsAmongLive)->RangeMultiplier(10)->Range(1000, 1000000);

// Large requests (pages taken from anywhere) among a fragmented small-block population.
void BM_SimLargeRequests(benchmark::State& state) {
  oomlab::SimAllocator sim({.capacity_bytes = 64_GiB});
  std::vector<void*> small;
  for (int i = 0; i < 100000; ++i)
    small.push_back(sim.allocate(64_KiB, {}).ptr);
  for (std::size_t i = 0; i < small.size(); ++i) {
    if (i % 32 != 0) sim.deallocate(small[i], 64_KiB, {});
  }
  for (auto _ : state) {
    const oomlab::AllocResult r = sim.allocate(1_GiB, {});
    sim.deallocate(r.ptr, 1_GiB, {});
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_SimLargeRequests);

}  // namespace
