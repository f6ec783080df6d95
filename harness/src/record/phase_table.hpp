// Phase names by index: events carry the index, the CSV writer (another thread) the name.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

namespace oomlab {

class PhaseTable {
 public:
  PhaseTable() { names_.emplace_back(); }  // index 0: no phase yet

  // The index of `name`, added if new.
  std::uint32_t intern(std::string_view name) {
    const std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return static_cast<std::uint32_t>(i);
    }
    names_.emplace_back(name);
    return static_cast<std::uint32_t>(names_.size() - 1);
  }

  [[nodiscard]] std::string name(std::uint32_t index) const {
    const std::lock_guard lock(mutex_);
    return index < names_.size() ? names_[index] : std::string();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::string> names_;
};

}  // namespace oomlab
