// `async`: cudaMallocFromPoolAsync / cudaFreeAsync on the run's own stream, from a pool made for
// the run (cudaMemPoolCreate) and destroyed at its end, so no other code's pool state leaks in.
// reserved_bytes is the pool's cudaMemPoolAttrReservedMemCurrent, read every kSampleEvery events
// but no more often than every kMinInterval (a read goes through the driver); in between, when
// the live bytes pass the last reading, it is the live bytes (the pool must have grown at least
// that far). state() reads it now.
#pragma once

#include <chrono>
#include <cstdint>

#include "oomlab/allocator.hpp"

struct CUmemPoolHandle_st;

namespace oomlab {

struct AsyncPoolOptions {
  std::uint64_t release_threshold = 0;  // bytes the pool keeps across synchronisations
  bool reuse_follow_events = true;      // cudaMemPoolReuseFollowEventDependencies
  bool reuse_opportunistic = true;      // cudaMemPoolReuseAllowOpportunistic
  bool reuse_internal_deps = true;      // cudaMemPoolReuseAllowInternalDependencies
};

class AsyncPoolAllocator final : public Allocator {
 public:
  static constexpr std::uint32_t kSampleEvery = 64;
  static constexpr std::chrono::microseconds kMinInterval{1000};

  AsyncPoolAllocator(int device, Stream stream, const AsyncPoolOptions& options);
  ~AsyncPoolAllocator() override;
  AsyncPoolAllocator(const AsyncPoolAllocator&) = delete;
  AsyncPoolAllocator& operator=(const AsyncPoolAllocator&) = delete;
  AsyncPoolAllocator(AsyncPoolAllocator&&) = delete;
  AsyncPoolAllocator& operator=(AsyncPoolAllocator&&) = delete;

  [[nodiscard]] std::uint64_t pool_used_bytes() const;

 private:
  [[nodiscard]] std::string_view do_name() const override { return "async"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override { return reserved_; }
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  void do_trim() override;
  [[nodiscard]] std::uint64_t read_reserved() const;

  CUmemPoolHandle_st* pool_ = nullptr;
  Stream stream_;
  std::uint64_t used_ = 0;      // bytes asked for and not yet freed
  std::uint64_t reserved_ = 0;  // the last reading
  std::uint32_t events_since_read_ = 0;
  std::chrono::steady_clock::time_point last_read_;

  void sample() {
    if (++events_since_read_ < kSampleEvery) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_read_ < kMinInterval) return;
    reserved_ = read_reserved();
    events_since_read_ = 0;
    last_read_ = now;
  }
};

}  // namespace oomlab
