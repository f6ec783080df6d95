// The replay benchmarks' synthetic RMM log, replay configuration and bare loop
// (replay_fixture.hpp).
#include "replay_fixture.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/rng.hpp"
#include "oomlab/units.hpp"
#include "record/event_clock.hpp"

#if defined(OOMLAB_WITH_CUDA)
#include <cuda_runtime_api.h>

#include <chrono>
#endif

namespace oomlab::bench {

namespace fs = std::filesystem;
using namespace oomlab::literals;

const fs::path& synthetic_rmm_log(std::size_t events) {
  static const fs::path path = [events] {
    const fs::path p =
        fs::temp_directory_path() / ("oomlab_bench_rmm_" + std::to_string(events) + ".csv");
    std::ofstream out(p);
    out << "Thread,Time,Action,Pointer,Size,Stream\n";
    Rng rng(7);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
    std::uint64_t next_address = 0x7f0000000000;
    for (std::size_t i = 0; i < events; ++i) {
      const std::uint64_t us = i;
      char time[32];
      std::snprintf(time, sizeof time, "%02llu:%02llu:%02llu.%06llu", (us / 3'600'000'000ULL) % 24,
                    (us / 60'000'000ULL) % 60, (us / 1'000'000ULL) % 60, us % 1'000'000ULL);
      if (!live.empty() && (live.size() >= 2048 || rng.chance(0.5))) {
        const std::size_t k = rng.uniform(0, live.size() - 1);
        out << "1," << time << ",free,0x" << std::hex << live[k].first << std::dec << ','
            << live[k].second << ",0\n";
        live[k] = live.back();
        live.pop_back();
      } else {
        const auto size = static_cast<std::uint64_t>(std::exp2(8.0 + rng.unit() * 12.0));
        out << "1," << time << ",allocate,0x" << std::hex << next_address << std::dec << ',' << size
            << ",0\n";
        live.emplace_back(next_address, size);
        next_address += 1_MiB;
      }
    }
    return p;
  }();
  return path;
}

RunConfig replay_config(const char* allocator, BudgetRequest budget) {
  RunConfig config;
  config.scenario = "replay";
  config.params = Params(Registry::global().find("replay")->params);
  config.params.set("trace", synthetic_rmm_log(kReplayEvents).string());
  config.allocator = find_backend(allocator)->kind;
  config.allocator_options = Params(find_backend(allocator)->options);
  config.budget = budget;
  config.verify = VerifyMode::off;  // the bare loops write nothing either
  return config;
}

#if defined(OOMLAB_WITH_CUDA)
namespace {

template <bool kTimed>
BareLoopTime pool_loop(const trace::Trace& t, cudaMemPool_t pool, cudaStream_t stream,
                       std::vector<std::array<std::uint64_t, 8>>* traffic) {
  std::vector<void*> blocks(t.slots, nullptr);  // the replay's slots: one per block live at once
  const EventClock clock(std::chrono::steady_clock::now());
  std::uint64_t inside_ns = 0;
  const auto start = std::chrono::steady_clock::now();
  trace::EventReader events(t.events);  // read as the replay reads them
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = events[i];
    if (e.slot == trace::Event::kNone) continue;
    std::uint64_t before = 0;
    if constexpr (kTimed) before = clock.now_ns();
    if (e.op == trace::Op::alloc) {
      cudaMallocFromPoolAsync(&blocks[e.slot], e.bytes, pool, stream);
    } else if (e.op == trace::Op::free) {
      cudaFreeAsync(blocks[e.slot], stream);
      blocks[e.slot] = nullptr;
    }
    if constexpr (kTimed) {
      inside_ns += clock.now_ns() - before;
      if (traffic != nullptr) (*traffic)[i].fill(before);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (void* b : blocks) {  // what the trace never freed
    if (b != nullptr) cudaFreeAsync(b, stream);
  }
  return {.seconds = seconds, .in_call_seconds = static_cast<double>(inside_ns) * 1e-9};
}

}  // namespace

BareLoopTime bare_replay_loop(const trace::Trace& t, const BareLoopOptions& options) {
  void* ballast = nullptr;
  if (options.with_ballast) {
    std::size_t free = 0;
    std::size_t total = 0;
    cudaMemGetInfo(&free, &total);
    const std::size_t page = 2_MiB;
    if (free > 8_GiB + page) cudaMalloc(&ballast, (free - 8_GiB) / page * page);
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaMemPool_t pool = nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  cudaMemPoolCreate(&pool, &props);
  const BareLoopTime time = options.timed ? pool_loop<true>(t, pool, stream, options.traffic)
                                          : pool_loop<false>(t, pool, stream, nullptr);
  cudaStreamSynchronize(stream);
  cudaMemPoolDestroy(pool);
  cudaStreamDestroy(stream);
  cudaFree(ballast);
  return time;
}
#endif

}  // namespace oomlab::bench
