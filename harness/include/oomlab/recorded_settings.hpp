// The settings of the allocator a replayed program ran with, as its trace recorded them (a
// PyTorch snapshot's allocator_settings). A model of that allocator takes them as its defaults;
// what the user asks for wins. Fields the trace does not carry stay empty.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace oomlab {

struct RecordedAllocatorSettings {
  std::optional<bool> expandable_segments;
  std::optional<std::uint64_t> max_split_size;  // UINT64_MAX: unlimited
  std::optional<std::uint64_t> max_non_split_rounding;
  std::optional<std::uint64_t> large_segment_size;
  std::optional<double> garbage_collection_threshold;
  std::optional<std::array<std::uint32_t, 16>> roundup_power2_divisions;  // per interval
  std::optional<std::string> backend;                                     // "native" or "async"
  // The program's own OOM left the device with room for the request: it was capped by
  // set_per_process_memory_fraction, not by the device.
  std::optional<bool> fraction_capped;
};

}  // namespace oomlab
