#include "segment_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

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

}  // namespace

SegmentMatch::SegmentMatch(const trace::Trace& trace, const std::vector<DeviceCall>* calls)
    : trace_(trace), calls_(trace.format == trace::Format::pytorch ? calls : nullptr) {
}

std::string SegmentMatch::describe(const std::vector<Call>& calls) {
  if (calls.empty()) return "none";
  std::vector<std::string> parts;
  for (const Call& c : calls)
    parts.push_back(fmt::format("{} {}", name_of(c.kind), format_bytes(c.bytes)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void SegmentMatch::after(std::uint32_t position) {
  if (!active()) return;
  std::vector<Call> recorded;
  std::uint64_t first_index = 0;
  const auto& entries = trace_.segment_entries;
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
                                at_end ? "after the last request, at" : "before", index,
                                describe(recorded), describe(made));
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
