#include "pytorch/model/allocator_device_memory.hpp"

#include <fmt/format.h>

#include <iterator>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::torch {

namespace {
// Virtual ranges are numbered from here, apart from every address the sim or a GPU hands out.
constexpr std::uint64_t kFirstRange = 1ULL << 52U;
// Segments of a hinted run that follow no record are numbered from here: above every address of
// a process (48 bits), below the virtual ranges.
constexpr std::uint64_t kFirstOwnAddress = 1ULL << 48U;

}  // namespace

AllocatorDeviceMemory::AllocatorDeviceMemory(std::unique_ptr<Allocator> upstream, Stream stream,
                                             std::uint64_t total_bytes)
    : upstream_(std::move(upstream)),
      stream_(stream),
      total_bytes_(total_bytes),
      next_own_address_(kFirstOwnAddress),
      next_range_(kFirstRange) {
}

AllocatorDeviceMemory::~AllocatorDeviceMemory() {
  try {
    for (const auto& [page, allocation] : pages_) {
      const auto& range = ranges_.at(range_of(page));
      upstream_->deallocate(allocation, range.page, stream_);
    }
    for (const auto& [address, segment] : segments_)
      upstream_->deallocate(segment.allocation, segment.bytes, stream_);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the driver
                   // takes a process's memory back when it exits
  }
}

std::uint64_t AllocatorDeviceMemory::allocate(std::uint64_t bytes) {
  const AllocResult r = upstream_->allocate(bytes, stream_);
  if (r.status == AllocStatus::error) {
    throw Error(ErrorKind::device, fmt::format("a segment of {} failed with CUDA error {}",
                                               format_bytes(bytes), r.error_code));
  }
  if (!r.ok()) return 0;
  const std::uint64_t address = address_for(bytes, r.ptr);
  segments_.emplace(address, Segment{r.ptr, bytes});
  return address;
}

void AllocatorDeviceMemory::hint(std::span<const DeviceCall> recorded) {
  hints_.assign(recorded.begin(), recorded.end());
  next_hint_ = 0;
}

std::uint64_t AllocatorDeviceMemory::address_for(std::uint64_t bytes, void* allocation) {
  if (hints_.empty()) return reinterpret_cast<std::uint64_t>(allocation);
  if (next_hint_ < hints_.size()) {
    const DeviceCall& next = hints_[next_hint_];
    if (next.bytes == bytes && next.address != 0 && !overlaps(next.address, bytes)) {
      ++next_hint_;
      return next.address;
    }
    next_hint_ = hints_.size();  // the model took another way: no record to follow
  }
  const std::uint64_t address = next_own_address_;
  next_own_address_ += round_up(bytes, 2_MiB);
  return address;
}

bool AllocatorDeviceMemory::overlaps(std::uint64_t address, std::uint64_t bytes) const {
  const auto next = segments_.lower_bound(address);
  if (next != segments_.end() && next->first < address + bytes) return true;
  if (next == segments_.begin()) return false;
  const auto prev = std::prev(next);
  return prev->first + prev->second.bytes > address;
}

void AllocatorDeviceMemory::free(std::uint64_t address, std::uint64_t bytes) {
  const auto it = segments_.find(address);
  if (it == segments_.end()) return;
  upstream_->deallocate(it->second.allocation, bytes, stream_);
  segments_.erase(it);
}

std::uint64_t AllocatorDeviceMemory::reserve(std::uint64_t bytes, std::uint64_t page) {
  const std::uint64_t base = next_range_;
  next_range_ += round_up(bytes, 1ULL << 40U);
  ranges_.emplace(base, Range{bytes, page});
  return base;
}

std::uint64_t AllocatorDeviceMemory::range_of(std::uint64_t address) {
  return kFirstRange + round_down(address - kFirstRange, 1ULL << 40U);
}

bool AllocatorDeviceMemory::map(std::uint64_t address, std::uint64_t bytes) {
  const std::uint64_t page = ranges_.at(range_of(address)).page;
  std::vector<std::pair<std::uint64_t, void*>> mapped;
  for (std::uint64_t at = address; at < address + bytes; at += page) {
    const AllocResult r = upstream_->allocate(page, stream_);
    if (!r.ok()) {
      for (const auto& [where, allocation] : mapped)
        upstream_->deallocate(allocation, page, stream_);
      if (r.status == AllocStatus::error) {
        throw Error(ErrorKind::device, fmt::format("mapping a page of {} failed with CUDA error {}",
                                                   format_bytes(page), r.error_code));
      }
      return false;
    }
    mapped.emplace_back(at, r.ptr);
  }
  for (const auto& [where, allocation] : mapped)
    pages_.emplace(where, allocation);
  return true;
}

void AllocatorDeviceMemory::unmap(std::uint64_t address, std::uint64_t bytes) {
  const std::uint64_t page = ranges_.at(range_of(address)).page;
  for (std::uint64_t at = address; at < address + bytes; at += page) {
    const auto it = pages_.find(at);
    if (it == pages_.end()) continue;
    upstream_->deallocate(it->second, page, stream_);
    pages_.erase(it);
  }
}

void AllocatorDeviceMemory::release(std::uint64_t address, std::uint64_t /*bytes*/) {
  ranges_.erase(address);
}

std::uint64_t AllocatorDeviceMemory::free_bytes() const {
  return upstream_->state().device_free_bytes;
}

}  // namespace oomlab::torch
