// A PyTorch memory snapshot as read, before it becomes a trace: every entry of one device's
// history, the segments as they were when the snapshot was taken, the Python stacks and the
// allocator's settings. pytorch_trace.cpp makes a Trace of it at either level.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/recorded_settings.hpp"
#include "trace/large_array.hpp"
#include "trace/trace.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

struct SnapshotEntry {
  enum class Kind : std::uint8_t {
    alloc,           // a tensor's block handed out (size: what was asked for)
    free_completed,  // it went back to the cache
    segment_alloc,
    segment_free,
    segment_map,  // expandable segments
    segment_unmap,
    oom,  // a request that raised OutOfMemoryError (size: rounded; addr: the device's free)
  };
  Kind kind = Kind::alloc;
  std::uint32_t stack = Event::kNone;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t stream = 0;
  std::uint64_t t_ns = 0;
  std::uint64_t index = 0;  // in device_traces[device]
};

// A segment of the snapshot's `segments` (the state when it was taken).
struct SnapshotSegment {
  struct Block {
    std::uint64_t address = 0;
    std::uint64_t bytes = 0;      // the block
    std::uint64_t requested = 0;  // what was asked for
    bool active = false;
  };
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t stream = 0;
  bool small_pool = false;
  bool expandable = false;
  std::vector<Block> blocks;
};

// A snapshot's allocator settings are the options of the backend that models its allocator.
[[nodiscard]] inline RecordedSettings snapshot_settings() {
  return {.backend = "torch"};
}

struct Snapshot {
  LargeArray<SnapshotEntry> entries;  // hundreds of thousands: huge pages
  std::uint64_t other_entries = 0;    // free_requested, snapshot, ...
  // Among them, entries of an action oomlab does not know, by action: skipped, and said.
  std::map<std::string, std::uint64_t> unknown_actions;
  std::vector<SnapshotSegment> segments;  // of this device
  std::vector<std::vector<std::string>> stacks;
  // Its allocator_settings as the torch backend's options (snapshot_settings).
  std::optional<RecordedSettings> settings;
  std::string notice;  // the device read when the user named none, said (pick_device)
};

// The trace at `level`: tensor (alloc / free_completed, with the segment calls kept beside for
// comparison) or segment (segment_alloc / segment_free and their map/unmap forms); oom entries
// at both. What was live when the history began is placed before its first entry.
[[nodiscard]] Trace build_pytorch_trace(const std::filesystem::path& path, const Snapshot& snapshot,
                                        Level level);

}  // namespace oomlab::torch
