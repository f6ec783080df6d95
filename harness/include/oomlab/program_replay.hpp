// What a scenario that replays a recorded program (a trace) needs of the run beyond RunContext:
// the program's first blocks placed in the segments they sat in, its empty_cache() calls, its own
// failed requests made again, and its place in the trace named in the OOM record. A scenario asks
// for it (RunContext::extension<ProgramReplay>()); the harness's context has it, and a context
// that has not returns null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/caching_allocator.hpp"
#include "oomlab/scenario.hpp"
#include "oomlab/trace.hpp"

namespace oomlab {

// A block a replayed program held, with where it was made: its Python stack, innermost first.
struct ProgramBlock {
  std::uint64_t bytes = 0;
  std::uint64_t trace_index = 0;  // the trace entry that allocated it
  std::vector<std::string> frames;
};

// Where a replayed program's failing request stands in its trace, and what it held then: a
// replay's OOM record names the trace entry, not the run's own event.
struct ProgramRequest {
  std::uint64_t trace_entry = 0;             // 0-based, as the trace file counts its entries
  std::optional<std::uint64_t> trace_line;   // text formats: its line in the file
  std::vector<std::string> frames;           // its Python stack, innermost first, when recorded
  std::string user_frame;                    // the innermost of `frames` in the user's own files
  std::vector<ProgramBlock> largest_live;    // the largest blocks live then, when recorded
  std::vector<trace::MemoryHolder> holders;  // what filled memory then, by allocating frame
};

class ProgramReplay {
 public:
  static constexpr std::string_view kExtension = "program-replay";

  ProgramReplay() = default;
  virtual ~ProgramReplay() = default;
  ProgramReplay(const ProgramReplay&) = delete;
  ProgramReplay& operator=(const ProgramReplay&) = delete;
  ProgramReplay(ProgramReplay&&) = delete;
  ProgramReplay& operator=(ProgramReplay&&) = delete;

  // Allocates what a replayed program held before its trace began, in the segments a caching
  // allocator held it in (PlacedSegment): one block per placed block, in order. A failure is
  // the run's OOM, as for RunContext::allocate().
  virtual std::vector<Block> allocate_placed(std::span<const PlacedSegment> segments,
                                             std::string_view label) = 0;
  // Gives the allocator's cached memory back to the device, as a program does with
  // torch.cuda.empty_cache() (a pool is trimmed; allocators that cache nothing do nothing).
  virtual void trim() = 0;
  // A capability of the run's allocator (Allocator::capability), such as the CachingAllocator
  // a replay compares its device calls with; null when the allocator has none.
  template <typename T>
  [[nodiscard]] T* allocator_capability() {
    return static_cast<T*>(find_allocator_capability(T::kCapability));
  }
  [[nodiscard]] virtual void* find_allocator_capability(std::string_view id) = 0;
  // Where the request that is the run's OOM stands in the trace, with its frames and the largest
  // blocks live then, added to the OOM record. Nothing without an OOM.
  virtual void describe_oom(ProgramRequest request) = 0;
  // The program's own failed request, made again where it failed: a failure is recorded as an
  // oom event and counted. The first to fail, when there is no OOM yet, is the run's OOM only
  // until an allocate() fails: that one (a request the program got) is analysed instead.
  virtual Block remake_failed_request(Stream stream, std::size_t bytes, std::string_view label) = 0;
  // A failed request the program survived (it asked for less and went on: cuDNN's workspaces),
  // asked for again where it was asked: a refusal is an event of the run, never its OOM.
  virtual Block remake_survived_request(Stream stream, std::size_t bytes,
                                        std::string_view label) = 0;
};

}  // namespace oomlab
