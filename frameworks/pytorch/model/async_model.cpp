#include "pytorch/model/async_model.hpp"

#include <algorithm>
#include <iterator>

namespace oomlab::torch {

AsyncPoolModel::AsyncPoolModel(DeviceMemory& device, std::optional<std::uint64_t> allowed)
    : device_(device), allowed_(allowed) {
}

std::uint64_t AsyncPoolModel::malloc(std::uint64_t bytes, std::uint64_t /*stream*/) {
  // PyTorch's own check under a fraction counts the bytes asked for, not what the pool holds.
  if (allowed_ && stats_.requested_bytes + bytes > *allowed_) {
    ++stats_.ooms;
    stats_.failed_device_bytes = bytes;
    stats_.failed_request_bytes = bytes;
    return 0;
  }
  const std::uint64_t size = round_up(std::max<std::uint64_t>(bytes, 1), kAlignBytes);
  std::uint64_t address = place_in_free_range(size);
  if (address == 0 && (add_chunk(size) || (release_free_chunks(), add_chunk(size)))) {
    address = place_in_free_range(size);
  }
  if (address == 0) {
    ++stats_.ooms;
    stats_.failed_device_bytes = bytes;
    stats_.failed_request_bytes = bytes;
    return 0;
  }
  live_.at(address).requested = bytes;
  stats_.allocated_bytes += bytes;
  stats_.requested_bytes += bytes;
  return address;
}

// Best fit among every chunk's free ranges; 0 when none holds `size`.
std::uint64_t AsyncPoolModel::place_in_free_range(std::uint64_t size) {
  const auto it = free_.lower_bound(Range{size, 0, nullptr});
  if (it == free_.end()) return 0;
  const Range range = *it;
  free_.erase(it);
  Chunk& chunk = *range.chunk;
  chunk.free.erase(range.address);
  if (range.size > size) {
    chunk.free.emplace(range.address + size, range.size - size);
    free_.insert(Range{range.size - size, range.address + size, &chunk});
  }
  ++chunk.live;
  live_.emplace(range.address, Live{size, 0, &chunk});
  return range.address;
}

bool AsyncPoolModel::add_chunk(std::uint64_t size) {
  const std::uint64_t bytes = round_up(size, kAsyncChunkBytes);
  const std::uint64_t address = device_.allocate(bytes);
  if (address == 0) return false;
  auto& chunk = *chunks_.emplace_back(std::make_unique<Chunk>());
  chunk.address = address;
  chunk.bytes = bytes;
  add_free(chunk, address, bytes);
  reserved_ += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, reserved_);
  journal(DeviceCallKind::segment_alloc, bytes, address);
  return true;
}

void AsyncPoolModel::release_free_chunks() {
  std::erase_if(chunks_, [&](const std::unique_ptr<Chunk>& chunk) {
    if (chunk->live != 0) return false;
    free_.erase(Range{chunk->bytes, chunk->address, chunk.get()});
    journal(DeviceCallKind::segment_free, chunk->bytes, chunk->address);
    device_.free(chunk->address, chunk->bytes);
    reserved_ -= chunk->bytes;
    return true;
  });
}

// Returns a range to its chunk, joined with its free neighbours.
void AsyncPoolModel::add_free(Chunk& chunk, std::uint64_t address, std::uint64_t size) {
  auto next = chunk.free.lower_bound(address);
  if (next != chunk.free.end() && address + size == next->first) {
    free_.erase(Range{next->second, next->first, &chunk});
    size += next->second;
    next = chunk.free.erase(next);
  }
  if (next != chunk.free.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == address) {
      free_.erase(Range{prev->second, prev->first, &chunk});
      address = prev->first;
      size += prev->second;
      chunk.free.erase(prev);
    }
  }
  chunk.free.emplace(address, size);
  free_.insert(Range{size, address, &chunk});
}

void AsyncPoolModel::free(std::uint64_t address) {
  const auto it = live_.find(address);
  if (it == live_.end()) return;
  const Live live = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= live.requested;
  stats_.requested_bytes -= live.requested;
  --live.chunk->live;
  add_free(*live.chunk, address, live.size);
}

bool AsyncPoolModel::would_fit(std::uint64_t bytes, std::uint64_t /*stream*/) const {
  if (allowed_ && stats_.requested_bytes + bytes > *allowed_) return false;
  const std::uint64_t size = round_up(std::max<std::uint64_t>(bytes, 1), kAlignBytes);
  if (free_.lower_bound(Range{size, 0, nullptr}) != free_.end()) return true;
  std::uint64_t releasable = 0;
  for (const auto& chunk : chunks_) {
    if (chunk->live == 0) releasable += chunk->bytes;
  }
  return device_.free_bytes() + releasable >= round_up(size, kAsyncChunkBytes);
}

// The pool has no segments of PyTorch's: each block live before the run is a request again.
std::vector<std::uint64_t> AsyncPoolModel::place(std::span<const PlacedSegment> segments) {
  const Unjournaled quiet(*this);
  std::vector<std::uint64_t> addresses;
  for (const PlacedSegment& segment : segments) {
    for (const PlacedBlock& block : segment.blocks)
      addresses.push_back(malloc(block.bytes, stream_key(segment.stream)));
  }
  return addresses;
}

CacheStats AsyncPoolModel::stats() const {
  CacheStats s = stats_;
  s.reserved_bytes = reserved_;
  return s;
}

}  // namespace oomlab::torch
