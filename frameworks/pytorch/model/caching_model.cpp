#include "pytorch/model/caching_model.hpp"

#include <algorithm>
#include <iterator>

namespace oomlab::torch {

void CachingModel::Block::splice(Block* before, Block* after) {
  if (before != nullptr) before->next = this;
  prev = before;
  if (after != nullptr) after->prev = this;
  next = after;
}

bool CachingModel::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return a->address < b->address;
}

bool CachingModel::ByAddress::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  return a->address < b->address;
}

CachingModel::CachingModel(const TorchConfig& config, DeviceMemory& device,
                           std::optional<std::uint64_t> allowed)
    : config_(config), device_(device), allowed_(allowed) {
  small_.small = true;
}

CachingModel::Block* CachingModel::new_block(std::uint64_t address, std::uint64_t size,
                                             std::uint64_t stream, Pool* pool) {
  Block* block = nullptr;
  if (spare_.empty()) {
    block = &storage_.emplace_back();
  } else {
    block = spare_.back();
    spare_.pop_back();
    *block = Block{};
  }
  block->address = address;
  block->size = size;
  block->stream = stream;
  block->pool = pool;
  return block;
}

void CachingModel::delete_block(Block* block) {
  spare_.push_back(block);
}

void CachingModel::insert_cached(Block* block) {
  block->gc_base = block->pool->free_block_searches;
  block->pool->blocks.insert(block);
}

bool CachingModel::gc_enabled() const {
  return allowed_.has_value() && config_.garbage_collection_threshold > 0.0;
}

std::uint64_t CachingModel::malloc(std::uint64_t bytes, std::uint64_t stream) {
  Request r;
  r.size = round_size(bytes, config_);
  r.alloc_size = allocation_size(r.size, config_);
  r.stream = stream;
  r.pool = &pool_for(is_small(r.size));
  bool found = get_free_block(r);
  if (!found) {
    if (gc_enabled()) garbage_collect();
    found = alloc_block(r, false) || (release_available_cached_blocks(r) && alloc_block(r, false));
    if (!found) {
      release_cached_blocks();
      found = alloc_block(r, true);
    }
  }
  if (!found) {
    ++stats_.ooms;
    stats_.failed_device_bytes = r.alloc_size;
    stats_.failed_request_bytes = r.size;
    return 0;
  }
  Block* block = should_split(r.block, r.size) ? split_front(r.block, r.size) : r.block;
  hand_out(block, bytes);
  return block->address;
}

void CachingModel::hand_out(Block* block, std::uint64_t requested) {
  block->allocated = true;
  block->requested = requested;
  active_[block->address] = block;
  stats_.allocated_bytes += block->size;
  stats_.requested_bytes += requested;
}

bool CachingModel::should_split(const Block* block, std::uint64_t size) const {
  const std::uint64_t remaining = block->size - size;
  if (block->pool->small || config_.expandable_segments) return remaining >= kMinBlockBytes;
  return size < config_.max_split_size && remaining > kSmallRequestBytes;
}

// The front `size` bytes of a cached block become a block of their own; the rest stays cached.
CachingModel::Block* CachingModel::split_front(Block* remaining, std::uint64_t size) {
  Block* block = new_block(remaining->address, size, remaining->stream, remaining->pool);
  block->segment = remaining->segment;
  block->splice(remaining->prev, remaining);
  remaining->address += size;
  remaining->size -= size;
  insert_cached(remaining);
  return block;
}

CachingModel::Block* CachingModel::find_free_block(const Request& r) const {
  const Pool& pool = *r.pool;
  Block key;
  key.stream = r.stream;
  key.size = r.size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != r.stream) return nullptr;
  if ((*it)->segment != nullptr) {
    if (config_.expandable_segments) {
      // Best fit counts what an expandable block could grow to, not what is mapped now.
      const auto growable = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      for (auto next = std::next(it);
           (*it)->segment != nullptr && next != pool.blocks.end() && (*next)->stream == r.stream &&
           growable(*next) < growable(*it);
           ++next) {
        it = next;
      }
    } else {
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->segment != nullptr && (*it)->stream == r.stream);
      if (it == pool.blocks.end() || (*it)->stream != r.stream) return nullptr;
    }
  }
  const std::uint64_t limit = config_.max_split_size;
  if (r.size < limit && (*it)->size >= limit) return nullptr;  // oversize blocks serve no small
  if (r.size >= limit && (*it)->size >= r.size + config_.max_non_split_rounding) return nullptr;
  return *it;
}

bool CachingModel::get_free_block(Request& r) {
  if (gc_enabled()) ++r.pool->free_block_searches;
  Block* block = find_free_block(r);
  if (block == nullptr) return false;
  r.pool->blocks.erase(block);
  r.block = block;
  return true;
}

bool CachingModel::alloc_block(Request& r, bool retry) {
  if (retry) ++stats_.alloc_retries;
  if (allowed_ && reserved_ + r.alloc_size > *allowed_) return false;
  if (config_.expandable_segments) {
    r.block = try_allocate_expandable(r);
    return r.block != nullptr;
  }
  const std::uint64_t address = device_.allocate(r.alloc_size);
  if (address == 0) return false;
  reserved_ += r.alloc_size;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, reserved_);
  r.block = new_block(address, r.alloc_size, r.stream, r.pool);
  journal(DeviceCallKind::segment_alloc, r.alloc_size, address);
  return true;
}

// With max_split_size set: free the smallest oversize cached block that covers the request, or
// oversize blocks from the largest down until they add up to it.
bool CachingModel::release_available_cached_blocks(const Request& r) {
  const std::uint64_t limit = config_.max_split_size;
  if (limit == kUnlimited) return false;
  Pool& pool = *r.pool;
  Block key;
  key.stream = r.stream;
  key.size = std::max(r.size, limit);
  auto it = pool.blocks.lower_bound(&key);
  if (it != pool.blocks.end() && (*it)->stream == r.stream && (*it)->segment == nullptr) {
    if ((*it)->is_split()) return false;
    release_block(*it);
    return true;
  }
  if (it == pool.blocks.begin()) return false;
  std::uint64_t released = 0;
  --it;
  while (released < key.size && (*it)->size >= limit && (*it)->stream == r.stream) {
    const auto current = it;
    const bool first = current == pool.blocks.begin();
    if (!first) --it;
    Block* block = *current;
    if (block->segment == nullptr && !block->is_split()) {
      released += block->size;
      release_block(block);
    }
    if (first) break;
  }
  return released >= key.size;
}

void CachingModel::release_cached_blocks() {
  release_blocks(large_);
  release_blocks(small_);
}

void CachingModel::release_blocks(Pool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    ++it;
    if (block->segment != nullptr) {
      to_unmap.push_back(block);
    } else if (!block->is_split()) {
      release_block(block);
    }
  }
  for (Block* block : to_unmap) {
    unmap_block(block);
    if (!block->mapped && !block->is_split()) release_expandable_segment(block);
  }
}

void CachingModel::release_block(Block* block) {
  journal(DeviceCallKind::segment_free, block->size, block->address);
  device_.free(block->address, block->size);
  reserved_ -= block->size;
  block->pool->blocks.erase(block);
  delete_block(block);
}

// Frees the large pool's whole cached segments that have waited longest (in free-block searches
// since they were cached), above the average wait first, until reserved memory is back under
// threshold x the fraction's cap.
void CachingModel::garbage_collect() {
  const auto threshold = static_cast<std::uint64_t>(config_.garbage_collection_threshold *
                                                    static_cast<double>(*allowed_));
  if (reserved_ <= threshold) return;
  const std::uint64_t target = reserved_ - threshold;
  const auto age = [&](const Block* b) {
    return static_cast<double>(large_.free_block_searches - b->gc_base);
  };
  const auto collectable = [](const Block* b) { return !b->is_split() && b->segment == nullptr; };
  double total_age = 0.0;
  int count = 0;
  for (const Block* b : large_.blocks) {
    if (collectable(b)) {
      total_age += age(b);
      ++count;
    }
  }
  std::uint64_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    const double age_threshold = total_age / count;
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* block = *it;
      ++it;
      if (collectable(block) && age(block) >= age_threshold) {
        freed = true;
        reclaimed += block->size;
        total_age -= age(block);
        --count;
        release_block(block);
      }
    }
  }
}

void CachingModel::free(std::uint64_t address) {
  const auto it = active_.find(address);
  if (it == active_.end()) return;
  Block* block = it->second;
  active_.erase(it);
  stats_.allocated_bytes -= block->size;
  stats_.requested_bytes -= block->requested;
  block->allocated = false;
  free_block(block);
}

void CachingModel::free_block(Block* block) {
  try_merge(block, block->prev);
  try_merge(block, block->next);
  insert_cached(block);
}

// `dst` takes in its free neighbour `src` (mapped like it), which disappears.
void CachingModel::try_merge(Block* dst, Block* src) {
  if (src == nullptr || src->allocated || src->mapped != dst->mapped) return;
  if (dst->prev == src) {
    dst->address = src->address;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  dst->size += src->size;
  if (src->mapped) {
    src->pool->blocks.erase(src);
  } else {
    src->pool->unmapped.erase(src);
  }
  delete_block(src);
}

CacheStats CachingModel::stats() const {
  CacheStats s = stats_;
  s.reserved_bytes = reserved_;
  return s;
}

}  // namespace oomlab::torch
