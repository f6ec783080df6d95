#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace oomlab::trace {

// Address -> the slot of the allocation live there, for the trace's builder. Open addressing
// (linear probing, deletion by shifting back, 0 as the empty key: address 0 is never live):
// millions of inserts and erases without a node allocation each, as std::unordered_map makes.
class LiveAddresses {
 public:
  LiveAddresses() : entries_(std::size_t{1} << kFirstBits) {}

  // Whether an allocation was live at `address` already (its slot is replaced).
  bool put(std::uint64_t address, std::uint32_t slot) {
    if ((count_ + 1) * 2 > entries_.size()) grow();
    std::size_t i = home(address);
    while (entries_[i].address != 0 && entries_[i].address != address)
      i = next(i);
    const bool was_live = entries_[i].address != 0;
    if (!was_live) ++count_;
    entries_[i] = {.address = address, .slot = slot};
    return was_live;
  }

  // The slot of the allocation live at `address`, now no longer; none when none is.
  std::optional<std::uint32_t> take(std::uint64_t address) {
    std::size_t i = home(address);
    for (; entries_[i].address != address; i = next(i)) {
      if (entries_[i].address == 0) return std::nullopt;
    }
    const std::uint32_t slot = entries_[i].slot;
    close_gap(i);
    --count_;
    return slot;
  }

 private:
  struct Entry {
    std::uint64_t address = 0;
    std::uint32_t slot = 0;
  };
  static constexpr unsigned kFirstBits = 10;

  [[nodiscard]] std::size_t home(std::uint64_t address) const {
    return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15ULL) >> shift_);  // high bits
  }
  [[nodiscard]] std::size_t next(std::size_t i) const { return (i + 1) & (entries_.size() - 1); }

  // Moves later entries of the run back into the gap where their probe passes it.
  void close_gap(std::size_t gap) {
    const std::size_t mask = entries_.size() - 1;
    for (std::size_t i = next(gap); entries_[i].address != 0; i = next(i)) {
      if (((i - home(entries_[i].address)) & mask) >= ((i - gap) & mask)) {
        entries_[gap] = entries_[i];
        gap = i;
      }
    }
    entries_[gap] = {};
  }

  void grow() {
    std::vector<Entry> old(entries_.size() * 2);
    old.swap(entries_);
    --shift_;
    count_ = 0;
    for (const Entry& e : old) {
      if (e.address != 0) static_cast<void>(put(e.address, e.slot));
    }
  }

  std::vector<Entry> entries_;
  unsigned shift_ = 64 - kFirstBits;
  std::size_t count_ = 0;
};

}  // namespace oomlab::trace
