// What the caching allocator held before a run began, rebuilt (a segment and its live blocks at
// their offsets, the gaps cached as free blocks), and the side-effect-free question a probe asks:
// would a request fit now?
#include <algorithm>

#include "allocators/torch/caching_model.hpp"

namespace oomlab::torch {

// A live block's size in the allocator: known from the snapshot, or the request rounded and, as
// the allocator does, taking in a remainder too small to split off.
std::uint64_t CachingModel::placed_block_size(const PlacedSegment& segment, std::size_t i) const {
  const PlacedBlock& block = segment.blocks[i];
  if (block.block_bytes != 0) return block.block_bytes;
  const std::uint64_t size = round_size(block.bytes, config_);
  const std::uint64_t end = i + 1 < segment.blocks.size() ? segment.blocks[i + 1].offset
                                                          : segment.bytes;
  if (block.offset + size >= end) return size;
  const std::uint64_t remainder = end - block.offset - size;
  const bool split = segment.small_pool || config_.expandable_segments
                         ? remainder >= kMinBlockBytes
                         : size < config_.max_split_size && remainder > kSmallRequestBytes;
  return split ? size : size + remainder;
}

std::vector<std::uint64_t> CachingModel::place(const PlacedSegment& placed) {
  Pool& pool = pool_for(placed.small_pool);
  const std::uint64_t stream = stream_key(placed.stream);
  const Unjournaled quiet(*this);
  if (placed.expandable != config_.expandable_segments) {
    // Held under the other kind of segment: the blocks are asked for again, in address order,
    // as this allocator would have placed them when the program made them.
    std::vector<std::uint64_t> addresses;
    for (const PlacedBlock& block : placed.blocks)
      addresses.push_back(malloc(block.bytes, stream));
    return addresses;
  }
  Block* space = nullptr;
  std::uint64_t base = 0;
  if (placed.expandable) {
    // Pages mapped where the segment's unmapped space begins; they may join a free block before.
    Block* candidate = find_expandable_block(pool, stream, placed.bytes);
    Block* unmapped = candidate->mapped ? candidate->next : candidate;
    if (unmapped == nullptr || unmapped->mapped || unmapped->size < placed.bytes) return {};
    base = unmapped->address;
    if (!map_block(unmapped, placed.bytes)) return {};
    space = unmapped;  // now mapped and free, covering [base, base + bytes)
  } else {
    const std::uint64_t address = device_.allocate(placed.bytes);
    if (address == 0) return {};
    reserved_ += placed.bytes;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, reserved_);
    space = new_block(address, placed.bytes, stream, &pool);
    insert_cached(space);
    base = address;
  }
  std::vector<std::uint64_t> addresses(placed.blocks.size(), 0);
  for (std::size_t i = 0; i < placed.blocks.size() && space != nullptr; ++i) {
    const std::uint64_t address = base + placed.blocks[i].offset;
    const std::uint64_t size = placed_block_size(placed, i);
    // Blocks come in address order, each inside the free rest of the segment (the trace
    // reader checks it); one that does not is left out rather than overlap another.
    if (space->allocated || !space->mapped || address < space->address ||
        address + size > space->address + space->size) {
      continue;
    }
    Block* block = carve(space, address, size);
    hand_out(block, placed.blocks[i].bytes);
    addresses[i] = block->address;
    space = block->next;  // the free rest of the segment, if any
  }
  return addresses;
}

// Cuts [address, address + size) out of a cached free block that covers it; the parts before and
// after stay cached.
CachingModel::Block* CachingModel::carve(Block* free_block, std::uint64_t address,
                                         std::uint64_t size) {
  Pool& pool = *free_block->pool;
  pool.blocks.erase(free_block);
  if (address > free_block->address) {
    Block* head = new_block(free_block->address, address - free_block->address,
                            free_block->stream, &pool);
    head->segment = free_block->segment;
    head->splice(free_block->prev, free_block);
    insert_cached(head);
    free_block->size -= head->size;
    free_block->address = address;
  }
  if (free_block->size > size) {
    Block* tail = new_block(address + size, free_block->size - size, free_block->stream, &pool);
    tail->segment = free_block->segment;
    tail->splice(free_block, free_block->next);
    insert_cached(tail);
    free_block->size = size;
  }
  return free_block;
}

// What release_cached_blocks() would give back: whole cached segments, and the whole pages of
// free expandable blocks.
std::uint64_t CachingModel::releasable_bytes() const {
  std::uint64_t bytes = 0;
  for (const Pool* pool : {&large_, &small_}) {
    for (const Block* b : pool->blocks) {
      if (b->segment == nullptr) {
        if (!b->is_split()) bytes += b->size;
        continue;
      }
      const std::uint64_t page = b->segment->page;
      const std::uint64_t begin = ceil_div(b->address - b->segment->base, page);
      const std::uint64_t end = (b->address + b->size - b->segment->base) / page;
      if (end > begin) bytes += (end - begin) * page;
    }
  }
  return bytes;
}

bool CachingModel::would_fit(std::uint64_t bytes, std::uint64_t stream) const {
  Request r;
  r.size = round_size(bytes, config_);
  r.alloc_size = allocation_size(r.size, config_);
  r.stream = stream;
  r.pool = const_cast<Pool*>(is_small(r.size) ? &small_ : &large_);
  if (find_free_block(r) != nullptr) return true;
  const std::uint64_t releasable = releasable_bytes();
  if (allowed_ && reserved_ - releasable + r.alloc_size > *allowed_) return false;
  const std::uint64_t need = config_.expandable_segments ? round_up(r.size, kLargeRoundBytes)
                                                         : r.alloc_size;
  return device_.free_bytes() + releasable >= need;
}

}  // namespace oomlab::torch
