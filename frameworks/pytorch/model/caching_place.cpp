// What the caching allocator held before a run began, rebuilt (a segment and its live blocks at
// their offsets, the gaps cached as free blocks), and the side-effect-free question a probe asks:
// would a request fit now?
#include <algorithm>
#include <map>
#include <set>

#include "pytorch/model/caching_model.hpp"

namespace oomlab::torch {

// A live block's size in the allocator: known from the snapshot, or the request rounded and, as
// the allocator does, taking in a remainder too small to split off.
std::uint64_t CachingModel::placed_block_size(const PlacedSegment& segment, std::size_t i) const {
  const PlacedBlock& block = segment.blocks[i];
  if (block.block_bytes != 0) return block.block_bytes;
  const std::uint64_t size = round_size(block.bytes, config_);
  const std::uint64_t end =
      i + 1 < segment.blocks.size() ? segment.blocks[i + 1].offset : segment.bytes;
  if (block.offset + size >= end) return size;
  const std::uint64_t remainder = end - block.offset - size;
  const bool split = segment.small_pool || config_.expandable_segments
                         ? remainder >= kMinBlockBytes
                         : size < config_.max_split_size && remainder > kSmallRequestBytes;
  return split ? size : size + remainder;
}

// Blocks laid out in one expandable segment: each from a placed segment, at its distance from the
// first (expandable ranges) or after the one before (segments of the other kind).
struct CachingModel::Run {
  std::uint64_t offset;
  const PlacedSegment* segment;
  std::uint64_t* addresses;  // where its blocks' addresses go
};

std::vector<std::uint64_t> CachingModel::place(std::span<const PlacedSegment> segments) {
  const Unjournaled quiet(*this);
  std::size_t total = 0;
  for (const PlacedSegment& s : segments)
    total += s.blocks.size();
  std::vector<std::uint64_t> addresses(total, 0);
  std::uint64_t* next = addresses.data();
  // Expandable segments gather every placed segment of a stream and pool into one.
  std::map<std::pair<std::uint64_t, bool>, std::vector<Run>> groups;
  for (const PlacedSegment& s : segments) {
    std::uint64_t* out = next;
    next += s.blocks.size();
    if (config_.expandable_segments) {
      groups[{stream_key(s.stream), s.small_pool}].push_back({0, &s, out});
    } else if (s.expandable) {
      // Held in an expandable segment: the blocks are asked for again, in address order, as this
      // allocator would have placed them when the program made them.
      for (std::size_t i = 0; i < s.blocks.size(); ++i)
        out[i] = malloc(s.blocks[i].bytes, stream_key(s.stream));
    } else {
      place_segment(s, out);
    }
  }
  for (auto& [key, runs] : groups) {
    // Expandable ranges keep their distances; other segments follow them, one after another.
    std::uint64_t lowest = UINT64_MAX;
    for (const Run& r : runs) {
      if (r.segment->expandable) lowest = std::min(lowest, r.segment->address);
    }
    std::uint64_t end = 0;
    for (Run& r : runs) {
      if (r.segment->expandable) {
        r.offset = r.segment->address - lowest;
        end = std::max(end, r.offset + r.segment->bytes);
      }
    }
    // A segment of the other kind keeps the gaps between its live blocks (what the program freed
    // there), not the unused space after its last one: an expandable segment has no such ends.
    for (Run& r : runs) {
      if (!r.segment->expandable && !r.segment->blocks.empty()) {
        r.offset = end;
        const std::size_t last = r.segment->blocks.size() - 1;
        end += round_up(r.segment->blocks[last].offset + placed_block_size(*r.segment, last),
                        kMinBlockBytes);
      }
    }
    place_expandable(pool_for(key.second), key.first, runs);
  }
  return addresses;
}

void CachingModel::place_segment(const PlacedSegment& placed, std::uint64_t* addresses) {
  Pool& pool = pool_for(placed.small_pool);
  const std::uint64_t base = device_.allocate(placed.bytes);
  if (base == 0) return;
  reserved_ += placed.bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, reserved_);
  Block* space = new_block(base, placed.bytes, stream_key(placed.stream), &pool);
  insert_cached(space);
  for (std::size_t i = 0; i < placed.blocks.size() && space != nullptr; ++i) {
    const std::uint64_t address = base + placed.blocks[i].offset;
    const std::uint64_t size = placed_block_size(placed, i);
    // Blocks come in address order inside the segment (the trace reader checks it); one that
    // does not fit the free rest is left out rather than overlap another.
    if (space->allocated || address < space->address ||
        address + size > space->address + space->size) {
      continue;
    }
    Block* block = carve(space, address, size);
    hand_out(block, placed.blocks[i].bytes);
    addresses[i] = block->address;
    space = block->next;
  }
}

// Maps the pages under every run's blocks in one segment of the stream's pool, then carves them.
void CachingModel::place_expandable(Pool& pool, std::uint64_t stream, std::vector<Run>& runs) {
  Block* start = find_expandable_block(pool, stream, 1);
  if (start->mapped) start = start->next;
  if (start == nullptr || start->mapped) return;
  const std::uint64_t base = start->address;
  const std::uint64_t page = start->segment->page;
  std::set<std::uint64_t> pages;  // the pages holding a live block, by index from base
  for (const Run& r : runs) {
    for (std::size_t i = 0; i < r.segment->blocks.size(); ++i) {
      const std::uint64_t from = r.offset + r.segment->blocks[i].offset;
      const std::uint64_t to = from + placed_block_size(*r.segment, i);
      if (to > start->size) continue;  // past the segment's reserved range: left out
      for (std::uint64_t p = from / page; p * page < to; ++p)
        pages.insert(p);
    }
  }
  for (auto it = pages.begin(); it != pages.end();) {  // each run of consecutive pages at once
    const std::uint64_t first = *it;
    std::uint64_t last = first;
    for (++it; it != pages.end() && *it == last + 1; ++it)
      last = *it;
    Block* unmapped = nullptr;
    for (Block* b : pool.unmapped) {
      if (b->stream == stream && b->address <= base + first * page &&
          base + first * page < b->address + b->size) {
        unmapped = b;
      }
    }
    if (unmapped == nullptr) return;
    unmapped = split_unmapped(unmapped, base + first * page);
    if (!map_block(unmapped, (last - first + 1) * page)) return;
  }
  for (Run& r : runs) {
    for (std::size_t i = 0; i < r.segment->blocks.size(); ++i) {
      const std::uint64_t address = base + r.offset + r.segment->blocks[i].offset;
      const std::uint64_t size = placed_block_size(*r.segment, i);
      Block* space = free_block_holding(pool, stream, address, size);
      if (space == nullptr) continue;
      Block* block = carve(space, address, size);
      hand_out(block, r.segment->blocks[i].bytes);
      r.addresses[i] = block->address;
    }
  }
}

// The unmapped block from `address` on (an unmapped head before it stays unmapped).
CachingModel::Block* CachingModel::split_unmapped(Block* unmapped, std::uint64_t address) {
  if (address == unmapped->address) return unmapped;
  Pool& pool = *unmapped->pool;
  pool.unmapped.erase(unmapped);
  Block* head = new_block(unmapped->address, address - unmapped->address, unmapped->stream, &pool);
  head->mapped = false;
  head->segment = unmapped->segment;
  head->splice(unmapped->prev, unmapped);
  unmapped->size -= head->size;
  unmapped->address = address;
  pool.unmapped.insert(head);
  pool.unmapped.insert(unmapped);
  return unmapped;
}

CachingModel::Block* CachingModel::free_block_holding(const Pool& pool, std::uint64_t stream,
                                                      std::uint64_t address, std::uint64_t size) {
  for (Block* b : pool.blocks) {
    if (b->stream == stream && b->address <= address && address + size <= b->address + b->size)
      return b;
  }
  return nullptr;
}

// Cuts [address, address + size) out of a cached free block that covers it; the parts before and
// after stay cached.
CachingModel::Block* CachingModel::carve(Block* free_block, std::uint64_t address,
                                         std::uint64_t size) {
  Pool& pool = *free_block->pool;
  pool.blocks.erase(free_block);
  if (address > free_block->address) {
    Block* head =
        new_block(free_block->address, address - free_block->address, free_block->stream, &pool);
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
  const std::uint64_t need = config_.expandable_segments
                                 ? expandable_bytes_to_map(*r.pool, r.stream, r.size)
                                 : r.alloc_size;
  return device_.free_bytes() + releasable >= need;
}

}  // namespace oomlab::torch
