// PyTorch's native CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), modelled block by
// block. A request is rounded (round_size) and served from the pool of its size class and stream:
// the smallest cached block that fits (ties to the lowest address), split when the remainder is
// worth keeping; blocks of max_split_size or more are never split and serve only requests within
// max_non_split_rounding of their size. When nothing cached fits, it asks the device for a
// segment (allocation_size); when the device refuses, it frees cached segments that hold no live
// block (oversize ones first when max_split_size is set) and asks again, and only then fails.
// Under a per-process fraction, garbage_collection_threshold frees the oldest cached segments
// first. With expandable_segments, each stream's pool grows one virtual segment page by page (2
// MiB small, 20 MiB large) and gives whole free pages back when it must.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "pytorch/model/cache_model.hpp"
#include "pytorch/model/torch_config.hpp"

namespace oomlab::torch {

class CachingModel final : public CacheModel {
 public:
  // `allowed`: the cap of set_per_process_memory_fraction, checked before every device request.
  CachingModel(const TorchConfig& config, DeviceMemory& device,
               std::optional<std::uint64_t> allowed);

  std::uint64_t malloc(std::uint64_t bytes, std::uint64_t stream) override;
  void free(std::uint64_t address) override;
  void empty_cache() override { release_cached_blocks(); }
  [[nodiscard]] bool would_fit(std::uint64_t bytes, std::uint64_t stream) const override;
  std::vector<std::uint64_t> place(std::span<const PlacedSegment> segments) override;
  [[nodiscard]] CacheStats stats() const override;

 private:
  struct Pool;
  struct Segment;  // an expandable segment
  struct Block {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::uint64_t stream = 0;
    Pool* pool = nullptr;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
    Segment* segment = nullptr;  // expandable segments only
    std::int64_t gc_base = 0;    // the pool's free-block searches when it was cached
    bool allocated = false;
    bool mapped = true;  // expandable: backed by physical pages
    [[nodiscard]] bool is_split() const { return prev != nullptr || next != nullptr; }
    void splice(Block* before, Block* after);
  };
  // PyTorch's order of cached blocks: stream, then size, then address.
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct ByAddress {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct Pool {
    std::set<Block*, BySize> blocks;       // cached, mapped
    std::set<Block*, ByAddress> unmapped;  // expandable address space with no pages
    bool small = false;
    std::int64_t free_block_searches = 0;  // only counted when garbage collection is on
  };
  struct Segment {
    std::uint64_t base = 0;
    std::uint64_t bytes = 0;  // the reserved range
    std::uint64_t page = 0;
  };
  struct Request {
    std::uint64_t size = 0;        // rounded
    std::uint64_t alloc_size = 0;  // the segment it would ask for
    std::uint64_t stream = 0;
    Pool* pool = nullptr;
    Block* block = nullptr;
  };

  // malloc's steps, in PyTorch's order.
  [[nodiscard]] Block* find_free_block(const Request& r) const;
  bool get_free_block(Request& r);
  bool alloc_block(Request& r, bool retry);
  bool release_available_cached_blocks(const Request& r);
  void release_cached_blocks();
  void garbage_collect();
  [[nodiscard]] bool should_split(const Block* block, std::uint64_t size) const;
  Block* split_front(Block* remaining, std::uint64_t size);
  void hand_out(Block* block, std::uint64_t requested);

  void free_block(Block* block);
  void try_merge(Block* dst, Block* src);
  void release_block(Block* block);
  void release_blocks(Pool& pool);
  [[nodiscard]] bool gc_enabled() const;
  [[nodiscard]] std::uint64_t releasable_bytes() const;

  // Expandable segments (caching_expandable.cpp).
  Block* try_allocate_expandable(const Request& r);
  Block* find_expandable_block(Pool& pool, std::uint64_t stream, std::uint64_t size);
  bool map_block(Block* to_map, std::uint64_t size);
  void unmap_block(Block* block);
  void release_expandable_segment(Block* block);
  // The pages try_allocate_expandable would map for `size` now: would_fit's measure.
  [[nodiscard]] std::uint64_t expandable_bytes_to_map(const Pool& pool, std::uint64_t stream,
                                                      std::uint64_t size) const;

  // Placement of what was live before the run (caching_place.cpp).
  struct Run;  // blocks laid out in an expandable segment
  void place_segment(const PlacedSegment& placed, std::uint64_t* addresses);
  void place_expandable(Pool& pool, std::uint64_t stream, std::vector<Run>& runs);
  Block* split_unmapped(Block* unmapped, std::uint64_t address);
  static Block* free_block_holding(const Pool& pool, std::uint64_t stream, std::uint64_t address,
                                   std::uint64_t size);
  Block* carve(Block* free_block, std::uint64_t address, std::uint64_t size);
  [[nodiscard]] std::uint64_t placed_block_size(const PlacedSegment& segment, std::size_t i) const;

  Block* new_block(std::uint64_t address, std::uint64_t size, std::uint64_t stream, Pool* pool);
  void delete_block(Block* block);
  static void insert_cached(Block* block);
  Pool& pool_for(bool small) { return small ? small_ : large_; }

  TorchConfig config_;
  DeviceMemory& device_;
  std::optional<std::uint64_t> allowed_;
  Pool large_;
  Pool small_;
  std::unordered_map<std::uint64_t, Block*> active_;  // by address
  std::deque<Block> storage_;
  std::vector<Block*> spare_;
  std::vector<std::unique_ptr<Segment>> segments_;
  std::uint64_t reserved_ = 0;
  CacheStats stats_;
};

}  // namespace oomlab::torch
