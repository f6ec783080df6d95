// trace_caveats (oomlab/trace.hpp): what an answer read from a trace cannot know, in words.
#include <fmt/format.h>

#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"

namespace oomlab::trace {

namespace {

// "'alloc_v2' (3 entries), 'mark' (1 entry)": a newer PyTorch's entries, which a replay skips.
std::string unknown_actions(const PytorchTrace& pytorch) {
  std::string actions;
  std::uint64_t total = 0;
  for (const auto& [action, count] : pytorch.unknown_actions) {
    actions += fmt::format("{}'{}' ({} entr{})", actions.empty() ? "" : ", ", action,
                           format_count(count), count == 1 ? "y" : "ies");
    total += count;
  }
  return fmt::format(
      "{} snapshot entr{} of an action oomlab does not know ({}) {} skipped: what {} did to "
      "memory is not replayed, so an answer read from this trace may be off by it",
      format_count(total), total == 1 ? "y" : "ies", actions, total == 1 ? "was" : "were",
      total == 1 ? "it" : "they");
}

std::string late_start(const Trace& trace) {
  std::uint64_t live = 0;
  for (std::uint32_t i = 0; i < trace.initial_events; ++i)
    live += trace.events[i].bytes;
  const std::vector<InitialSegment> none;
  const std::vector<InitialSegment>& segments =
      trace.pytorch ? trace.pytorch->initial_segments : none;
  std::uint64_t held = 0;
  for (const InitialSegment& s : segments)
    held += s.bytes;
  // At the segment level the events before the history are the segments themselves.
  const std::string what =
      segments.empty()
          ? fmt::format("{} segments ({})", format_count(trace.initial_events), format_bytes(live))
          : fmt::format("{} blocks ({}) in {} segments ({})", format_count(trace.initial_events),
                        format_bytes(live), segments.size(), format_bytes(held));
  return fmt::format(
      "the history began with {} already live (recorded after they were made, or "
      "its first entries cut by max_entries): they are placed as the snapshot shows them, and "
      "what the program did before its first entry is not replayed; if it needed more then, "
      "an answer read from this trace is too low",
      what);
}

std::string stops_at_oom(const Trace& trace) {
  const Event failed = trace.events[trace.demand.last_failure_at];
  return fmt::format(
      "the trace stops at the program's OOM (entry {}): what it would have asked for after it "
      "is not in the trace, so every frontier and every 'fits' read from it is a lower bound "
      "for the whole job",
      format_count(failed.index));
}

}  // namespace

std::vector<std::string> trace_caveats(const Trace& trace) {
  std::vector<std::string> out;
  if (trace.pytorch && !trace.pytorch->unknown_actions.empty())
    out.push_back(unknown_actions(*trace.pytorch));
  if (trace.initial_events > 0) out.push_back(late_start(trace));
  if (ends_at_failure(trace)) out.push_back(stops_at_oom(trace));
  return out;
}

}  // namespace oomlab::trace
