// `xla`: XLA's allocator as JAX's GPU client builds it, an adaptor over any upstream allocator.
// With allocator=bfc (JAX's default) requests go to the model of the BFC pool (bfc_model.hpp),
// whose regions are allocations of the upstream (the sim's, cudaMalloc's, a pool's); with
// allocator=platform each request goes to the upstream on its own, as XLA's platform allocator
// asks the device for each buffer. With the pool it is a CachingAllocator: the pool's state at an
// OOM (in use, its regions, its limit: XLA's "fraction cap") is worded as XLA's (xla_words.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "jax/model/bfc_model.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/caching_allocator.hpp"

namespace oomlab::jax {

class XlaAllocator final : public AllocatorAdaptor, public CachingAllocator {
 public:
  // `pool`: the BFC pool's settings; none for the platform allocator.
  XlaAllocator(std::optional<BfcConfig> pool, std::unique_ptr<Allocator> upstream,
               Stream stream = {});
  ~XlaAllocator() override;
  XlaAllocator(const XlaAllocator&) = delete;
  XlaAllocator& operator=(const XlaAllocator&) = delete;
  XlaAllocator(XlaAllocator&&) = delete;
  XlaAllocator& operator=(XlaAllocator&&) = delete;

  [[nodiscard]] const BfcModel* pool() const { return pool_.get(); }

  // CachingAllocator (with the pool only): its state as XLA words it; its regions as the device
  // calls. A trace of XLA's pool places no blocks before it begins, and the regions' addresses
  // are the upstream's: the hints and placed blocks are not the pool's to use.
  [[nodiscard]] CacheState cache_state() const override;
  [[nodiscard]] const std::vector<DeviceCall>& device_calls() const override { return calls_; }
  void hint_device_calls(std::span<const DeviceCall> /*recorded*/) override {}
  void expect_placed(std::span<const PlacedSegment> /*segments*/) override {}
  void end_placed() override {}

 private:
  [[nodiscard]] std::string_view do_name() const override { return "xla"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override;
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  void do_trim() override {}  // XLA never gives a region back
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override;
  [[nodiscard]] void* do_capability(std::string_view id) override;

  Stream stream_;
  std::vector<DeviceCall> calls_;
  std::uint64_t failed_request_bytes_ = 0;  // the last request the pool refused, rounded
  bool closing_ = false;                    // being destroyed: regions given back unrecorded
  std::unique_ptr<BfcModel> pool_;          // destroyed before the upstream its regions came from
};

}  // namespace oomlab::jax
