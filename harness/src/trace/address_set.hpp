// A set of device addresses, open-addressed in one array: the snapshot's history inserts and
// erases one per allocation, and a node-based std::unordered_set paid a malloc and a free for
// each. Linear probing; an erase shifts the entries after it back, so no tombstones build up.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace oomlab::trace {

class AddressSet {
 public:
  // Returns false if it was there already.
  bool insert(std::uint64_t address) {
    if (address == kEmpty) return !std::exchange(has_zero_, true);
    if ((count_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = home(address);
    for (; slots_[i] != kEmpty; i = next(i)) {
      if (slots_[i] == address) return false;
    }
    slots_[i] = address;
    ++count_;
    return true;
  }
  // Returns whether it was there.
  bool erase(std::uint64_t address) {
    if (address == kEmpty) return std::exchange(has_zero_, false);
    if (slots_.empty()) return false;
    std::size_t i = home(address);
    for (; slots_[i] != address; i = next(i)) {
      if (slots_[i] == kEmpty) return false;
    }
    for (std::size_t j = next(i); slots_[j] != kEmpty; j = next(j)) {
      const std::size_t h = home(slots_[j]);
      if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {  // j may move to i
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = kEmpty;
    --count_;
    return true;
  }
  [[nodiscard]] bool contains(std::uint64_t address) const {
    if (address == kEmpty) return has_zero_;
    if (slots_.empty()) return false;
    for (std::size_t i = home(address); slots_[i] != kEmpty; i = next(i)) {
      if (slots_[i] == address) return true;
    }
    return false;
  }

 private:
  // Address 0 is never a block's; an empty slot holds it (an inserted 0 is kept aside).
  static constexpr std::uint64_t kEmpty = 0;

  [[nodiscard]] std::size_t home(std::uint64_t address) const {
    return static_cast<std::size_t>((address * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  [[nodiscard]] std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, kEmpty);
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots_.size()));
    count_ = 0;
    for (const std::uint64_t a : old) {
      if (a != kEmpty) insert(a);
    }
  }

  std::vector<std::uint64_t> slots_;
  std::size_t count_ = 0;  // in slots_
  unsigned shift_ = 64;
  bool has_zero_ = false;
};

}  // namespace oomlab::trace
