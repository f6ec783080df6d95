// `torch`: PyTorch's CUDA allocator as an adaptor in RMM's sense, over any upstream allocator.
// Requests go to a model of the native caching allocator (or of the cudaMallocAsync backend);
// what the model asks the device for goes to a DeviceMemory: segments are allocations of the
// upstream (the sim's pages, cudaMalloc, a pool...), and on a device expandable segments may be
// pages of the CUDA virtual-memory API instead (the factory chooses, backends.cpp).
// reserved_bytes is the model's reserved memory; PyTorch's own account, its device calls and the
// placement of a replayed program's first blocks are its CachingAllocator capability.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/caching_allocator.hpp"
#include "pytorch/model/cache_model.hpp"
#include "pytorch/model/device_memory.hpp"
#include "pytorch/model/torch_config.hpp"

namespace oomlab::torch {

class TorchAllocator final : public Allocator, public CachingAllocator {
 public:
  // Segments from `upstream`, on `stream`. `budget_bytes` is the fraction's cap when
  // config.budget_by is fraction.
  TorchAllocator(const TorchConfig& config, std::unique_ptr<Allocator> upstream,
                 std::uint64_t budget_bytes, Stream stream = {});
  // Segments (and pages) from `device`; `simulated` says whether it is the sim's.
  TorchAllocator(const TorchConfig& config, std::unique_ptr<DeviceMemory> device,
                 std::uint64_t budget_bytes, bool simulated);
  ~TorchAllocator() override;
  TorchAllocator(const TorchAllocator&) = delete;
  TorchAllocator& operator=(const TorchAllocator&) = delete;
  TorchAllocator(TorchAllocator&&) = delete;
  TorchAllocator& operator=(TorchAllocator&&) = delete;

  [[nodiscard]] const CacheModel& model() const { return *model_; }

  [[nodiscard]] CacheState cache_state() const override;
  [[nodiscard]] const std::vector<DeviceCall>& device_calls() const override {
    return model_->calls();
  }
  // On the sim only: on a device, addresses are the driver's own and blocks are written to.
  void hint_device_calls(std::span<const DeviceCall> recorded) override {
    if (simulated_) device_->hint(recorded);
  }
  void expect_placed(std::span<const PlacedSegment> segments) override;
  void end_placed() override;

 private:
  // A block placed by expect_placed, waiting for its allocate().
  struct Placed {
    std::uint64_t bytes;
    Stream stream;
    std::uint64_t address;  // 0: the device had no room
  };

  [[nodiscard]] std::string_view do_name() const override { return "torch"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return model_->stats().reserved_bytes;
  }
  // Whether the request would be served now, releasing what PyTorch would release; it changes
  // nothing, so that the OOM record's search leaves the model as the program left it.
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  // torch.cuda.empty_cache().
  void do_trim() override { model_->empty_cache(); }
  [[nodiscard]] bool do_simulated() const override { return simulated_; }
  [[nodiscard]] void* do_capability(std::string_view id) override {
    return id == CachingAllocator::kCapability ? static_cast<CachingAllocator*>(this) : nullptr;
  }

  TorchConfig config_;
  std::unique_ptr<DeviceMemory> device_;
  std::unique_ptr<CacheModel> model_;  // destroyed before the memory it holds
  std::optional<std::uint64_t> allowed_;
  bool simulated_;
  std::vector<Placed> placed_;
  std::size_t next_placed_ = 0;
};

}  // namespace oomlab::torch
