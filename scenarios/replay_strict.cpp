#include "replay_strict.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {
namespace {

// "FILE:LINE: entry N" in a text format, "FILE: entry N" in a binary one (its events' line is 0).
std::string entry_place(const trace::Trace& trace, std::uint64_t index, std::uint64_t line) {
  if (line == 0) return fmt::format("{}: entry {}", trace.source.string(), format_count(index));
  return fmt::format("{}:{}: entry {}", trace.source.string(), line, format_count(index));
}

// "entry N" with its line where the format has lines, for a note.
std::string entry_words(std::uint64_t index, std::uint64_t line) {
  if (line == 0) return fmt::format("entry {}", format_count(index));
  return fmt::format("entry {}, line {}", format_count(index), line);
}

// "1 free", "2 frees".
std::string counted(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", format_count(n), n == 1 ? one : many);
}

}  // namespace

void check_strict(const trace::Trace& trace) {
  const bool free_first =
      trace.unknown_frees > 0 &&
      (trace.live_reallocations == 0 || trace.first_unknown_free < trace.first_live_reallocation);
  if (free_first) {
    throw Error(
        ErrorKind::input,
        fmt::format("{} frees an address that was never allocated, or was freed already ({} "
                    "such; --strict)",
                    entry_place(trace, trace.first_unknown_free, trace.first_unknown_free_line),
                    counted(trace.unknown_frees, "free", "frees")));
  }
  if (trace.live_reallocations > 0) {
    throw Error(ErrorKind::input,
                fmt::format("{} allocates at an address that is still allocated, not freed since "
                            "its last allocation ({} such; --strict)",
                            entry_place(trace, trace.first_live_reallocation,
                                        trace.first_live_reallocation_line),
                            counted(trace.live_reallocations, "allocation", "allocations")));
  }
}

std::vector<std::string> unpaired_entry_notes(const trace::Trace& trace) {
  std::vector<std::string> notes;
  if (trace.unknown_frees > 0) {
    notes.push_back(
        fmt::format("{} of an address the trace never allocated, or freed already: skipped (the "
                    "first at {})",
                    counted(trace.unknown_frees, "free", "frees"),
                    entry_words(trace.first_unknown_free, trace.first_unknown_free_line)));
  }
  if (trace.live_reallocations > 0) {
    notes.push_back(fmt::format(
        "{} at an address still allocated: made as new blocks, the earlier block kept live (the "
        "first at {})",
        counted(trace.live_reallocations, "allocation", "allocations"),
        entry_words(trace.first_live_reallocation, trace.first_live_reallocation_line)));
  }
  return notes;
}

}  // namespace oomlab
