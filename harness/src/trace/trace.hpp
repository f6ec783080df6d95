// An allocation trace, whatever file it came from (oomlab's events.csv, RMM's log, a PyTorch
// snapshot): the allocations, frees and failed requests a program made, in order, each with the
// place in its file it came from. Frees are linked to the allocation they free when the trace is
// loaded, so that a replay never looks an address up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace oomlab::trace {

enum class Format : std::uint8_t { automatic, oomlab, rmm, pytorch };
enum class Level : std::uint8_t {
  tensor,
  segment
};  // PyTorch: what the program asked, or the driver got

enum class Op : std::uint8_t {
  alloc,
  free,
  failed,  // a request the program made that failed when it ran (its own OOM)
};

struct Event {
  static constexpr std::uint32_t kNoPartner = UINT32_MAX;

  std::uint64_t bytes = 0;
  std::uint64_t address = 0;  // the address the program got, or freed
  std::uint64_t t_ns = 0;     // since the trace's first event
  std::uint64_t index = 0;    // the event's index in its source (row, or PyTorch trace entry)
  std::uint64_t line = 0;     // the source line, for text formats (0 otherwise)
  std::uint32_t partner = kNoPartner;  // free: the index (in Trace::events) of the alloc it frees
  // alloc, and a free of a known address: a slot reused once its block is freed, so a replay
  // keeps blocks in Trace::slots entries (the most live at once), not one per event.
  std::uint32_t slot = kNoPartner;
  std::uint32_t stream = 0;  // numbered in order of first appearance
  std::uint32_t thread = 0;
  Op op = Op::alloc;
};

struct Trace {
  Format format = Format::oomlab;
  std::filesystem::path source;
  std::vector<Event> events;
  std::vector<std::uint64_t> streams;  // the original stream handles, by number
  std::uint32_t threads = 0;
  std::uint32_t slots = 0;               // the most allocations live at once
  std::uint64_t unknown_frees = 0;       // frees of an address that was not allocated (or twice)
  std::uint64_t first_unknown_free = 0;  // its Event::index, when there is one
  std::uint64_t ignored = 0;  // source entries that are neither (free_requested, marks, ...)
};

struct LoadOptions {
  Format format = Format::automatic;
  Level level = Level::tensor;
  std::uint32_t device = 0;  // PyTorch: which device's trace
};

// Reads `path` in its format (detected by content when `automatic`). Throws Error(input) with
// "file:line: what" (or "file: byte N: what") for anything it cannot read.
[[nodiscard]] Trace load(const std::filesystem::path& path, const LoadOptions& options);

// Content-based: a pickle starts with PROTO, JSON with '{', and the CSVs with their headers.
[[nodiscard]] Format detect_format(std::string_view head);
[[nodiscard]] std::string_view to_string(Format format);

// What every importer feeds its events to: numbers streams and threads in order of first
// appearance, makes times relative to the first event, and at finish() links every free to the
// allocation it frees (a free of an address that is not allocated is counted, and kept unlinked).
class TraceBuilder {
 public:
  TraceBuilder(Format format, std::filesystem::path source);

  void add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
           std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index, std::uint64_t line);
  void ignore() { ++trace_.ignored; }
  [[nodiscard]] Trace finish();

 private:
  std::uint32_t number(std::vector<std::uint64_t>& seen, std::uint64_t handle);

  Trace trace_;
  std::vector<std::uint64_t> threads_;
  std::uint64_t first_t_ns_ = 0;
};

}  // namespace oomlab::trace
