// An allocation trace as a scenario (or a plugin) reads it, whatever file it came from (oomlab's
// events.csv, RMM's log, a PyTorch snapshot): the allocations, frees and failed requests a
// program made, in order, each with the place in its file it came from. Frees are linked to the
// allocation they free when the trace is loaded, so that a replay never looks an address up.
// What only a snapshot of a caching allocator records (the segments, the device calls, the
// program's stacks, the allocator's settings: a PyTorch snapshot's) is its own part,
// RecordedState. The engine's importers are harness/src/trace/, a framework's in its folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oomlab/recorded_settings.hpp"
#include "oomlab/trace_events.hpp"

namespace oomlab::trace {

// The engine's formats have names here; a registered one (oomlab/trace_format.hpp) gets a number
// from kFirstRegisteredFormat on.
enum class Format : std::uint8_t { automatic, oomlab, rmm, registered = 254 };
// PyTorch: what the program asked for, or what its allocator got from the driver.
enum class Level : std::uint8_t { tensor, segment };

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

// What a snapshot of a caching allocator records beyond the requests: the allocator's state and
// calls, the program's frames, its settings (a PyTorch snapshot has all of them).
struct RecordedState {
  // Tensor level: the segments there before the first entry, holding the first initial_events
  // events (at the segment level those events are the segments themselves, and this is empty).
  std::vector<InitialSegment> initial_segments;
  std::vector<SegmentEntry> segment_entries;  // tensor level: the real allocator's device calls
  bool release_at_end = false;  // the program emptied its cache after its last request
  std::vector<std::vector<std::string>> stacks;  // Python frames, innermost first
  std::optional<RecordedSettings> allocator_settings;
  // Entries of an action oomlab does not know (a newer PyTorch's), skipped: each action, how many.
  std::vector<std::pair<std::string, std::uint64_t>> unknown_actions;

  // What the snapshot says of single events, by the event's position in Trace::events:
  // the frames of each (an index into `stacks`; Event::kNone, or past the end, for none),
  std::vector<std::uint32_t> event_stacks;
  // the events before which the program emptied its cache (torch.cuda.empty_cache()), in order,
  std::vector<std::uint32_t> emptied_cache_before;
  // and the device's free memory at each failed request (Op::failed), in order.
  struct FailedRequest {
    std::uint32_t event = 0;
    std::uint64_t device_free_bytes = 0;
  };
  std::vector<FailedRequest> failed_requests;

  // The frames of event `event` (empty when none were recorded).
  [[nodiscard]] const std::vector<std::string>& frames_of(std::size_t event) const;
  // The device's free memory when failed request `event` failed, when the snapshot has it.
  [[nodiscard]] std::optional<std::uint64_t> device_free_at(std::size_t event) const;
};

// How the program whose history a trace holds ended, as the record of the run that wrote it says
// (the summary.json of an `oomlab exec` run folder that lists the snapshot, read when the trace
// is loaded from that folder). A program that ran out of memory where its allocator never refused
// (in cuBLAS, cuDNN, NCCL, another process) left a history that stops short of what it needed.
struct RecordedEnd {
  std::filesystem::path record;  // the run record read
  std::string outcome;           // "completed", "oom", "error", "timeout", "interrupted"
  std::string reporter;          // who reported its OOM ("cuBLAS", "PyTorch"), "" for none
  // The reporter is a CUDA library whose own allocation failed: the program died beside the
  // allocator, and a refusal at the trace's end was one it survived (caught), not its death.
  bool library = false;
  std::string line;  // its OOM line, or its error
  std::uint64_t budget_bytes = 0;
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
  std::uint64_t first_unknown_free_line = 0;  // its Event::line (0: a binary format's)
  // Allocations at an address still allocated (no free between): the earlier block stays live.
  std::uint64_t live_reallocations = 0;
  std::uint64_t first_live_reallocation = 0;  // its Event::index, when there is one
  std::uint64_t first_live_reallocation_line = 0;
  std::uint64_t ignored = 0;  // source entries that are neither (free_requested, marks, ...)
  // The source's entries (rows, device-trace entries), replayed or not: what the file's own
  // numbering counts to. What was live before a history began is not among them.
  std::uint64_t source_entries = 0;
  // The first events are what was live before the history began (Event::preexisting).
  std::uint32_t initial_events = 0;
  Demand demand;
  // What a snapshot of a caching allocator records beyond the requests (a framework's snapshot,
  // such as PyTorch's); none for formats that record only requests.
  std::optional<RecordedState> recorded;
  // The run record beside the file, when it is a snapshot an `oomlab exec` run wrote.
  std::optional<RecordedEnd> recorded_end;
  // What reading it chose that the user did not name, in words a notice says ("the history is of
  // device 1 (device_traces[1]); device_traces[0] is empty").
  std::vector<std::string> notices;
};

// The allocator settings a snapshot recorded, as its model's options (null: none recorded).
[[nodiscard]] inline const RecordedSettings* allocator_settings(const Trace& trace) {
  return trace.recorded && trace.recorded->allocator_settings ? &*trace.recorded->allocator_settings
                                                              : nullptr;
}

struct LoadOptions {
  Format format = Format::automatic;
  Level level = Level::tensor;
  // A format with several devices' traces (PyTorch): whose to read; none: the one device whose
  // trace holds a history (several: refused, naming them with `device_option`, how the command
  // names a device before its number).
  std::optional<std::uint32_t> device;
  std::string device_option = "--device ";
  // Called every few thousand rows (entries, opcodes) while the trace is read: it throws
  // (Interrupted, TimedOut) to stop a long load. None: the load runs to its end.
  std::function<void()> check_stop;
  // The program that wrote it completed: no refusal in it was the program's death (a format that
  // finds where a program died from the log alone, XLA's, reads each refusal as survived).
  bool completed = false;
  // The request the program's own OOM message says it died of, where the death is not the log's
  // last refusal (XLA's compile failing after its autotuner was refused, then went on): the last
  // refusal of that size (within a hundredth) is the death. None: the format's own rule.
  std::optional<std::uint64_t> died_asking;
};

// Reads `path` in its format (detected by content when `automatic`). Throws Error(input) with
// "file:line: what" (or "file: byte N: what") for anything it cannot read.
[[nodiscard]] Trace load(const std::filesystem::path& path, const LoadOptions& options);
// Whether the trace stops at the program's own failed request, with nothing asked for after it
// (a snapshot dumped at the OOM): what the program would have done next is not in it.
[[nodiscard]] bool ends_at_failure(const Trace& trace);
// Whether its run record says the program ended otherwise than it completed, where the trace
// holds no failure of its own that ended it (an OOM beside the allocator, a crash, a timeout), or
// where it died in a CUDA library whatever the trace's last refusal.
[[nodiscard]] bool ended_beside_trace(const Trace& trace);
// Either: the trace stops short of what the program needed, and every frontier and every 'fits'
// read from it is a lower bound for the whole job.
[[nodiscard]] bool stops_short(const Trace& trace);
// Why, in words ("the trace stops at the program's OOM"); "" when it does not.
[[nodiscard]] std::string stops_short_words(const Trace& trace);

// Who held the device's memory at a moment of a trace: the live blocks grouped by the frame that
// allocated them (see memory_holders).
struct MemoryHolder {
  std::string where;  // "forward (diffusers/models/upsampling.py)", or why no frame is known
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
  bool operator==(const MemoryHolder&) const = default;
};

// The blocks live just before event `position` (Trace::events.size(): at the end), grouped by
// the frame that allocated them: the innermost frame outside the registered frameworks' own
// packages (Framework::packages: the user's code or the library that called the framework, a
// diffusers module, a transformers layer), else the innermost frame; the recording's own frames
// (recording_frame) are never one. Blocks allocated without frames (none recorded, or on
// autograd's backward thread) make one group. The `most` largest groups, largest first. With
// `roots` (the program's own folders), a framework's package outside them and outside the
// installed packages (PYTHONPATH, a source build) is known as the framework's too.
[[nodiscard]] std::vector<MemoryHolder> memory_holders(const Trace& trace, std::uint32_t position,
                                                       std::size_t most,
                                                       std::span<const std::string> roots = {});

// Whether a frame ("name (file:line)", as traces hold them) is in the user's own files: not in
// an installed package (site-packages, dist-packages), Python's own library, a frozen module or
// a C++ frame.
// With `roots` (the program's own folders: its script's, its working folder), a frame is the
// user's when its file lies under one of them and in no installed package; a library installed
// elsewhere (a PYTHONPATH folder) is then told apart from the user's code.
[[nodiscard]] bool user_frame(std::string_view frame, std::span<const std::string> roots = {});
// The innermost of `frames` (innermost first) in the user's own files: under `roots` when one is,
// else (none there, or no roots) the innermost that user_frame() takes without roots; null when
// none is.
[[nodiscard]] const std::string* innermost_user_frame(std::span<const std::string> frames,
                                                      std::span<const std::string> roots);
// The program's own folders as its recorded stacks show them, for a trace read without the
// program (a snapshot replayed alone): the folder of its entry script, the file whose top level
// (`<module>`) is the outermost frame outside installed packages, Python's library and C++ in
// most stacks. None when no stack shows one (no stacks; a program started from an installed
// command, `python -c`, or a test runner). A library on PYTHONPATH lies outside it; so does the
// user's code in a folder beside the script's (a src/ layout), which then reads as a library's.
[[nodiscard]] std::vector<std::string> entry_folders(const Trace& trace);
// Whether a frame is the recording's own machinery, not the program's: a registered framework's
// recording_frames (PyTorch's C++ unwinder and allocator in a stacks='all' snapshot).
[[nodiscard]] bool recording_frame(std::string_view frame);
// `frames` without the recording's own (recording_frame), in order.
[[nodiscard]] std::vector<std::string> program_frames(std::span<const std::string> frames);

// Whether the failed request at `position` (Op::failed) was one the program survived: it asked
// for more after it (cuDNN falling back to an algorithm that needs a smaller workspace, a batch
// finder retrying with less). A replay asks for it again where it was asked and, refused, goes
// on as the program did; only the failures after the last allocation ended the program.
[[nodiscard]] bool survived_failure(const Trace& trace, std::uint32_t position);
// The sizes of the failed requests the program survived, in trace order.
[[nodiscard]] std::vector<std::uint64_t> survived_failure_sizes(const Trace& trace);
// The first failed request the program did not survive (its OOM), or Event::kNone.
[[nodiscard]] std::uint32_t fatal_failure_at(const Trace& trace);

// What an answer read from the trace cannot know, one line each in words a user acts on: a
// history that began while blocks were already live (recorded late, or its first entries cut by
// PyTorch's max_entries), and a trace that stops at the program's own OOM. None for a trace that
// has neither.
[[nodiscard]] std::vector<std::string> trace_caveats(const Trace& trace);

[[nodiscard]] std::string_view to_string(Format format);

}  // namespace oomlab::trace
