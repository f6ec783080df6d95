// The traces a series makes: its trace at any value (TraceSeries::at), and the series of one
// trace whose requests grow in proportion to the value (TraceSeries::in_proportion).
#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "oomlab/error.hpp"
#include "oomlab/trace_builder.hpp"
#include "oomlab/trace_format.hpp"
#include "trace/trace_series.hpp"

namespace oomlab::trace {

TraceSeries TraceSeries::in_proportion(std::string name, SeriesPoint point) {
  if (!point.trace || point.value == 0)
    throw Error(ErrorKind::internal, "a series in proportion needs a trace at a value over 0");
  TraceSeries s;
  s.name_ = std::move(name);
  s.points_ = {std::move(point)};
  const Trace& anchor = *s.points_.back().trace;
  const FormatInfo* format = format_info(anchor.format);
  s.side_streams_ = format != nullptr && format->side_streams;
  const auto value = static_cast<double>(s.points_.back().value);
  s.lines_.assign(anchor.events.size(), Line{});
  s.transient_.assign(anchor.events.size(), false);
  EventReader events(anchor.events);
  for (std::uint32_t p = 0; p < anchor.events.size(); ++p) {
    const Event& e = events[p];
    if (e.op == Op::free) continue;
    const auto bytes = static_cast<double>(e.bytes);
    s.lines_[p] = {.intercept = bytes, .slope = 0.0};
    if (e.op == Op::failed) ++s.fit_.failures;
    if (s.on_side(anchor, p)) {
      if (e.op == Op::alloc) ++s.fit_.side;
      continue;
    }
    if (e.op == Op::alloc) ++s.fit_.requests;
    if (e.preexisting) continue;
    s.lines_[p] = {.intercept = 0.0, .slope = bytes / value};
    if (e.op == Op::alloc && e.bytes > 0) ++s.fit_.scaling;
  }
  s.fit_.matched = s.fit_.requests;
  s.fit_.aligned_share = 1.0;
  return s;
}

std::uint64_t TraceSeries::size_at(std::uint32_t position, std::uint64_t value) const {
  if (position >= lines_.size()) return 0;
  const Line& line = lines_[position];
  const double bytes = std::round(line.intercept + line.slope * static_cast<double>(value));
  return bytes <= 0.0 ? 0 : static_cast<std::uint64_t>(bytes);
}

namespace {

// The anchor's own parts that hold for the made trace: its frames, settings and first segments.
RecordedState recorded_part(const RecordedState& anchor) {
  RecordedState out;
  out.initial_segments = anchor.initial_segments;
  out.release_at_end = anchor.release_at_end;
  out.stacks = anchor.stacks;
  out.allocator_settings = anchor.allocator_settings;
  return out;
}

// What the anchor recorded of its event `p` (the device's free memory at a failed request, an
// emptied cache before it, its stack), carried to the made trace's last event.
void carry_recorded(Trace& made, const RecordedState& from, std::uint32_t p, bool failed,
                    bool emptied) {
  const auto at = static_cast<std::uint32_t>(made.events.size() - 1);
  if (failed) {
    made.recorded->failed_requests.push_back(
        {.event = at, .device_free_bytes = from.device_free_at(p).value_or(0)});
  }
  if (emptied) made.recorded->emptied_cache_before.push_back(at);
  if (p < from.event_stacks.size() && from.event_stacks[p] != Event::kNone) {
    made.recorded->event_stacks.resize(at + 1, Event::kNone);
    made.recorded->event_stacks[at] = from.event_stacks[p];
  }
}

}  // namespace

Trace TraceSeries::at(std::uint64_t value, Rule rule) const {
  const Trace& anchor = *points_.back().trace;
  TraceBuilder builder(anchor.format, anchor.source);
  const RecordedState* from = anchor.recorded ? &*anchor.recorded : nullptr;
  if (from != nullptr) builder.trace().recorded = recorded_part(*from);
  builder.trace().recorded_end = anchor.recorded_end;  // a program that died there dies here too
  std::vector<std::uint64_t> slot_address(anchor.slots, 0);
  std::vector<bool> slot_refusable(anchor.slots, false);  // its allocation made a failed request
  std::size_t next_emptied = 0;
  bool emptied = false;
  EventReader events(anchor.events);
  for (std::uint32_t p = 0; p < anchor.events.size(); ++p) {
    const Event& e = events[p];
    if (from != nullptr) {
      const std::vector<std::uint32_t>& before = from->emptied_cache_before;
      while (next_emptied < before.size() && before[next_emptied] <= p) {
        emptied = true;
        ++next_emptied;
      }
    }
    std::uint64_t address = 0;
    std::uint64_t bytes = e.bytes;
    Op op = e.op;
    bool side = false;
    if (e.op == Op::failed) {
      bytes = size_at(p, value);
    } else if (e.op == Op::alloc) {
      address = (std::uint64_t{p} + 1) << 12U;  // one of its own: a free finds it
      const bool held = rule == Rule::held && transient_[p];
      if (!e.preexisting && !held) bytes = size_at(p, value);
      // Refused, a request is survived only where the program asks for more after it: a
      // transient is asked for and given back at once; a side stream's request is held until its
      // free where it is made, as the compiler's threads hold theirs at once.
      const bool survivable = !e.preexisting && p < anchor.demand.last_alloc_at;
      side = survivable && on_side(anchor, p);
      if (survivable && !side && rule == Rule::refusable && transient_[p]) {
        op = Op::failed;
        address = 0;
      }
      if (e.slot != Event::kNone) {
        slot_address[e.slot] = address;
        slot_refusable[e.slot] = op == Op::failed;
      }
    } else {
      if (e.slot == Event::kNone) continue;  // the anchor's own unknown free: it freed nothing
      if (slot_refusable[e.slot]) continue;  // its request held nothing to free
      address = slot_address[e.slot];
    }
    builder.add(op, bytes, address, anchor.streams[e.stream], 0, e.t_ns, e.index, e.line);
    Trace& made = builder.trace();
    if (e.preexisting) made.events.last().preexisting = true;
    if (side) made.events.last().refusable = true;
    if (from == nullptr) continue;
    carry_recorded(made, *from, p, op == Op::failed, std::exchange(emptied, false));
  }
  builder.trace().initial_events = anchor.initial_events;
  Trace made = builder.finish();
  made.source_entries = anchor.source_entries;  // its entries are the anchor's, numbered so
  return made;
}

std::string_view to_string(TraceSeries::Rule rule) {
  switch (rule) {
    case TraceSeries::Rule::lines:
      return "lines";
    case TraceSeries::Rule::held:
      return "held";
    case TraceSeries::Rule::refusable:
      return "refusable";
  }
  return "?";
}

std::vector<std::filesystem::path> source_files(const TraceSeries& series) {
  std::vector<std::filesystem::path> files;
  for (const SeriesPoint& point : series.points())
    files.push_back(point.trace->source);
  return files;
}

}  // namespace oomlab::trace
