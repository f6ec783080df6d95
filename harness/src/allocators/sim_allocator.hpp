// `sim`: a host-side model of how cudaMalloc hands out device memory, measured on an H100
// (docs/allocators.md, "Measured on an H100"). Capacity is the budget, in 2 MiB pages. A request of
// a page or more takes whole pages from anywhere (the driver remaps physical pages behind one
// virtual range); smaller requests are packed, first fit, into partly used pages, and a page comes
// back only when its last block is freed. Deterministic: the same calls give the same answers and
// addresses. Pointers are synthetic (nothing can be written through them).
#pragma once

#include <cstdint>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/sim.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

class SimAllocator final : public Allocator {
 public:
  using Options = SimOptions;

  // Small blocks are placed at this alignment (cudaMalloc guarantees 256 bytes).
  static constexpr std::uint64_t kGranuleBytes = 256;
  // The largest capacity the address layout allows.
  static constexpr std::uint64_t kMaxCapacityBytes = kSimMaxCapacityBytes;

  explicit SimAllocator(const Options& options);

  [[nodiscard]] std::uint64_t free_pages() const { return free_pages_; }
  [[nodiscard]] std::uint64_t capacity_pages() const { return capacity_pages_; }
  [[nodiscard]] std::uint64_t pages_holding_small_blocks() const { return small_pages_in_use_; }

 private:
  [[nodiscard]] std::string_view do_name() const override { return "sim"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return (capacity_pages_ - free_pages_) * page_bytes_;
  }
  [[nodiscard]] bool do_simulated() const override { return true; }
  // A request of a page or more takes whole pages; smaller ones pack together.
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override {
    return bytes >= page_bytes_ ? round_up(bytes, page_bytes_) : bytes;
  }
  struct Range {
    std::uint32_t offset;  // in granules
    std::uint32_t length;
  };
  // A page that small blocks are packed into.
  struct SmallPage {
    std::vector<Range> free_ranges;  // sorted by offset, coalesced
    std::uint32_t blocks = 0;
    std::uint32_t largest_run = 0;
    bool in_use = false;
  };

  AllocResult allocate_small(std::uint32_t granules);
  void deallocate_small(std::uint64_t address, std::size_t bytes);
  std::uint32_t open_page();
  void close_page(std::uint32_t slot);
  void carve(SmallPage& page, std::uint32_t slot, std::uint32_t granules, std::uint32_t& offset);

  // A max-tree over page slots of each page's largest free run: finds the first page (by slot,
  // so by address) with room for a request in O(log pages).
  void tree_update(std::uint32_t slot, std::uint32_t value);
  [[nodiscard]] std::uint32_t tree_find_first(std::uint32_t at_least) const;
  void tree_grow(std::uint32_t slots);

  std::uint64_t page_bytes_;
  std::uint32_t granules_per_page_;
  std::uint64_t capacity_pages_;
  std::uint64_t free_pages_;
  std::uint64_t device_total_bytes_;
  std::uint64_t small_pages_in_use_ = 0;
  std::uint64_t next_large_address_;

  std::vector<SmallPage> pages_;
  std::vector<std::uint32_t> closed_slots_;  // slots whose page went back, reused lowest first
  std::vector<std::uint32_t> tree_;          // size 2 * leaves_; leaf i is slot i
  std::uint32_t leaves_ = 0;
};

}  // namespace oomlab
