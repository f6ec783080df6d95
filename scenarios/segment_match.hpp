// Replaying a PyTorch snapshot at the tensor level through a model of its allocator: does the
// model ask the device for what the real allocator asked (segment_alloc / segment_free /
// segment_map / segment_unmap), at the same points of the history? Calls are compared event by
// event: those the snapshot recorded before an event against those the model made while
// replaying it (and the program's empty_cache() before it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oomlab/caching_allocator.hpp"
#include "oomlab/scenario.hpp"
#include "oomlab/trace.hpp"

namespace oomlab {

// Device calls in a few words whatever their number, by kind and then by size: "segment_alloc
// 256 MiB, 37 segment_free calls (74.0 MiB: 31 of 2.00 MiB, 4 of 1.00 MiB, 2 of 4.00 MiB)"; at
// most kMostSizesNamed sizes of a kind are named, the rest counted.
inline constexpr std::size_t kMostSizesNamed = 3;
[[nodiscard]] std::string segment_calls_text(std::vector<DeviceCall> calls);

class SegmentMatch {
 public:
  // `calls` is the allocator's journal (null: it keeps none, and nothing is compared).
  SegmentMatch(const trace::Trace& trace, const std::vector<DeviceCall>* calls);

  [[nodiscard]] bool active() const { return calls_ != nullptr; }
  void before() {
    if (active()) mark_ = calls_->size();
  }
  // Compares what the snapshot recorded before event `position` (events.size(): after the last)
  // with what the model did since before().
  void after(std::uint32_t position);
  // Metrics and the note; `through` is the last position compared.
  void report(RunContext& ctx) const;

 private:
  struct Call {
    DeviceCallKind kind;
    std::uint64_t bytes;
    friend bool operator<(const Call& a, const Call& b) {
      return a.kind != b.kind ? a.kind < b.kind : a.bytes < b.bytes;
    }
    friend bool operator==(const Call& a, const Call& b) = default;
  };
  [[nodiscard]] static std::string describe(const std::vector<Call>& calls);

  const trace::Trace& trace_;
  const std::vector<DeviceCall>* calls_;
  std::size_t mark_ = 0;
  std::size_t cursor_ = 0;  // the next of the PyTorch part's segment_entries to compare
  std::uint64_t recorded_ = 0;
  std::uint64_t matched_ = 0;
  std::uint64_t extra_ = 0;
  std::string first_mismatch_;
  std::uint64_t first_mismatch_index_ = 0;
};

}  // namespace oomlab
