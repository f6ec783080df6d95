// `cuda`: cudaMalloc / cudaFree. The driver gives no account of what it holds for the live
// blocks, so reserved_bytes is device memory taken since the backend was created, read with
// cudaMemGetInfo every DeviceUsage::kSampleEvery events and at every state(); on a shared GPU it
// also counts what other processes took (the OOM analysis tells those apart: external-pressure).
#pragma once

#include "allocators/device_usage.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

class CudaAllocator final : public Allocator {
 public:
  CudaAllocator() = default;

 private:
  [[nodiscard]] std::string_view do_name() const override { return "cuda"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override { return usage_.measure(own_bytes_bound_); }
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return usage_.used_since_start();
  }
  // The driver hands out 2 MiB pages: a request of a page or more takes whole pages, smaller ones
  // share pages (docs/allocators.md, "Measured on an H100").
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override {
    return bytes >= kDevicePageBytes ? round_up(bytes, kDevicePageBytes) : bytes;
  }
  DeviceUsage usage_;
  std::uint64_t own_bytes_bound_ = 0;  // live sizes rounded up to whole pages
};

}  // namespace oomlab
