// `torch`: PyTorch's CUDA allocator in front of a device, as an adaptor in RMM's sense. Requests
// go to a model of the native caching allocator (or of the cudaMallocAsync backend); what the
// model asks the device for goes to a DeviceMemory: the sim's pages (deterministic, no GPU) or
// the real device (cudaMalloc segments, the CUDA virtual-memory API for expandable segments).
// reserved_bytes is the model's reserved memory; state() adds what PyTorch's OOM message gives.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "allocators/torch/cache_model.hpp"
#include "allocators/torch/device_memory.hpp"
#include "allocators/torch/torch_config.hpp"
#include "oomlab/allocator.hpp"

namespace oomlab::torch {

class TorchAllocator final : public Allocator {
 public:
  // `budget_bytes` is the fraction's cap when config.budget_by is fraction.
  TorchAllocator(const TorchConfig& config, std::unique_ptr<DeviceMemory> device,
                 std::uint64_t budget_bytes, bool simulated);
  ~TorchAllocator() override;
  TorchAllocator(const TorchAllocator&) = delete;
  TorchAllocator& operator=(const TorchAllocator&) = delete;
  TorchAllocator(TorchAllocator&&) = delete;
  TorchAllocator& operator=(TorchAllocator&&) = delete;

  [[nodiscard]] std::string_view name() const override { return "torch"; }
  AllocResult allocate(std::size_t bytes, Stream stream) override;
  void deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState state() const override;
  [[nodiscard]] std::uint64_t reserved_bytes() const override {
    return model_->stats().reserved_bytes;
  }
  // Whether the request would be served now, releasing what PyTorch would release; it changes
  // nothing, so that the OOM record's search leaves the model as the program left it.
  AllocStatus probe(std::size_t bytes, Stream stream) override;
  // torch.cuda.empty_cache().
  void trim() override { model_->empty_cache(); }
  [[nodiscard]] bool simulated() const override { return simulated_; }
  std::vector<AllocResult> allocate_placed(std::span<const PlacedSegment> segments) override;
  [[nodiscard]] const std::vector<DeviceCall>* device_calls() const override {
    return &model_->calls();
  }
  // On the sim only: on a device, addresses are the driver's own and blocks are written to.
  void hint_device_calls(std::span<const DeviceCall> recorded) override {
    if (simulated_) device_->hint(recorded);
  }

  [[nodiscard]] const CacheModel& model() const { return *model_; }

 private:
  TorchConfig config_;
  std::unique_ptr<DeviceMemory> device_;
  std::unique_ptr<CacheModel> model_;  // destroyed before the memory it holds
  std::optional<std::uint64_t> allowed_;
  bool simulated_;
};

}  // namespace oomlab::torch
