// What recording costs per event: the Recording adaptor and event log over a backend that does
// nothing, so the harness's own time is all that is measured.
#include <benchmark/benchmark.h>

#include "oomlab/allocator.hpp"
#include "record/event_log.hpp"
#include "record/recording.hpp"

namespace {

// Hands out one fake address and forgets it: the floor under any real backend.
class NullAllocator final : public oomlab::Allocator {
 public:
  [[nodiscard]] std::string_view name() const override { return "null"; }
  oomlab::AllocResult allocate(std::size_t /*bytes*/, oomlab::Stream /*stream*/) override {
    return {reinterpret_cast<void*>(0x1000), oomlab::AllocStatus::ok, 0};  // NOLINT
  }
  void deallocate(void* /*ptr*/, std::size_t /*bytes*/, oomlab::Stream /*stream*/) override {}
  [[nodiscard]] oomlab::MemoryState state() const override { return {}; }
  [[nodiscard]] std::uint64_t reserved_bytes() const override { return 0; }
};

void BM_RecordingOverNullBackend(benchmark::State& state) {
  oomlab::EventLog log(std::make_unique<oomlab::NullSink>());
  oomlab::Recording rec(std::make_unique<NullAllocator>(), log, oomlab::Recording::Clock::now());
  for (auto _ : state) {
    const oomlab::AllocResult r = rec.allocate(4096, {});
    rec.deallocate(r.ptr, 4096, {});
  }
  state.SetItemsProcessed(state.iterations() * 2);
  log.close();
}
BENCHMARK(BM_RecordingOverNullBackend);

void BM_NullBackendAlone(benchmark::State& state) {
  NullAllocator null;
  oomlab::Allocator& a = null;
  for (auto _ : state) {
    const oomlab::AllocResult r = a.allocate(4096, {});
    a.deallocate(r.ptr, 4096, {});
    benchmark::DoNotOptimize(r.ptr);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_NullBackendAlone);

}  // namespace
