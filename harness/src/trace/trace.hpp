// The state behind the importers' TraceBuilder (oomlab/trace_builder.hpp; oomlab/trace.hpp is the
// Trace itself, and how it is loaded), and what the harness reads from a PyTorch snapshot's trace
// beyond a replay: the budget its OOM implies, and what its allocator had reserved.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/trace.hpp"
#include "oomlab/trace_builder.hpp"
#include "oomlab/trace_format.hpp"
#include "trace/live_addresses.hpp"

namespace oomlab::trace {

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

// Content-based: a pickle starts with PROTO, JSON with '{', and the CSVs with their headers
// (after a UTF-8 byte-order mark and blank lines, if any).
[[nodiscard]] Format detect_format(std::string_view head);
// The format of the file at `path` by its content, by name ("pytorch", "xla"); "" where it cannot
// be read or is no trace oomlab knows. Never throws.
[[nodiscard]] std::string file_format(const std::filesystem::path& path);

// A file that starts with gzip's magic number (1f 8b) is refused, Error(input) naming it and how
// to decompress it: no importer reads a compressed file, and each would say only "not a pickle".
void refuse_compressed(const std::filesystem::path& path, std::string_view head);

// The builder's state: what TraceBuilder (oomlab/trace_builder.hpp) keeps behind its pointer.
struct TraceBuilder::State {
  State(Format format, std::filesystem::path source);

  void add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
           std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index, std::uint64_t line);
  static std::uint32_t number(std::vector<std::uint64_t>& seen, std::uint64_t handle);
  std::uint32_t take_slot();
  void count_demand(const Event& e, std::uint32_t position);
  Trace finish();

  Trace trace_;
  std::vector<std::uint64_t> threads_;
  std::uint64_t first_t_ns_ = 0;
  LiveAddresses live_;                     // address -> the slot of the allocation live there
  std::vector<std::uint32_t> free_slots_;  // slots freed, for the next allocations
  std::vector<std::uint64_t> slot_bytes_;  // the block in each slot, for Trace::demand
  std::uint64_t live_bytes_ = 0;
};

}  // namespace oomlab::trace
