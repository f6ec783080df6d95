// Expandable segments: one virtual range per stream and pool, reserved at 1 1/8 of the card,
// whose pages (2 MiB in the small pool, large_segment_size in the large one: 20 MiB, measured)
// are mapped as requests need them and unmapped, whole pages only, when PyTorch frees its cache.
#include <algorithm>

#include "pytorch/model/caching_model.hpp"

namespace oomlab::torch {

CachingModel::Block* CachingModel::try_allocate_expandable(const Request& r) {
  Block* candidate = find_expandable_block(*r.pool, r.stream, r.size);
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, r.size))) {
    return nullptr;
  }
  while (candidate->size < r.size) {  // a free mapped block, then unmapped space after it
    Block* next = candidate->next;
    if (!map_block(next, std::min(r.size - candidate->size, next->size))) return nullptr;
    candidate = next;  // it took the free block before it in
  }
  candidate->pool->blocks.erase(candidate);
  return candidate;
}

// The lowest address, in a segment of this stream and pool, where free and unmapped space
// together hold `size`; else a new segment.
CachingModel::Block* CachingModel::find_expandable_block(Pool& pool, std::uint64_t stream,
                                                         std::uint64_t size) {
  const auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
  const auto has_room = [&](const Block* b) {
    std::uint64_t bytes = 0;
    for (; bytes < size && allocatable(b); b = b->next)
      bytes += b->size;
    return bytes >= size;
  };
  Block key;
  key.stream = stream;
  for (auto it = pool.unmapped.lower_bound(&key);
       it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Block* candidate = *it;
    if (allocatable(candidate->prev)) candidate = candidate->prev;
    if (has_room(candidate)) return candidate;
  }
  const std::uint64_t page = pool.small ? kSmallSegmentBytes : config_.large_segment_size;
  const std::uint64_t total = device_.total_bytes();
  const std::uint64_t bytes = ceil_div(total + total / 8, page) * page;
  auto& segment = *segments_.emplace_back(std::make_unique<Segment>());
  segment.page = page;
  segment.bytes = bytes;
  segment.base = device_.reserve(bytes, page);
  Block* candidate = new_block(segment.base, bytes, stream, &pool);
  candidate->mapped = false;
  candidate->segment = &segment;
  pool.unmapped.insert(candidate);
  return candidate;
}

// The same search as find_expandable_block and the same walk as try_allocate_expandable, changing
// nothing: the whole pages that serving `size` would map (unmapped ranges start on a page).
std::uint64_t CachingModel::expandable_bytes_to_map(const Pool& pool, std::uint64_t stream,
                                                    std::uint64_t size) const {
  const std::uint64_t page = pool.small ? kSmallSegmentBytes : config_.large_segment_size;
  const auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
  Block key;
  key.stream = stream;
  for (auto it = pool.unmapped.lower_bound(&key);
       it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    const Block* b = allocatable((*it)->prev) ? (*it)->prev : *it;
    std::uint64_t have = 0;
    std::uint64_t to_map = 0;
    for (; have < size && allocatable(b); b = b->next) {
      if (b->mapped) {
        have += b->size;
        continue;
      }
      const std::uint64_t mapped = std::min(b->size, ceil_div(size - have, page) * page);
      to_map += mapped;
      have += mapped;
    }
    if (have >= size) return to_map;
  }
  return ceil_div(size, page) * page;  // a new segment
}

// Maps the pages under the first `size` bytes of an unmapped block.
bool CachingModel::map_block(Block* to_map, std::uint64_t size) {
  const Segment& segment = *to_map->segment;
  const std::uint64_t begin = (to_map->address - segment.base) / segment.page;
  const std::uint64_t end = ceil_div(to_map->address + size - segment.base, segment.page);
  const std::uint64_t address = segment.base + begin * segment.page;
  const std::uint64_t bytes = (end - begin) * segment.page;
  if (bytes == 0 || !device_.map(address, bytes)) return false;
  Pool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (bytes < to_map->size) {
    Block* rest = new_block(address + bytes, to_map->size - bytes, to_map->stream, &pool);
    rest->mapped = false;
    rest->segment = to_map->segment;
    rest->splice(to_map, to_map->next);
    pool.unmapped.insert(rest);
    to_map->size = bytes;
  }
  try_merge(to_map, to_map->prev);
  try_merge(to_map, to_map->next);
  insert_cached(to_map);
  reserved_ += bytes;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, reserved_);
  journal(DeviceCallKind::segment_map, bytes, address);
  return true;
}

// Unmaps the whole pages inside a free block; the part-pages at its ends stay cached.
void CachingModel::unmap_block(Block* block) {
  const Segment& segment = *block->segment;
  const std::uint64_t begin = ceil_div(block->address - segment.base, segment.page);
  const std::uint64_t end = (block->address + block->size - segment.base) / segment.page;
  if (begin >= end) return;
  const std::uint64_t address = segment.base + begin * segment.page;
  const std::uint64_t bytes = (end - begin) * segment.page;
  device_.unmap(address, bytes);
  Pool& pool = *block->pool;
  pool.blocks.erase(block);
  if (const std::uint64_t before = address - block->address; before > 0) {
    Block* head = new_block(block->address, before, block->stream, &pool);
    head->segment = block->segment;
    head->splice(block->prev, block);
    insert_cached(head);
  }
  if (const std::uint64_t after = block->address + block->size - (address + bytes); after > 0) {
    Block* tail = new_block(address + bytes, after, block->stream, &pool);
    tail->segment = block->segment;
    tail->splice(block, block->next);
    insert_cached(tail);
  }
  block->address = address;
  block->size = bytes;
  block->mapped = false;
  try_merge(block, block->prev);
  try_merge(block, block->next);
  pool.unmapped.insert(block);
  reserved_ -= bytes;
  journal(DeviceCallKind::segment_unmap, bytes, address);
}

// A segment with no page mapped gives its virtual range back.
void CachingModel::release_expandable_segment(Block* block) {
  Segment* segment = block->segment;
  device_.release(segment->base, segment->bytes);
  block->pool->unmapped.erase(block);
  delete_block(block);
  std::erase_if(segments_, [&](const std::unique_ptr<Segment>& s) { return s.get() == segment; });
}

}  // namespace oomlab::torch
