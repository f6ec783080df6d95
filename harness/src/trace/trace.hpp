// An allocation trace, whatever file it came from (oomlab's events.csv, RMM's log, a PyTorch
// snapshot): the allocations, frees and failed requests a program made, in order, each with the
// place in its file it came from. Frees are linked to the allocation they free when the trace is
// loaded, so that a replay never looks an address up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/recorded_settings.hpp"
#include "trace/events.hpp"
#include "trace/live_addresses.hpp"

namespace oomlab::trace {

enum class Format : std::uint8_t { automatic, oomlab, rmm, pytorch };
enum class Level : std::uint8_t {
  tensor,
  segment
};  // PyTorch: what the program asked, or the driver got

// PyTorch snapshots, replayed at the tensor level: what the real caching allocator did with the
// device meanwhile, to compare with what a model of it does.
enum class SegmentAction : std::uint8_t { alloc, free, map, unmap };
struct SegmentEntry {
  std::uint64_t index = 0;  // in the device trace
  std::uint64_t bytes = 0;
  std::uint64_t address = 0;
  std::uint32_t before = 0;  // the position in Trace::events of the event it came before
  SegmentAction action = SegmentAction::alloc;
};

// A segment that existed when the trace began, with the blocks then live in it (in address
// order, each with its pre-existing event in Trace::events).
struct InitialSegment {
  struct Live {
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;        // what was asked for
    std::uint64_t block_bytes = 0;  // the allocator's block, when the snapshot says (else 0)
    std::uint32_t event = 0;
  };
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t stream = 0;
  bool small_pool = false;
  bool expandable = false;
  std::vector<Live> blocks;
};

// What the program itself asked for over the whole trace, worked out as it is read: positions
// are in Trace::events (Event::kNone: none).
struct Demand {
  std::uint64_t peak_live_bytes = 0;  // its blocks live at once, at their most
  std::uint32_t peak_live_at = Event::kNone;
  std::uint64_t peak_with_failed_bytes = 0;  // the same with its failed requests counted
  std::uint32_t peak_with_failed_at = Event::kNone;
  std::uint64_t failures = 0;  // its own failed requests
  std::uint32_t first_failure_at = Event::kNone;
  std::uint32_t last_failure_at = Event::kNone;
  std::uint32_t last_alloc_at = Event::kNone;
};

struct Trace {
  Format format = Format::oomlab;
  std::filesystem::path source;
  EventStore events;
  std::vector<std::uint64_t> streams;  // the original stream handles, by number
  std::uint32_t threads = 0;
  std::uint32_t slots = 0;               // the most allocations live at once
  std::uint64_t unknown_frees = 0;       // frees of an address that was not allocated (or twice)
  std::uint64_t first_unknown_free = 0;  // its Event::index, when there is one
  std::uint64_t ignored = 0;  // source entries that are neither (free_requested, marks, ...)
  // The source's entries (rows, device-trace entries), replayed or not: what the file's own
  // numbering counts to. What was live before a history began is not among them.
  std::uint64_t source_entries = 0;
  Demand demand;

  // PyTorch snapshots.
  std::vector<InitialSegment> initial_segments;  // what was there before the first entry
  std::uint32_t initial_events = 0;           // the first events are its live blocks (preexisting)
  std::vector<SegmentEntry> segment_entries;  // tensor level: the real allocator's device calls
  bool release_at_end = false;  // the program emptied its cache after its last request
  std::vector<std::vector<std::string>> stacks;  // Python frames, innermost first
  std::optional<RecordedAllocatorSettings> allocator_settings;
};

struct LoadOptions {
  Format format = Format::automatic;
  Level level = Level::tensor;
  std::uint32_t device = 0;  // PyTorch: which device's trace
  // Called every few thousand rows (entries, opcodes) while the trace is read: it throws
  // (Interrupted, TimedOut) to stop a long load. None: the load runs to its end.
  std::function<void()> check_stop;
};

// Reads `path` in its format (detected by content when `automatic`). Throws Error(input) with
// "file:line: what" (or "file: byte N: what") for anything it cannot read.
[[nodiscard]] Trace load(const std::filesystem::path& path, const LoadOptions& options);
// The same, read once per process: the last trace loaded is kept, and handed out again while
// the file (size and modification time) and the options are the same. A frontier's trials, or a
// what-if's settings, parse their trace once.
[[nodiscard]] std::shared_ptr<const Trace> load_shared(const std::filesystem::path& path,
                                                       const LoadOptions& options);

// PyTorch, tensor level: what the program had when its first OOM found the device full (what
// its allocator had reserved then, plus the device's free memory); none when the trace has no
// OOM, or its OOM left the device room for the request (a set_per_process_memory_fraction cap,
// which the snapshot does not record).
[[nodiscard]] std::optional<std::uint64_t> recorded_device_budget(const Trace& trace);

// PyTorch, tensor level: what its allocator had reserved from the device just before the event
// at `position` (its segments then: those there when the history began, and the segment calls
// since), and the most it reserved over the whole history (torch.cuda.max_memory_reserved() of
// the recorded span). Segment-level traces: their own segments live.
[[nodiscard]] std::uint64_t recorded_reserved_before(const Trace& trace, std::uint32_t position);
[[nodiscard]] std::uint64_t recorded_peak_reserved(const Trace& trace);

// Whether the trace stops at the program's own failed request, with nothing asked for after it
// (a snapshot dumped at the OOM): what the program would have done next is not in it.
[[nodiscard]] bool ends_at_failure(const Trace& trace);

// Content-based: a pickle starts with PROTO, JSON with '{', and the CSVs with their headers
// (after a UTF-8 byte-order mark and blank lines, if any).
[[nodiscard]] Format detect_format(std::string_view head);
[[nodiscard]] std::string_view to_string(Format format);

// What every importer feeds its events to: numbers streams and threads in order of first
// appearance, makes times relative to the first event, and links every free to the allocation
// it frees as it comes (a free of an address that is not allocated is counted, and kept
// unlinked).
// A zero-byte allocation (RMM logs it with a (nil) pointer) holds nothing: it gets no slot, is
// never a live block, and its free, if any, frees nothing.
class TraceBuilder {
 public:
  TraceBuilder(Format format, std::filesystem::path source);

  void add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
           std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index, std::uint64_t line);
  void ignore() { ++trace_.ignored; }
  // The number add() gives a stream (for entries that are not events).
  std::uint32_t stream_number(std::uint64_t stream) { return number(trace_.streams, stream); }
  [[nodiscard]] Trace& trace() { return trace_; }
  [[nodiscard]] Trace finish();

 private:
  static std::uint32_t number(std::vector<std::uint64_t>& seen, std::uint64_t handle);

  std::uint32_t take_slot();
  void count_demand(const Event& e, std::uint32_t position);

  Trace trace_;
  std::vector<std::uint64_t> threads_;
  std::uint64_t first_t_ns_ = 0;
  LiveAddresses live_;                     // address -> the slot of the allocation live there
  std::vector<std::uint32_t> free_slots;   // slots freed, for the next allocations
  std::vector<std::uint64_t> slot_bytes_;  // the block in each slot, for Trace::demand
  std::uint64_t live_bytes_ = 0;
};

}  // namespace oomlab::trace
