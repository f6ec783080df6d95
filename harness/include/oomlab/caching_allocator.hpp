// The capability of an allocator that caches device memory in segments, as PyTorch's does (the
// `torch` model): its own account for the OOM message, the device calls it made, and the state a
// replayed program's allocator was in before its trace began. A replay asks for it
// (Allocator::capability<CachingAllocator>()); allocators without it replay requests alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/allocator.hpp"

namespace oomlab {

// What a caching allocator in front of the device says of itself, as PyTorch's OOM message does.
struct CacheState {
  // Whose allocator: the key of its framework's words (CacheWords, Registry::cache_words).
  std::string framework;
  std::uint64_t allocated_bytes = 0;       // handed out to the program, in whole blocks
  std::uint64_t reserved_bytes = 0;        // held from the device
  std::uint64_t failed_device_bytes = 0;   // what the last failed request asked the device for
  std::uint64_t failed_request_bytes = 0;  // that request as the allocator rounded it
  // A cap of its own below the device (PyTorch's set_per_process_memory_fraction); 0: none.
  std::uint64_t allowed_bytes = 0;
  // Its cache is a stream-ordered pool (cudaMallocAsync's) rather than segments of its own; the
  // framework's record names that backend CacheWords::pool_backend.
  bool pool = false;
  bool operator==(const CacheState&) const = default;
};

// Blocks that were live before a run began (a replayed program's weights, loaded before its
// trace was recorded), with the segment each sat in as a caching allocator held them, so that a
// model of that allocator can rebuild its state. `bytes` of a block is what was asked for.
struct PlacedBlock {
  std::uint64_t offset = 0;  // from the segment's start
  std::uint64_t bytes = 0;
  std::uint64_t block_bytes = 0;  // the allocator's block, when known (0: from its rules)
};
struct PlacedSegment {
  std::uint64_t address = 0;  // where it was: the mapped ranges of one expandable segment
                              // keep their distances
  std::uint64_t bytes = 0;    // the segment (or, expandable, the mapped range)
  Stream stream;
  bool small_pool = false;  // its pool of small requests, kept apart (PyTorch's: up to 1 MiB)
  bool expandable = false;  // one segment that grows and shrinks by mapping pages
  std::vector<PlacedBlock> blocks;  // the live ones, by offset
};

// What a caching allocator asked the device for, as PyTorch's memory snapshot names it.
enum class DeviceCallKind : std::uint8_t {
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap
};
struct DeviceCall {
  DeviceCallKind kind = DeviceCallKind::segment_alloc;
  std::uint64_t bytes = 0;
  std::uint64_t address = 0;
};

// Nothing here allocates: the placed blocks are still asked for through Allocator::allocate, so
// that every adaptor above the model (a cap, the recording) sees them as it sees any request.
class CachingAllocator {
 public:
  static constexpr std::string_view kCapability = "caching-allocator";

  CachingAllocator() = default;
  virtual ~CachingAllocator() = default;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  CachingAllocator(CachingAllocator&&) = delete;
  CachingAllocator& operator=(CachingAllocator&&) = delete;

  [[nodiscard]] virtual CacheState cache_state() const = 0;
  // The calls made to the device so far, in order.
  [[nodiscard]] virtual const std::vector<DeviceCall>& device_calls() const = 0;
  // The segments a recorded run got from the device, in order, with the addresses the driver
  // gave them: the model may give its own segments those addresses while it makes the same
  // calls, since the allocator breaks ties between equal blocks by address.
  virtual void hint_device_calls(std::span<const DeviceCall> recorded) = 0;
  // Rebuilds these segments with their live blocks held; the allocate() of each block, in order,
  // with its size and its segment's stream, gets the block's place (null: no room). A block whose
  // allocate() never comes (an adaptor above refused it) goes back to the cache.
  virtual void expect_placed(std::span<const PlacedSegment> segments) = 0;
  // Ends expect_placed: the blocks not asked for go back to the cache.
  virtual void end_placed() = 0;
};

// Allocates the live blocks of `segments` through `allocator`, one result per block in order:
// in their segments where the allocator caches in segments, else each alone.
[[nodiscard]] inline std::vector<AllocResult> allocate_placed(
    Allocator& allocator, std::span<const PlacedSegment> segments) {
  auto* cache = allocator.capability<CachingAllocator>();
  if (cache != nullptr) cache->expect_placed(segments);
  std::vector<AllocResult> results;
  for (const PlacedSegment& segment : segments) {
    for (const PlacedBlock& block : segment.blocks)
      results.push_back(allocator.allocate(block.bytes, segment.stream));
  }
  if (cache != nullptr) cache->end_placed();
  return results;
}

}  // namespace oomlab
