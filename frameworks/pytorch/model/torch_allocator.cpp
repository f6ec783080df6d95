#include "pytorch/model/torch_allocator.hpp"

#include "pytorch/model/allocator_device_memory.hpp"
#include "pytorch/model/async_model.hpp"
#include "pytorch/model/caching_model.hpp"
#include "pytorch/model/oom_words.hpp"

namespace oomlab::torch {

namespace {

AllocResult result_at(std::uint64_t address) {
  if (address == 0) return {nullptr, AllocStatus::out_of_memory, 0};
  return {reinterpret_cast<void*>(address), AllocStatus::ok,  // NOLINT(performance-no-int-to-ptr)
          0};
}

std::unique_ptr<DeviceMemory> segments_of(std::unique_ptr<Allocator> upstream, Stream stream) {
  const std::uint64_t total = upstream->state().device_total_bytes;
  return std::make_unique<AllocatorDeviceMemory>(std::move(upstream), stream, total);
}

}  // namespace

TorchAllocator::TorchAllocator(const TorchConfig& config, std::unique_ptr<Allocator> upstream,
                               std::uint64_t budget_bytes, Stream stream)
    : TorchAllocator(config, segments_of(std::move(upstream), stream), budget_bytes,
                     /*simulated=*/false) {
  simulated_ = static_cast<const AllocatorDeviceMemory&>(*device_).upstream().simulated();
}

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

AllocResult TorchAllocator::do_allocate(std::size_t bytes, Stream stream) {
  // A placed block passed over was refused by an adaptor above: it goes back to the cache.
  while (next_placed_ < placed_.size()) {
    const Placed& next = placed_[next_placed_++];
    if (next.bytes == bytes && next.stream == stream) return result_at(next.address);
    if (next.address != 0) model_->free(next.address);
  }
  if (bytes == 0) return {};  // PyTorch hands out no memory for an empty tensor
  if (bytes > kLargestRequestBytes) return {nullptr, AllocStatus::out_of_memory, 0};
  return result_at(model_->malloc(bytes, stream_key(stream)));
}

void TorchAllocator::do_deallocate(void* ptr, std::size_t /*bytes*/, Stream /*stream*/) {
  if (ptr == nullptr) return;
  model_->free(reinterpret_cast<std::uint64_t>(ptr));
}

CacheState TorchAllocator::cache_state() const {
  const CacheStats s = model_->stats();
  return {.framework = std::string(kCacheWordsKey),
          .allocated_bytes = s.allocated_bytes,
          .reserved_bytes = s.reserved_bytes,
          .failed_device_bytes = s.failed_device_bytes,
          .failed_request_bytes = s.failed_request_bytes,
          .allowed_bytes = allowed_.value_or(0),
          .pool = config_.backend == Backend::async};
}

MemoryState TorchAllocator::do_state() const {
  const CacheStats s = model_->stats();
  MemoryState state;
  state.reserved_bytes = s.reserved_bytes;
  state.own_bytes_bound = s.reserved_bytes;
  state.device_free_bytes = device_->free_bytes();
  state.device_total_bytes = device_->total_bytes();
  state.used_bytes = s.allocated_bytes;
  return state;
}

AllocStatus TorchAllocator::do_probe(std::size_t bytes, Stream stream) {
  if (bytes > kLargestRequestBytes) return AllocStatus::out_of_memory;
  return model_->would_fit(bytes, stream_key(stream)) ? AllocStatus::ok
                                                      : AllocStatus::out_of_memory;
}

void TorchAllocator::expect_placed(std::span<const PlacedSegment> segments) {
  end_placed();
  const std::vector<std::uint64_t> addresses = model_->place(segments);
  std::size_t i = 0;
  for (const PlacedSegment& segment : segments) {
    for (const PlacedBlock& block : segment.blocks) {
      placed_.push_back(
          {block.bytes, segment.stream, i < addresses.size() ? addresses[i] : std::uint64_t{0}});
      ++i;
    }
  }
}

void TorchAllocator::end_placed() {
  for (std::size_t i = next_placed_; i < placed_.size(); ++i) {
    if (placed_[i].address != 0) model_->free(placed_[i].address);
  }
  placed_.clear();
  next_placed_ = 0;
}

}  // namespace oomlab::torch
