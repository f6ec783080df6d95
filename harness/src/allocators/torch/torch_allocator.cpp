#include "allocators/torch/torch_allocator.hpp"

#include "allocators/torch/async_model.hpp"
#include "allocators/torch/caching_model.hpp"

namespace oomlab::torch {

TorchAllocator::TorchAllocator(const TorchConfig& config, std::unique_ptr<DeviceMemory> device,
                               std::uint64_t budget_bytes, bool simulated)
    : config_(config), device_(std::move(device)), simulated_(simulated) {
  if (config.budget_by == BudgetBy::fraction) allowed_ = budget_bytes;
  if (config.backend == Backend::async) {
    model_ = std::make_unique<AsyncPoolModel>(*device_, allowed_);
  } else {
    model_ = std::make_unique<CachingModel>(config, *device_, allowed_);
  }
}

TorchAllocator::~TorchAllocator() {
  model_.reset();  // the memory it held goes back with device_
}

AllocResult TorchAllocator::allocate(std::size_t bytes, Stream stream) {
  if (bytes == 0) return {};  // PyTorch hands out no memory for an empty tensor
  const std::uint64_t address = model_->malloc(bytes, stream_key(stream));
  if (address == 0) return {nullptr, AllocStatus::out_of_memory, 0};
  return {reinterpret_cast<void*>(address), AllocStatus::ok,  // NOLINT(performance-no-int-to-ptr)
          0};
}

void TorchAllocator::deallocate(void* ptr, std::size_t /*bytes*/, Stream /*stream*/) {
  if (ptr == nullptr) return;
  model_->free(reinterpret_cast<std::uint64_t>(ptr));
}

MemoryState TorchAllocator::state() const {
  const CacheStats s = model_->stats();
  MemoryState state;
  state.reserved_bytes = s.reserved_bytes;
  state.own_bytes_bound = s.reserved_bytes;
  state.device_free_bytes = device_->free_bytes();
  state.device_total_bytes = device_->total_bytes();
  state.used_bytes = s.allocated_bytes;
  state.cache = CacheState{.allocated_bytes = s.allocated_bytes,
                           .reserved_bytes = s.reserved_bytes,
                           .failed_device_bytes = s.failed_device_bytes,
                           .failed_request_bytes = s.failed_request_bytes,
                           .allowed_bytes = allowed_.value_or(0),
                           .async_backend = config_.backend == Backend::async};
  return state;
}

AllocStatus TorchAllocator::probe(std::size_t bytes, Stream stream) {
  return model_->would_fit(bytes, stream_key(stream)) ? AllocStatus::ok
                                                      : AllocStatus::out_of_memory;
}

std::vector<AllocResult> TorchAllocator::allocate_placed(std::span<const PlacedSegment> segments) {
  std::vector<AllocResult> results;
  for (const std::uint64_t address : model_->place(segments)) {
    if (address == 0) {
      results.push_back({nullptr, AllocStatus::out_of_memory, 0});
    } else {
      results.push_back({reinterpret_cast<void*>(address),  // NOLINT(performance-no-int-to-ptr)
                         AllocStatus::ok, 0});
    }
  }
  return results;
}

}  // namespace oomlab::torch
