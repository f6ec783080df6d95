// What a trace format's importer (the engine's, a framework's, a plugin's: oomlab/trace_format.hpp)
// builds a Trace with: it numbers streams and threads in order of first appearance, makes times
// relative to the first event, links every free to the allocation it frees as it comes (a free
// of an address that is not allocated is counted, and kept unlinked) and works out the program's
// demand (Trace::demand).
// A zero-byte allocation (RMM logs it with a (nil) pointer) holds nothing: it gets no slot, is
// never a live block, and its free, if any, frees nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "oomlab/trace.hpp"

namespace oomlab::trace {

class TraceBuilder {
 public:
  TraceBuilder(Format format, std::filesystem::path source);
  ~TraceBuilder();
  TraceBuilder(const TraceBuilder&) = delete;
  TraceBuilder& operator=(const TraceBuilder&) = delete;
  TraceBuilder(TraceBuilder&&) noexcept;
  TraceBuilder& operator=(TraceBuilder&&) noexcept;

  // One entry of the source: `index` is its number in the file's own numbering, `line` its line
  // (0 for a binary format). Throws Error(input) past 2^32 - 1 events.
  void add(Op op, std::uint64_t bytes, std::uint64_t address, std::uint64_t stream,
           std::uint64_t thread, std::uint64_t t_ns, std::uint64_t index, std::uint64_t line);
  void ignore();  // an entry that is neither (a mark, a free request): counted in Trace::ignored
  // The number add() gives a stream (for entries that are not events).
  std::uint32_t stream_number(std::uint64_t stream);
  [[nodiscard]] Trace& trace();  // as built so far, for a format's own parts
  [[nodiscard]] Trace finish();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace oomlab::trace
