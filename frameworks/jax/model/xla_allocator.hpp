// `xla`: XLA's allocator as JAX's GPU client builds it, an adaptor over any upstream allocator.
// With allocator=bfc (JAX's default) requests go to the model of the BFC pool (bfc_model.hpp),
// whose regions are allocations of the upstream (the sim's, cudaMalloc's, a pool's); with
// allocator=platform each request goes to the upstream on its own, as XLA's platform allocator
// asks the device for each buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "jax/model/bfc_model.hpp"
#include "oomlab/allocator.hpp"

namespace oomlab::jax {

class XlaAllocator final : public AllocatorAdaptor {
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

 private:
  [[nodiscard]] std::string_view do_name() const override { return "xla"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override;
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  void do_trim() override {}  // XLA never gives a region back
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override;

  Stream stream_;
  std::unique_ptr<BfcModel> pool_;  // destroyed before the upstream its regions came from
};

}  // namespace oomlab::jax
