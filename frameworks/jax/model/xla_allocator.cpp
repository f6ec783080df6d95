#include "jax/model/xla_allocator.hpp"

#include <algorithm>

#include "jax/model/xla_words.hpp"

namespace oomlab::jax {

namespace {

void* pointer(std::uint64_t address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

}  // namespace

XlaAllocator::XlaAllocator(std::optional<BfcConfig> pool, std::unique_ptr<Allocator> upstream,
                           Stream stream)
    : AllocatorAdaptor(std::move(upstream)), stream_(stream) {
  if (!pool) return;
  RegionSource source{.take = [this](std::uint64_t bytes) -> std::optional<std::uint64_t> {
                        const AllocResult r = this->upstream().allocate(bytes, stream_);
                        if (!r.ok()) return std::nullopt;
                        const auto address = reinterpret_cast<std::uint64_t>(r.ptr);
                        calls_.push_back({DeviceCallKind::segment_alloc, bytes, address});
                        return address;
                      },
                      .give_back =
                          [this](std::uint64_t address, std::uint64_t bytes) {
                            if (!closing_)
                              calls_.push_back({DeviceCallKind::segment_free, bytes, address});
                            this->upstream().deallocate(pointer(address), bytes, stream_);
                          }};
  pool_ = std::make_unique<BfcModel>(*pool, std::move(source));
}

XlaAllocator::~XlaAllocator() {
  closing_ = true;  // its regions go back to the upstream, unrecorded (nothing may throw here)
  pool_.reset();
}

AllocResult XlaAllocator::do_allocate(std::size_t bytes, Stream stream) {
  if (!pool_) return upstream().allocate(bytes, stream);
  if (bytes == 0) return {};  // XLA hands out no memory for an empty buffer
  const std::optional<std::uint64_t> address = pool_->allocate(bytes);
  if (!address) {
    failed_request_bytes_ = rounded_bytes(bytes);
    return {nullptr, AllocStatus::out_of_memory, 0};
  }
  return {pointer(*address), AllocStatus::ok, 0};
}

void XlaAllocator::do_deallocate(void* ptr, std::size_t bytes, Stream stream) {
  if (ptr == nullptr) return;
  if (!pool_) {
    upstream().deallocate(ptr, bytes, stream);
    return;
  }
  pool_->free(reinterpret_cast<std::uint64_t>(ptr));
}

MemoryState XlaAllocator::do_state() const {
  MemoryState state = upstream().state();
  if (!pool_) return state;
  const BfcStats stats = pool_->stats();
  state.reserved_bytes = stats.pool_bytes;
  state.own_bytes_bound = stats.pool_bytes;
  state.used_bytes = stats.in_use_bytes;
  return state;
}

std::uint64_t XlaAllocator::do_reserved_bytes() const {
  return pool_ ? pool_->pool_bytes() : upstream().reserved_bytes();
}

AllocStatus XlaAllocator::do_probe(std::size_t bytes, Stream stream) {
  if (!pool_) return upstream().probe(bytes, stream);
  if (!pool_->would_fit(bytes)) return AllocStatus::out_of_memory;
  if (pool_->holds_free(bytes)) return AllocStatus::ok;
  // A region must grow for it: the device gives one that holds it, or the pool's growth (asked
  // again at nine tenths) ends refused.
  return upstream().probe(rounded_bytes(bytes), stream);
}

CacheState XlaAllocator::cache_state() const {
  CacheState state{.framework = std::string(kCacheWordsKey)};
  if (!pool_) return state;
  const BfcStats stats = pool_->stats();
  state.allocated_bytes = stats.in_use_bytes;
  state.reserved_bytes = stats.pool_bytes;
  // XLA's message names the request, not a region it asked for.
  state.failed_request_bytes = failed_request_bytes_;
  // What the pool may hold: its limit, or its regions and what the device has left where that
  // is less (a card that cannot give the limit refuses a region, not the limit).
  const std::uint64_t device_free = upstream().state().device_free_bytes;
  state.allowed_bytes = std::min(stats.limit_bytes, stats.pool_bytes + device_free);
  return state;
}

void* XlaAllocator::do_capability(std::string_view id) {
  if (pool_ && id == CachingAllocator::kCapability) return static_cast<CachingAllocator*>(this);
  return upstream().find_capability(id);
}

std::uint64_t XlaAllocator::do_footprint(std::size_t bytes) const {
  return pool_ ? rounded_bytes(bytes) : upstream().footprint(bytes);
}

}  // namespace oomlab::jax
