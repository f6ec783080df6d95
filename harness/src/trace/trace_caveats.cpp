// trace_caveats (oomlab/trace.hpp): what an answer read from a trace cannot know, in words.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "trace/recorded_end.hpp"

namespace oomlab::trace {

namespace {

// "'alloc_v2' (3 entries), 'mark' (1 entry)": a newer PyTorch's entries, which a replay skips.
std::string unknown_actions(const RecordedState& recorded) {
  std::string actions;
  std::uint64_t total = 0;
  for (const auto& [action, count] : recorded.unknown_actions) {
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
      trace.recorded ? trace.recorded->initial_segments : none;
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
  const Event failed = trace.events[fatal_failure_at(trace)];
  return fmt::format(
      "the trace stops at the program's OOM (entry {}): what it would have asked for after it "
      "is not in the trace, so every frontier and every 'fits' read from it is a lower bound "
      "for the whole job",
      format_count(failed.index));
}

// "3 of 24.0 MiB, 1 of 37.0 MiB": the sizes of survived refusals, the most frequent first.
std::string size_counts(std::vector<std::uint64_t> sizes) {
  std::sort(sizes.begin(), sizes.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> counts;  // (count, bytes)
  for (const std::uint64_t bytes : sizes) {
    if (counts.empty() || counts.back().second != bytes) counts.emplace_back(0, bytes);
    ++counts.back().first;
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  constexpr std::size_t kShown = 4;
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < counts.size() && i < kShown; ++i)
    parts.push_back(fmt::format("{} of {}", counts[i].first, format_bytes(counts[i].second)));
  if (counts.size() > kShown)
    parts.push_back(fmt::format("{} other sizes", counts.size() - kShown));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string survived(const std::vector<std::uint64_t>& sizes) {
  return fmt::format(
      "the program survived {} refused request{} ({}): it went on asking (for less, as cuDNN "
      "does when a convolution's workspace is refused), and a replay asks for each again where "
      "it was asked and, refused, goes on as the program did. Such requests adapt to the memory "
      "left, so on a smaller card they may be smaller still: a frontier read from this trace is "
      "an upper bound for them",
      sizes.size(), sizes.size() == 1 ? "" : "s", size_counts(sizes));
}

// A frame of a convolution: PyTorch's conv modules, its functional calls, cuDNN's convolution
// frames. cuDNN alone is not one: its attention kernels (scaled_dot_product_attention's cuDNN
// backend) are no convolutions and choose no algorithm by the memory free.
bool convolution_frame(std::string_view frame) {
  constexpr std::array<std::string_view, 7> kMarks{
      "/conv.py:", "_conv_forward", "convolution", "conv1d", "conv2d", "conv3d", "conv_transpose"};
  return std::any_of(kMarks.begin(), kMarks.end(), [&](std::string_view mark) {
    return frame.find(mark) != std::string_view::npos;
  });
}

// How many allocations were made inside a convolution, by their recorded frames.
std::uint64_t convolution_requests(const Trace& trace) {
  if (!trace.recorded || trace.recorded->stacks.empty()) return 0;
  std::vector<char> of_convolution(trace.recorded->stacks.size(), 0);
  for (std::size_t s = 0; s < of_convolution.size(); ++s) {
    const auto& frames = trace.recorded->stacks[s];
    of_convolution[s] = std::any_of(frames.begin(), frames.end(), convolution_frame) ? 1 : 0;
  }
  std::uint64_t count = 0;
  const std::vector<std::uint32_t>& stacks = trace.recorded->event_stacks;
  for (std::size_t i = 0; i < stacks.size() && i < trace.events.size(); ++i) {
    if (stacks[i] < of_convolution.size() && of_convolution[stacks[i]] != 0 &&
        trace.events[i].op == Op::alloc)
      ++count;
  }
  return count;
}

std::string convolutions(std::uint64_t count) {
  return fmt::format(
      "{} allocations were made inside convolutions (their frames name them): cuDNN picks each "
      "convolution's algorithm, and its workspace, from the memory free at the time, and this "
      "trace holds the choices of a run that had this much room; a smaller card may be served "
      "algorithms that need less, so an answer read from it is an upper bound for them",
      format_count(count));
}

// A snapshot whose history ends with much more live than its lowest point since mid-history: it
// stops mid-step, as one does whose program died outside its allocator or was dumped at work.
struct MidStep {
  std::uint64_t end_bytes = 0;
  std::uint64_t floor_bytes = 0;
  std::uint64_t peak_bytes = 0;
};

// Live bytes more than this above the floor, and a quarter of the way from it to the peak.
constexpr std::uint64_t kMidStepMargin = 64ULL << 20U;

std::optional<MidStep> ends_mid_step(const Trace& trace) {
  if (!trace.recorded || trace.events.size() < 2) return std::nullopt;
  std::vector<std::uint64_t> slot_bytes(trace.slots, 0);
  const std::size_t half = trace.events.size() / 2;
  std::uint64_t live = 0;
  MidStep m{.floor_bytes = UINT64_MAX};
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event e = trace.events[i];
    if (e.op == Op::alloc) {
      live += e.bytes;
      if (e.slot < slot_bytes.size()) slot_bytes[e.slot] = e.bytes;
    } else if (e.op == Op::free && e.slot < slot_bytes.size()) {
      live -= std::exchange(slot_bytes[e.slot], 0);
    }
    m.peak_bytes = std::max(m.peak_bytes, live);
    if (i >= half) m.floor_bytes = std::min(m.floor_bytes, live);
  }
  m.end_bytes = live;
  const std::uint64_t rise = m.peak_bytes - m.floor_bytes;
  if (m.end_bytes <= m.floor_bytes + std::max(kMidStepMargin, rise / 4)) return std::nullopt;
  return m;
}

std::string mid_step(const MidStep& m) {
  return fmt::format(
      "the history ends with {} live, {} more than at its lowest since mid-history ({}; its peak "
      "{}): it stops mid-step, as a history does whose program died outside its allocator (a "
      "library's OOM, a crash) or was dumped while it still worked; what the program did after "
      "it is not in it, so a frontier or a 'fits' read from it may be a lower bound for the whole "
      "job (a snapshot `oomlab exec` wrote says how its program ended)",
      format_bytes(m.end_bytes), format_bytes(m.end_bytes - m.floor_bytes),
      format_bytes(m.floor_bytes), format_bytes(m.peak_bytes));
}

}  // namespace

std::vector<std::string> trace_caveats(const Trace& trace) {
  std::vector<std::string> out;
  if (trace.recorded && !trace.recorded->unknown_actions.empty())
    out.push_back(unknown_actions(*trace.recorded));
  if (trace.initial_events > 0) out.push_back(late_start(trace));
  const bool in_library = trace.recorded_end && trace.recorded_end->library;
  if (ends_at_failure(trace) && !in_library) {
    out.push_back(stops_at_oom(trace));
  } else if (ended_beside_trace(trace)) {
    out.push_back(recorded_end_caveat(*trace.recorded_end));
  } else if (!trace.recorded_end) {
    if (const std::optional<MidStep> m = ends_mid_step(trace)) out.push_back(mid_step(*m));
  }
  if (const std::vector<std::uint64_t> sizes = survived_failure_sizes(trace); !sizes.empty()) {
    out.push_back(survived(sizes));
  } else if (const std::uint64_t count = convolution_requests(trace); count > 0) {
    out.push_back(convolutions(count));
  }
  return out;
}

}  // namespace oomlab::trace
