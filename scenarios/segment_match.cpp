#include "segment_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <span>

#include "oomlab/units.hpp"

namespace oomlab {

namespace {

DeviceCallKind kind_of(trace::SegmentAction action) {
  switch (action) {
    case trace::SegmentAction::alloc:
      return DeviceCallKind::segment_alloc;
    case trace::SegmentAction::free:
      return DeviceCallKind::segment_free;
    case trace::SegmentAction::map:
      return DeviceCallKind::segment_map;
    case trace::SegmentAction::unmap:
      return DeviceCallKind::segment_unmap;
  }
  return DeviceCallKind::segment_alloc;
}

std::string_view name_of(DeviceCallKind kind) {
  switch (kind) {
    case DeviceCallKind::segment_alloc:
      return "segment_alloc";
    case DeviceCallKind::segment_free:
      return "segment_free";
    case DeviceCallKind::segment_map:
      return "segment_map";
    case DeviceCallKind::segment_unmap:
      return "segment_unmap";
  }
  return "?";
}

// One kind's calls (sorted by size): "segment_free 2.00 MiB", "4 segment_free calls of 2.00 MiB
// (8.00 MiB)", or "37 segment_free calls (74.0 MiB: 31 of 2.00 MiB, ...)".
std::string kind_text(std::string_view kind, std::span<const DeviceCall> calls) {
  if (calls.size() == 1) return fmt::format("{} {}", kind, format_bytes(calls.front().bytes));
  std::vector<std::pair<std::size_t, std::uint64_t>> sizes;  // (calls, bytes of each)
  std::uint64_t total = 0;
  for (const DeviceCall& c : calls) {
    total += c.bytes;
    if (sizes.empty() || sizes.back().second != c.bytes) sizes.emplace_back(0, c.bytes);
    ++sizes.back().first;
  }
  if (sizes.size() == 1) {
    return fmt::format("{} {} calls of {} ({})", calls.size(), kind, format_bytes(sizes[0].second),
                       format_bytes(total));
  }
  std::stable_sort(sizes.begin(), sizes.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> parts;
  std::size_t rest = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i < kMostSizesNamed) {
      parts.push_back(fmt::format("{} of {}", sizes[i].first, format_bytes(sizes[i].second)));
    } else {
      rest += sizes[i].first;
    }
  }
  if (rest > 0) {
    const std::size_t others = sizes.size() - kMostSizesNamed;
    parts.push_back(fmt::format("{} of {} other size{}", rest, others, others == 1 ? "" : "s"));
  }
  return fmt::format("{} {} calls ({}: {})", calls.size(), kind, format_bytes(total),
                     fmt::join(parts, ", "));
}

}  // namespace

std::string segment_calls_text(std::vector<DeviceCall> calls) {
  if (calls.empty()) return "none";
  std::sort(calls.begin(), calls.end(), [](const DeviceCall& a, const DeviceCall& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.bytes < b.bytes;
  });
  std::vector<std::string> parts;
  for (auto first = calls.begin(); first != calls.end();) {
    const auto last = std::find_if(first, calls.end(),
                                   [&](const DeviceCall& c) { return c.kind != first->kind; });
    parts.push_back(kind_text(name_of(first->kind), std::span<const DeviceCall>(first, last)));
    first = last;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Compared only where the trace recorded the allocator's segments (a format that records none,
// an allocator log of requests alone, has nothing to compare with).
SegmentMatch::SegmentMatch(const trace::Trace& trace, const std::vector<DeviceCall>* calls)
    : trace_(trace),
      calls_(trace.recorded && (!trace.recorded->segment_entries.empty() ||
                                !trace.recorded->initial_segments.empty())
                 ? calls
                 : nullptr) {
}

std::string SegmentMatch::describe(const std::vector<Call>& calls) {
  std::vector<DeviceCall> device_calls;
  device_calls.reserve(calls.size());
  for (const Call& c : calls)
    device_calls.push_back({.kind = c.kind, .bytes = c.bytes});
  return segment_calls_text(std::move(device_calls));
}

void SegmentMatch::after(std::uint32_t position) {
  if (!active()) return;
  std::vector<Call> recorded;
  std::uint64_t first_index = 0;
  const auto& entries = trace_.recorded->segment_entries;
  for (; cursor_ < entries.size() && entries[cursor_].before <= position; ++cursor_) {
    if (recorded.empty()) first_index = entries[cursor_].index;
    recorded.push_back({kind_of(entries[cursor_].action), entries[cursor_].bytes});
  }
  std::vector<Call> made;
  for (std::size_t i = mark_; i < calls_->size(); ++i)
    made.push_back({(*calls_)[i].kind, (*calls_)[i].bytes});
  mark_ = calls_->size();
  if (recorded.empty() && made.empty()) return;
  std::sort(recorded.begin(), recorded.end());
  std::sort(made.begin(), made.end());
  std::vector<Call> common;
  std::set_intersection(recorded.begin(), recorded.end(), made.begin(), made.end(),
                        std::back_inserter(common));
  recorded_ += recorded.size();
  matched_ += common.size();
  extra_ += made.size() - common.size();
  if (recorded == made || !first_mismatch_.empty()) return;
  const bool at_end = position >= trace_.events.size();
  const std::uint64_t index =
      recorded.empty() ? (at_end ? 0 : trace_.events[position].index) : first_index;
  first_mismatch_index_ = index;
  first_mismatch_ = fmt::format("{} entry {}: the snapshot has {}; the model made {}",
                                at_end ? "after the last request, at" : "before",
                                format_count(index), describe(recorded), describe(made));
}

void SegmentMatch::report(RunContext& ctx) const {
  if (!active()) return;
  ctx.metric("segment_calls", static_cast<double>(recorded_));
  ctx.metric("segment_calls_matched", static_cast<double>(matched_));
  ctx.metric("segment_calls_extra", static_cast<double>(extra_));
  if (first_mismatch_.empty()) {
    ctx.note(fmt::format(
        "segment calls: all {} the snapshot recorded over the part replayed were made by the "
        "model at the same points, and no other",
        recorded_));
    return;
  }
  ctx.metric("segment_first_mismatch_index", static_cast<double>(first_mismatch_index_));
  ctx.note(
      fmt::format("segment calls: {} of {} matched, {} made that the snapshot does not "
                  "have; first difference {}",
                  matched_, recorded_, extra_, first_mismatch_));
}

}  // namespace oomlab
