#include "allocators/sim_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <stdexcept>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {
// Small blocks live at kSmallBase + slot * page + offset; large ones above kLargeBase. The gap
// holds kMaxCapacityBytes of slots, so the two never meet and a pointer tells which it is.
constexpr std::uint64_t kSmallBase = 1ULL << 44U;
constexpr std::uint64_t kLargeBase = 1ULL << 46U;
}  // namespace

std::unique_ptr<Allocator> make_sim_allocator(const SimOptions& options) {
  return std::make_unique<SimAllocator>(options);
}

SimAllocator::SimAllocator(const Options& options)
    : page_bytes_(options.page_bytes),
      granules_per_page_(static_cast<std::uint32_t>(options.page_bytes / kGranuleBytes)),
      capacity_pages_(options.page_bytes == 0 ? 0 : options.capacity_bytes / options.page_bytes),
      free_pages_(capacity_pages_),
      device_total_bytes_(options.device_total_bytes),
      next_large_address_(kLargeBase) {
  if (page_bytes_ < kGranuleBytes || page_bytes_ % kGranuleBytes != 0 || page_bytes_ > 1_GiB) {
    throw Error(ErrorKind::usage,
                fmt::format("sim: page must be a multiple of {} B up to 1 GiB", kGranuleBytes));
  }
  if (options.capacity_bytes > kMaxCapacityBytes) {
    throw Error(ErrorKind::usage,
                fmt::format("sim: capacity {} is over the model's limit of {}",
                            format_bytes(options.capacity_bytes), format_bytes(kMaxCapacityBytes)));
  }
}

AllocResult SimAllocator::do_allocate(std::size_t bytes, Stream /*stream*/) {
  if (bytes == 0) return {};  // like cudaMalloc: success, no memory, null pointer
  if (bytes < page_bytes_) {
    return allocate_small(static_cast<std::uint32_t>(ceil_div(bytes, kGranuleBytes)));
  }
  const std::uint64_t pages = ceil_div(bytes, page_bytes_);
  if (pages > free_pages_) return {nullptr, AllocStatus::out_of_memory, 0};
  free_pages_ -= pages;
  const std::uint64_t address = next_large_address_;
  next_large_address_ += pages * page_bytes_;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a simulated address, never dereferenced
  return {reinterpret_cast<void*>(address), AllocStatus::ok,
          0};  // NOLINT(performance-no-int-to-ptr)
}

void SimAllocator::do_deallocate(void* ptr, std::size_t bytes, Stream /*stream*/) {
  if (ptr == nullptr) return;
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  if (bytes < page_bytes_) {
    deallocate_small(address, bytes);
    return;
  }
  if (address < kLargeBase || address >= next_large_address_) {
    throw std::logic_error(
        fmt::format("sim: free of {:#x} ({} B), not a large block", address, bytes));
  }
  free_pages_ += ceil_div(bytes, page_bytes_);
}

MemoryState SimAllocator::do_state() const {
  const std::uint64_t reserved = reserved_bytes();
  return {.reserved_bytes = reserved,
          .own_bytes_bound = reserved,
          .device_free_bytes = free_pages_ * page_bytes_,
          .device_total_bytes = device_total_bytes_};
}

AllocResult SimAllocator::allocate_small(std::uint32_t granules) {
  std::uint32_t slot = tree_find_first(granules);
  if (slot == UINT32_MAX) {
    if (free_pages_ == 0) return {nullptr, AllocStatus::out_of_memory, 0};
    slot = open_page();
  }
  std::uint32_t offset = 0;
  carve(pages_[slot], slot, granules, offset);
  const std::uint64_t address =
      kSmallBase + slot * page_bytes_ + std::uint64_t{offset} * kGranuleBytes;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a simulated address, never dereferenced
  return {reinterpret_cast<void*>(address), AllocStatus::ok,
          0};  // NOLINT(performance-no-int-to-ptr)
}

void SimAllocator::carve(SmallPage& page, std::uint32_t slot, std::uint32_t granules,
                         std::uint32_t& offset) {
  auto it = std::find_if(page.free_ranges.begin(), page.free_ranges.end(),
                         [&](const Range& r) { return r.length >= granules; });
  offset = it->offset;
  const bool was_largest = it->length == page.largest_run;
  it->offset += granules;
  it->length -= granules;
  if (it->length == 0) page.free_ranges.erase(it);
  ++page.blocks;
  if (was_largest) {
    std::uint32_t largest = 0;
    for (const Range& r : page.free_ranges)
      largest = std::max(largest, r.length);
    page.largest_run = largest;
    tree_update(slot, largest);
  }
}

void SimAllocator::deallocate_small(std::uint64_t address, std::size_t bytes) {
  if (address < kSmallBase || address >= kLargeBase) {
    throw std::logic_error(
        fmt::format("sim: free of {:#x} ({} B), not a small block", address, bytes));
  }
  const std::uint64_t slot64 = (address - kSmallBase) / page_bytes_;
  if (slot64 >= pages_.size() || !pages_[slot64].in_use) {
    throw std::logic_error(fmt::format("sim: free of {:#x}, whose page is not in use", address));
  }
  const auto slot = static_cast<std::uint32_t>(slot64);
  SmallPage& page = pages_[slot];
  const auto offset =
      static_cast<std::uint32_t>(((address - kSmallBase) % page_bytes_) / kGranuleBytes);
  const auto length = static_cast<std::uint32_t>(ceil_div(bytes, kGranuleBytes));

  if (--page.blocks == 0) {
    close_page(slot);
    return;
  }
  // Put the range back, joined with its free neighbours.
  auto next = std::lower_bound(page.free_ranges.begin(), page.free_ranges.end(), offset,
                               [](const Range& r, std::uint32_t off) { return r.offset < off; });
  const bool joins_prev = next != page.free_ranges.begin() &&
                          std::prev(next)->offset + std::prev(next)->length == offset;
  const bool joins_next = next != page.free_ranges.end() && offset + length == next->offset;
  std::uint32_t run = length;
  if (joins_prev && joins_next) {
    auto prev = std::prev(next);
    prev->length += length + next->length;
    run = prev->length;
    page.free_ranges.erase(next);
  } else if (joins_prev) {
    run = (std::prev(next)->length += length);
  } else if (joins_next) {
    next->offset = offset;
    run = (next->length += length);
  } else {
    page.free_ranges.insert(next, Range{offset, length});
  }
  if (run > page.largest_run) {
    page.largest_run = run;
    tree_update(slot, run);
  }
}

std::uint32_t SimAllocator::open_page() {
  std::uint32_t slot = 0;
  if (!closed_slots_.empty()) {
    std::pop_heap(closed_slots_.begin(), closed_slots_.end(), std::greater<>{});
    slot = closed_slots_.back();
    closed_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(pages_.size());
    pages_.emplace_back();
    if (slot >= leaves_) tree_grow(slot + 1);
  }
  SmallPage& page = pages_[slot];
  page.in_use = true;
  page.blocks = 0;
  page.free_ranges.assign(1, Range{0, granules_per_page_});
  page.largest_run = granules_per_page_;
  tree_update(slot, granules_per_page_);
  --free_pages_;
  ++small_pages_in_use_;
  return slot;
}

void SimAllocator::close_page(std::uint32_t slot) {
  SmallPage& page = pages_[slot];
  page.in_use = false;
  page.free_ranges.clear();
  page.largest_run = 0;
  tree_update(slot, 0);
  closed_slots_.push_back(slot);
  std::push_heap(closed_slots_.begin(), closed_slots_.end(), std::greater<>{});
  ++free_pages_;
  --small_pages_in_use_;
}

void SimAllocator::tree_grow(std::uint32_t slots) {
  const std::uint32_t leaves = std::bit_ceil(std::max<std::uint32_t>(slots, 64));
  std::vector<std::uint32_t> tree(2 * static_cast<std::size_t>(leaves), 0);
  for (std::size_t i = 0; i < leaves_; ++i)
    tree[leaves + i] = tree_[leaves_ + i];
  for (std::size_t node = leaves - 1; node >= 1; --node) {
    tree[node] = std::max(tree[2 * node], tree[2 * node + 1]);
  }
  tree_ = std::move(tree);
  leaves_ = leaves;
}

void SimAllocator::tree_update(std::uint32_t slot, std::uint32_t value) {
  std::size_t node = leaves_ + static_cast<std::size_t>(slot);
  tree_[node] = value;
  for (node /= 2; node >= 1; node /= 2) {
    const std::uint32_t v = std::max(tree_[2 * node], tree_[2 * node + 1]);
    if (tree_[node] == v) break;  // nothing above changes
    tree_[node] = v;
  }
}

std::uint32_t SimAllocator::tree_find_first(std::uint32_t at_least) const {
  if (leaves_ == 0 || tree_[1] < at_least) return UINT32_MAX;
  std::size_t node = 1;
  while (node < leaves_)
    node = tree_[2 * node] >= at_least ? 2 * node : 2 * node + 1;
  return static_cast<std::uint32_t>(node - leaves_);
}

}  // namespace oomlab
