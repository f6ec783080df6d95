// Allocator latency: what one allocate + free pair costs on each backend, by size (256 B ... 1 GiB)
// and as the number of live blocks grows (1k ... 1M) — the figures to compare across drivers.
// The backends are oomlab's own classes without the recorder, so this is the allocator's cost
// as a run meets it. GPU work is timed after synchronizing the stream, over many pairs.
//   pair_by_size/<backend>/<bytes>     ns per pair, nothing else live
//   pair_among_live/<backend>/<live>   ns per pair of 64 KiB blocks among <live> live ones
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/rng.hpp"
#include "oomlab/units.hpp"

#if defined(OOMLAB_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace {

using namespace oomlab::literals;
using oomlab::BackendKind;

constexpr std::uint64_t kLiveBlockBytes = 64_KiB;

// The device's free memory, or 0 without a usable device.
std::uint64_t device_free_bytes() {
#if defined(OOMLAB_WITH_CUDA)
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 0;
  std::size_t free = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return free;
#else
  return 0;
#endif
}

// One backend on device 0 with its own non-blocking stream (none for the sim), freed in order.
class Bench {
 public:
  explicit Bench(BackendKind kind) : kind_(kind) {
    const oomlab::Params options(oomlab::backend_info(kind).options);
    if (kind == BackendKind::sim) {
      allocator_ = oomlab::make_sim_backend(options, 96_GiB);
      return;
    }
#if defined(OOMLAB_WITH_CUDA)
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    stream_ = oomlab::Stream{stream};
    allocator_ = oomlab::make_backend(
        kind, options, {.budget_bytes = device_free_bytes(), .device = 0, .stream = stream_});
#endif
  }
  ~Bench() {
    allocator_.reset();
#if defined(OOMLAB_WITH_CUDA)
    if (stream_.handle != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_.handle));
#endif
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  Bench(Bench&&) = delete;
  Bench& operator=(Bench&&) = delete;

  oomlab::Allocator& allocator() {
    return *allocator_;
  }
  [[nodiscard]] oomlab::Stream stream() const {
    return stream_;
  }
  // Waits for the stream's frees (stream-ordered on async) to be done.
  void synchronize() const {
#if defined(OOMLAB_WITH_CUDA)
    if (stream_.handle != nullptr) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_.handle));
#endif
  }

 private:
  BackendKind kind_;
  oomlab::Stream stream_;
  std::unique_ptr<oomlab::Allocator> allocator_;
};

// Why this backend cannot run `needed` bytes here, or empty. Managed memory may take no more
// than half of what the device has free (asking for more can hang the GPU).
std::string cannot_run(BackendKind kind, std::uint64_t needed) {
  if (kind == BackendKind::sim) return {};
  const std::uint64_t free = device_free_bytes();
  if (free == 0) return "needs a CUDA device";
  const std::uint64_t allowed = kind == BackendKind::managed ? free / 2 : free / 10 * 9;
  if (needed > allowed) {
    return fmt::format("needs {} of device memory; {} may be used here",
                       oomlab::format_bytes(needed), oomlab::format_bytes(allowed));
  }
  return {};
}

// Times `pairs` allocate + free pairs of `bytes`, synchronized at the end; seconds.
double time_pairs(Bench& b, std::size_t bytes, std::size_t pairs, bool& failed) {
  oomlab::Allocator& a = b.allocator();
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pairs; ++i) {
    const oomlab::AllocResult r = a.allocate(bytes, b.stream());
    if (!r.ok()) {
      failed = true;
      break;
    }
    a.deallocate(r.ptr, bytes, b.stream());
  }
  b.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void pair_by_size(benchmark::State& state, BackendKind kind, std::size_t bytes) {
  if (const std::string why = cannot_run(kind, bytes); !why.empty())
    return state.SkipWithError(why.c_str());
  Bench b(kind);
  // Enough pairs an iteration that one synchronization is noise, few enough for 1 GiB cudaMalloc.
  const std::size_t pairs = bytes >= 2_MiB ? 64 : 1024;
  bool failed = false;
  static_cast<void>(time_pairs(b, bytes, 8, failed));  // warm up: the pool's first reservation
  for (auto _ : state) {
    state.SetIterationTime(time_pairs(b, bytes, pairs, failed));
    if (failed) return state.SkipWithError("an allocation failed");
  }
  const auto total = static_cast<double>(state.iterations() * pairs);
  state.counters["pairs"] = total;
  state.counters["ns_per_pair"] =
      benchmark::Counter(total * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void pair_among_live(benchmark::State& state, BackendKind kind, std::size_t live) {
  if (const std::string why = cannot_run(kind, (live + 1) * kLiveBlockBytes); !why.empty())
    return state.SkipWithError(why.c_str());
  Bench b(kind);
  oomlab::Allocator& a = b.allocator();
  std::vector<void*> blocks(live, nullptr);
  for (void*& block : blocks) {
    const oomlab::AllocResult r = a.allocate(kLiveBlockBytes, b.stream());
    if (!r.ok()) break;
    block = r.ptr;
  }
  const bool filled = blocks.back() != nullptr;
  oomlab::Rng rng(1);
  constexpr std::size_t kPairs = 4096;
  bool failed = !filled;
  for (auto _ : state) {
    if (failed) break;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kPairs; ++i) {
      void*& block = blocks[rng.uniform(0, live - 1)];
      a.deallocate(block, kLiveBlockBytes, b.stream());
      const oomlab::AllocResult r = a.allocate(kLiveBlockBytes, b.stream());
      block = r.ptr;
      if (!r.ok()) {
        failed = true;
        break;
      }
    }
    b.synchronize();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  for (void* block : blocks) {
    if (block != nullptr) a.deallocate(block, kLiveBlockBytes, b.stream());
  }
  b.synchronize();
  if (failed) return state.SkipWithError("an allocation failed");
  const auto total = static_cast<double>(state.iterations() * kPairs);
  state.counters["ns_per_pair"] =
      benchmark::Counter(total * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

struct Named {
  const char* name;
  BackendKind kind;
};
constexpr std::array kBackends = {
    Named{"cuda", BackendKind::cuda}, Named{"async", BackendKind::async},
    Named{"managed", BackendKind::managed}, Named{"sim", BackendKind::sim}};

struct Size {
  std::size_t bytes;
  const char* label;
};
constexpr std::array kSizes = {Size{256, "256B"},   Size{4_KiB, "4KiB"},   Size{64_KiB, "64KiB"},
                               Size{2_MiB, "2MiB"}, Size{64_MiB, "64MiB"}, Size{1_GiB, "1GiB"}};

const bool registered = [] {
  for (const Named& backend : kBackends) {
    for (const auto& [bytes, label] : kSizes) {
      benchmark::RegisterBenchmark(fmt::format("pair_by_size/{}/{}", backend.name, label).c_str(),
                                   pair_by_size, backend.kind, bytes)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const Named& backend : kBackends) {
    for (const std::size_t live : {1'000, 10'000, 100'000, 1'000'000}) {
      // One iteration of many pairs each: filling 1M blocks once is the slow part.
      benchmark::RegisterBenchmark(fmt::format("pair_among_live/{}/{}", backend.name, live).c_str(),
                                   pair_among_live, backend.kind, live)
          ->UseManualTime()
          ->Iterations(live >= 100'000 ? 16 : 64)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
