// The blocks a scenario holds, by slot: O(1) to add and remove, and the list the harness frees
// on every exit path. A Block carries its slot and the slot's generation, so no hashing happens
// per event and a stale copy of a released block can never free the block now in its slot.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

namespace oomlab {

class LiveBlocks {
 public:
  struct Entry {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    std::uint32_t generation = 0;
    bool live = false;
    bool filled = false;     // holds the integrity pattern (so it can be verified)
    void* stream = nullptr;  // the stream it was allocated on, to free it on at cleanup
  };
  struct Handle {
    std::uint32_t slot;
    std::uint32_t generation;
  };

  LiveBlocks() { entries_.reserve(1U << 16U); }

  Handle add(void* ptr, std::size_t bytes, void* stream = nullptr) {
    std::uint32_t slot = 0;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(entries_.size());
      entries_.emplace_back();
    }
    Entry& e = entries_[slot];
    e = Entry{ptr, bytes, e.generation + 1, true, false, stream};
    return {slot, e.generation};
  }

  // The live entry of `handle`, or nullptr (stale or unknown handle).
  [[nodiscard]] Entry* find(Handle handle) {
    if (handle.slot >= entries_.size()) return nullptr;
    Entry& e = entries_[handle.slot];
    return e.live && e.generation == handle.generation ? &e : nullptr;
  }

  template <typename Visit>
  void for_each_live(Visit&& visit) const {
    for (const Entry& e : entries_) {
      if (e.live) visit(e);
    }
  }

  // Throws std::logic_error for a block that is not live here (released twice, or never ours).
  Entry remove(Handle handle, const void* ptr) {
    if (handle.slot >= entries_.size() || !entries_[handle.slot].live ||
        entries_[handle.slot].generation != handle.generation || entries_[handle.slot].ptr != ptr) {
      throw std::logic_error("release of a block that is not live (released twice?)");
    }
    entries_[handle.slot].live = false;
    free_slots_.push_back(handle.slot);
    return entries_[handle.slot];
  }

  [[nodiscard]] bool empty() const { return entries_.size() == free_slots_.size(); }

  // Calls free(entry) for every live block and empties the table. A free that throws does not
  // stop the others; the first exception is rethrown once all were tried.
  template <typename Free>
  void drain(Free&& free) {
    std::exception_ptr first_error;
    for (Entry& entry : entries_) {
      if (!entry.live) continue;
      entry.live = false;
      try {
        free(entry);
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    free_slots_.clear();
    for (std::uint32_t slot = 0; slot < entries_.size(); ++slot)
      free_slots_.push_back(slot);
    if (first_error) std::rethrow_exception(first_error);
  }

 private:
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace oomlab
