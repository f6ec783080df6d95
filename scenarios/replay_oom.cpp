#include "replay_oom.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace oomlab {

ProgramRequest failing_request(const trace::Trace& trace, std::uint32_t failing_at,
                               std::vector<LiveBlock> live, std::span<const std::string> roots) {
  const trace::Event failing = trace.events[failing_at];
  ProgramRequest request{
      .trace_entry = failing.index,
      .trace_line = failing.line != 0 ? std::optional(failing.line) : std::nullopt};
  constexpr std::size_t kHolders = 10;
  if (trace.recorded) request.holders = trace::memory_holders(trace, failing_at, kHolders, roots);
  if (!trace.recorded || trace.recorded->stacks.empty()) return request;
  const trace::RecordedState& recorded = *trace.recorded;
  constexpr std::size_t kLargest = 10;
  const std::size_t keep = std::min(kLargest, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(),
                    [](const LiveBlock& a, const LiveBlock& b) { return a.bytes > b.bytes; });
  for (std::size_t i = 0; i < keep; ++i) {
    request.largest_live.push_back(
        {.bytes = live[i].bytes,
         .trace_index = trace.events[live[i].event].index,
         .frames = trace::program_frames(recorded.frames_of(live[i].event))});
  }
  request.frames = trace::program_frames(recorded.frames_of(failing_at));
  if (const std::string* user = trace::innermost_user_frame(request.frames, roots))
    request.user_frame = *user;
  return request;
}

}  // namespace oomlab
