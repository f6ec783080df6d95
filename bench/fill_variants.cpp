// The fills of bench/fill_variants.hpp: the bare loop and the loops with one piece of the harness.
#include "fill_variants.hpp"

#if defined(OOMLAB_WITH_CUDA)

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <sys/resource.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <memory>

#include "allocators/async_allocator.hpp"
#include "allocators/backends.hpp"
#include "in_call_timer.hpp"
#include "oomlab/units.hpp"
#include "record/csv_sink.hpp"
#include "record/event_clock.hpp"
#include "record/phase_table.hpp"
#include "record/recording.hpp"
#include "run/harness_context.hpp"

namespace oomlab::bench {

namespace {

using namespace oomlab::literals;

constexpr std::uint64_t kBudget = 8_GiB;
constexpr std::size_t kBlock = 64_KiB;
constexpr std::size_t kMaxBlocks = kBudget / kBlock + 4096;  // the ballast leaves a little more

double thread_faults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_minflt);
}

// Times take(i) for i = 0, 1, ... until it says no (the first refusal): the fill alone.
template <typename Take>
FillTime timed_fill(Take&& take) {
  const double faults = thread_faults();
  const auto start = std::chrono::steady_clock::now();
  std::size_t n = 0;
  while (n < kMaxBlocks && take(n))
    ++n;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {.seconds = seconds, .blocks = n, .faults = thread_faults() - faults};
}

cudaStream_t stream_of(const FillFixture& f) {
  return static_cast<cudaStream_t>(f.stream);
}

// A pool as oomlab's async backend makes it (device 0, CUDA's defaults), for the bare loops.
class RawPool {
 public:
  explicit RawPool(cudaStream_t stream) : stream_(stream) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    cudaMemPoolCreate(&pool_, &props);
  }
  ~RawPool() {
    cudaStreamSynchronize(stream_);
    cudaMemPoolDestroy(pool_);
  }
  RawPool(const RawPool&) = delete;
  RawPool& operator=(const RawPool&) = delete;
  RawPool(RawPool&&) = delete;
  RawPool& operator=(RawPool&&) = delete;

  bool allocate(void*& ptr) {
    if (cudaMallocFromPoolAsync(&ptr, kBlock, pool_, stream_) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  }
  void free(std::vector<void*>& ptrs, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      cudaFreeAsync(ptrs[i], stream_);
  }

 private:
  cudaStream_t stream_;
  cudaMemPool_t pool_ = nullptr;
};

// The bare loop, with `extra(i, ptr)` after each block it took.
template <typename Extra>
FillTime bare_plus(FillFixture& f, Extra&& extra) {
  RawPool pool(stream_of(f));
  const FillTime t = timed_fill([&](std::size_t i) {
    if (!pool.allocate(f.ptrs[i])) return false;
    extra(i, f.ptrs[i]);
    return true;
  });
  pool.free(f.ptrs, t.blocks);
  return t;
}

FillTime raw_variant(Variant v, FillFixture& f) {
  switch (v) {
    case Variant::clock_read: {
      const EventClock clock(std::chrono::steady_clock::now());
      std::uint64_t sum = 0;
      const FillTime t = bare_plus(f, [&](std::size_t, void*) { sum += clock.now_ns(); });
      benchmark::DoNotOptimize(sum);
      return t;
    }
    case Variant::live_table: {
      LiveBlocks table;  // made before the fill, as HarnessContext is before the scenario runs
      return bare_plus(f, [&](std::size_t, void* p) { table.add(p, kBlock, f.stream); });
    }
    case Variant::live_table_warm: {  // its slots now come from the free list, in reverse
      const FillTime t =
          bare_plus(f, [&](std::size_t, void* p) { f.warm_table.add(p, kBlock, f.stream); });
      f.warm_table.drain([](const LiveBlocks::Entry&) {});  // emptied; its memory stays
      return t;
    }
    case Variant::block_list_grown:
    case Variant::block_list_reserved: {
      std::vector<Block> list;
      // As the fragmentation scenario reserves its list (the smaller of budget / block and 1M).
      if (v == Variant::block_list_reserved) list.reserve(kBudget / kBlock);
      const FillTime t = bare_plus(f, [&](std::size_t i, void* p) {
        list.push_back({p, kBlock, AllocStatus::ok, static_cast<std::uint32_t>(i), 1});
      });
      benchmark::DoNotOptimize(list.data());
      return t;
    }
    case Variant::bare_timed:
    case Variant::bare_timed_traffic: {
      const bool traffic = v == Variant::bare_timed_traffic;
      RawPool pool(stream_of(f));
      const EventClock clock(std::chrono::steady_clock::now());
      std::uint64_t inside_ns = 0;
      FillTime t = timed_fill([&](std::size_t i) {
        const std::uint64_t before = clock.now_ns();
        const bool ok = pool.allocate(f.ptrs[i]);
        inside_ns += clock.now_ns() - before;
        if (traffic) f.traffic[i].fill(before);  // 128 bytes the next call's caches lose
        return ok;
      });
      pool.free(f.ptrs, t.blocks);
      t.in_call_seconds = static_cast<double>(inside_ns) * 1e-9;
      return t;
    }
    default:
      return bare_plus(f, [](std::size_t, void*) {});
  }
}

std::unique_ptr<Allocator> async_backend(const FillFixture& f) {
  return make_backend(BackendKind::async, Params(find_backend("async")->options),
                      {.budget_bytes = kBudget, .device = 0, .stream = Stream{f.stream}});
}

FillTime backend_variant(Variant v, FillFixture& f) {
  const std::unique_ptr<Allocator> made = async_backend(f);
  const Stream stream{f.stream};
  FillTime t;
  if (v == Variant::backend_direct) {
    auto& direct = static_cast<AsyncPoolAllocator&>(*made);  // final: calls bind statically
    t = timed_fill([&](std::size_t i) {
      return (f.ptrs[i] = direct.allocate(kBlock, stream).ptr) != nullptr;
    });
  } else {
    Allocator* opaque = made.get();
    benchmark::DoNotOptimize(opaque);  // the compiler may not see which class it is
    t = timed_fill([&](std::size_t i) {
      return (f.ptrs[i] = opaque->allocate(kBlock, stream).ptr) != nullptr;
    });
  }
  for (std::size_t i = 0; i < t.blocks; ++i)
    made->deallocate(f.ptrs[i], kBlock, stream);
  return t;
}

FillTime recorded_fill(FillFixture& f, EventLog& log) {
  Recording rec(async_backend(f), log, Recording::Clock::now());
  const Stream stream{f.stream};
  const FillTime t = timed_fill([&](std::size_t i) {
    const AllocResult r = rec.allocate(kBlock, stream);
    f.ptrs[i] = r.ptr;
    return r.ok();
  });
  for (std::size_t i = 0; i < t.blocks; ++i)
    rec.deallocate(f.ptrs[i], kBlock, stream);
  return t;
}

// With `timed` (harness_timed), the time inside the backend is read by InCallTimer: what the
// harness adds is then the fill's time outside it, free of the driver call's own spread.
FillTime harness_fill(FillFixture& f, bool timed) {
  PhaseTable phases;
  EventLog log(std::make_unique<NullSink>());
  std::uint64_t inside_ns = 0;
  std::unique_ptr<Allocator> backend = async_backend(f);
  if (timed) backend = std::make_unique<InCallTimer>(std::move(backend), inside_ns);
  Recording rec(std::move(backend), log, Recording::Clock::now());
  HarnessContext ctx(rec, phases,
                     {.budget_bytes = kBudget,
                      .stream = Stream{f.stream},
                      .probe = false,
                      .simulated = false,
                      .verify = VerifyMode::off});
  RunContext& run = ctx;  // as a scenario calls it
  run.phase("fill");
  FillTime t = timed_fill([&](std::size_t i) {
    f.blocks[i] = run.try_allocate(kBlock, "fill");
    return f.blocks[i].ok();
  });
  t.in_call_seconds = static_cast<double>(inside_ns) * 1e-9;
  for (std::size_t i = 0; i < t.blocks; ++i)
    run.release(f.blocks[i]);
  ctx.release_all();
  log.close();
  return t;
}

FillTime log_variant(Variant v, FillFixture& f) {
  if (v == Variant::recorded_warm_log) return recorded_fill(f, *f.warm_log);
  if (v == Variant::harness || v == Variant::harness_timed) {
    return harness_fill(f, v == Variant::harness_timed);
  }
  PhaseTable phases;
  const std::filesystem::path csv =
      std::filesystem::temp_directory_path() / "oomlab_bench_hypothesis_events.csv";
  EventLog log(v == Variant::recorded_csv
                   ? std::unique_ptr<EventSink>(std::make_unique<CsvFileSink>(csv, phases))
                   : std::make_unique<NullSink>());
  const FillTime t = recorded_fill(f, log);
  log.close();
  std::filesystem::remove(csv);
  return t;
}

}  // namespace

std::string_view variant_name(Variant v) {
  constexpr std::array<std::string_view, 15> kNames = {"bare",
                                                       "clock_read",
                                                       "live_table",
                                                       "live_table_warm",
                                                       "block_list_grown",
                                                       "block_list_reserved",
                                                       "backend_direct",
                                                       "backend_virtual",
                                                       "recorded",
                                                       "recorded_warm_log",
                                                       "recorded_csv",
                                                       "harness",
                                                       "bare_timed",
                                                       "harness_timed",
                                                       "bare_timed_traffic"};
  return kNames.at(static_cast<std::size_t>(v));
}

bool have_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

FillFixture::FillFixture() : ptrs(kMaxBlocks), blocks(kMaxBlocks), traffic(kMaxBlocks) {
  cudaDeviceSynchronize();
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  stream = s;
  std::size_t free = 0;
  std::size_t total = 0;
  cudaMemGetInfo(&free, &total);
  if (free > kBudget + 2_MiB) cudaMalloc(&ballast, (free - kBudget) / 2_MiB * 2_MiB);
  warm_log.emplace(std::make_unique<NullSink>());
}

FillFixture::~FillFixture() {
  warm_log->close();
  cudaStreamSynchronize(stream_of(*this));
  cudaStreamDestroy(stream_of(*this));
  cudaFree(ballast);
}

FillTime run_variant(Variant v, FillFixture& f) {
  switch (v) {
    case Variant::backend_direct:
    case Variant::backend_virtual:
      return backend_variant(v, f);
    case Variant::recorded:
    case Variant::recorded_warm_log:
    case Variant::recorded_csv:
    case Variant::harness:
    case Variant::harness_timed:
      return log_variant(v, f);
    default:
      return raw_variant(v, f);
  }
}

}  // namespace oomlab::bench

#endif
