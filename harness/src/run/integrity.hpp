// Data integrity of the blocks a run holds: a block is filled with a pattern (derived from the
// seed and the address) when it is allocated, and at the OOM and at the end of the run every
// filled block still live is verified on the device. A block that no longer holds its pattern is
// corruption: the allocator handed out memory that something else wrote. Real devices only: the
// sim has no memory to check.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/kernels.hpp"
#include "run/live_blocks.hpp"
#include "run/verify_mode.hpp"

namespace oomlab {

class Integrity {
 public:
  static constexpr std::uint64_t kSampleEvery = 64;
  static constexpr std::uint64_t kAlwaysBytes = 64ULL << 20U;  // a fill this large costs ~30 µs

  // `counter` is null on the sim, where nothing is filled or checked.
  Integrity(VerifyMode mode, kernels::MismatchCounter* counter, Stream stream, std::uint64_t seed)
      : mode_(mode), counter_(counter), stream_(stream), seed_(seed) {}

  [[nodiscard]] bool active() const { return mode_ != VerifyMode::off && counter_ != nullptr; }
  [[nodiscard]] VerifyMode mode() const { return mode_; }

  // Fills a new block if this mode selects it; says whether it did.
  bool fill_new(void* ptr, std::size_t bytes);
  // Fills a block the scenario asked to have filled.
  void fill(void* ptr, std::size_t bytes);
  // The mismatched words of one block, counted as a check.
  std::uint64_t verify(const void* ptr, std::size_t bytes);
  // Verifies every filled block still live.
  void verify_live(const LiveBlocks& blocks);

  [[nodiscard]] std::uint64_t checked() const { return checked_; }
  [[nodiscard]] std::uint64_t corrupted() const { return corrupted_; }
  [[nodiscard]] std::uint64_t corrupted_words() const { return corrupted_words_; }

 private:
  VerifyMode mode_;
  kernels::MismatchCounter* counter_;
  Stream stream_;
  std::uint64_t seed_;
  std::uint64_t allocations_seen_ = 0;
  std::uint64_t checked_ = 0;
  std::uint64_t corrupted_ = 0;
  std::uint64_t corrupted_words_ = 0;
};

}  // namespace oomlab
