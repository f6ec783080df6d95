#include "allocators/torch/allocator_device_memory.hpp"

#include <fmt/format.h>

#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::torch {

namespace {
// Virtual ranges are numbered from here, apart from every address the sim or a GPU hands out.
constexpr std::uint64_t kFirstRange = 1ULL << 52U;

void* as_pointer(std::uint64_t address) {
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}
}  // namespace

AllocatorDeviceMemory::AllocatorDeviceMemory(std::unique_ptr<Allocator> upstream, Stream stream,
                                             std::uint64_t total_bytes)
    : upstream_(std::move(upstream)),
      stream_(stream),
      total_bytes_(total_bytes),
      next_range_(kFirstRange) {}

AllocatorDeviceMemory::~AllocatorDeviceMemory() {
  try {
    for (const auto& [page, allocation] : pages_) {
      const auto& range = ranges_.at(range_of(page));
      upstream_->deallocate(allocation, range.page, stream_);
    }
    for (const auto& [address, bytes] : segments_)
      upstream_->deallocate(as_pointer(address), bytes, stream_);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw; the driver
                   // takes a process's memory back when it exits
  }
}

std::uint64_t AllocatorDeviceMemory::allocate(std::uint64_t bytes) {
  const AllocResult r = upstream_->allocate(bytes, stream_);
  if (r.status == AllocStatus::error) {
    throw Error(ErrorKind::device,
                fmt::format("a segment of {} failed with CUDA error {}", format_bytes(bytes),
                            r.error_code));
  }
  if (!r.ok()) return 0;
  const auto address = reinterpret_cast<std::uint64_t>(r.ptr);
  segments_.emplace(address, bytes);
  return address;
}

void AllocatorDeviceMemory::free(std::uint64_t address, std::uint64_t bytes) {
  upstream_->deallocate(as_pointer(address), bytes, stream_);
  segments_.erase(address);
}

std::uint64_t AllocatorDeviceMemory::reserve(std::uint64_t bytes, std::uint64_t page) {
  const std::uint64_t base = next_range_;
  next_range_ += round_up(bytes, 1ULL << 40U);
  ranges_.emplace(base, Range{bytes, page});
  return base;
}

std::uint64_t AllocatorDeviceMemory::range_of(std::uint64_t address) const {
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
        throw Error(ErrorKind::device,
                    fmt::format("mapping a page of {} failed with CUDA error {}",
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
