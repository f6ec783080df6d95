// The blocks a scenario holds, by slot: O(1) to add and remove, and the list the harness frees
// on every exit path. A Block's slot is its index here, so no hashing happens per event.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace oomlab {

class LiveBlocks {
 public:
  struct Entry {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    bool live = false;
  };

  LiveBlocks() { entries_.reserve(1U << 16U); }

  std::uint32_t add(void* ptr, std::size_t bytes) {
    std::uint32_t slot = 0;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    entries_[slot] = Entry{ptr, bytes, true};
    return slot;
  }

  // Throws std::logic_error for a block that is not live here (released twice, or never ours).
  Entry remove(std::uint32_t slot, const void* ptr) {
    if (slot >= entries_.size() || !entries_[slot].live || entries_[slot].ptr != ptr) {
      throw std::logic_error("release of a block that is not live (released twice?)");
    }
    Entry entry = entries_[slot];
    entries_[slot].live = false;
    free_slots_.push_back(slot);
    return entry;
  }

  [[nodiscard]] bool empty() const { return entries_.size() == free_slots_.size(); }

  // Calls free(entry) for every live block, newest first, and empties the table.
  template <typename Free>
  void drain(Free&& free) {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->live) {
        it->live = false;
        free(*it);
      }
    }
    entries_.clear();
    free_slots_.clear();
  }

 private:
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace oomlab
