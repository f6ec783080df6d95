#include "trace/trace_series.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "oomlab/error.hpp"
#include "oomlab/trace_builder.hpp"
#include "oomlab/trace_format.hpp"
#include "oomlab/units.hpp"
#include "trace/series_align.hpp"

namespace oomlab::trace {

namespace {

// A size off the line of least squares by more than this is not on it: a page of the small pool
// (rounding), or 1% of the size, whichever is larger.
constexpr double kOffLineBytes = 4096.0;
constexpr double kOffLineShare = 0.01;

std::string place_of(const Trace& trace, std::uint32_t position) {
  if (!trace.recorded) return "(no frames recorded)";
  const std::vector<std::string>& frames = trace.recorded->frames_of(position);
  return frames.empty() ? std::string("(no frames recorded)") : frames.front();
}

bool has_frames(const Trace& trace) {
  return trace.recorded && !trace.recorded->stacks.empty() && !trace.recorded->event_stacks.empty();
}

// In a format whose series may shift pairs (FormatInfo::shifted_pairs), where no trace recorded
// frames, the sequence alone pairs the requests, and a request made at one value only shifts the
// pairs after it onto other requests. A pair that grew more than twice as fast as the value did,
// and by more than a MiB, is such a shift (a 32 MiB workspace at batch 1 paired with the 266 MiB
// logits at batch 2): its line would send a workspace to gigabytes. The larger value's request
// is then made in proportion to the value, the most a request that grows with it can grow. Only
// there: in other formats a request may grow faster than the value (attention over a sequence).
bool outgrown(const std::vector<double>& xs, const std::vector<double>& ys) {
  constexpr double kMiB = 1024.0 * 1024.0;
  for (std::size_t k = 0; k + 1 < xs.size(); ++k) {
    if (xs[k] > 0.0 && ys.back() > ys[k] + kMiB && ys.back() > 2.0 * ys[k] * xs.back() / xs[k])
      return true;
  }
  return false;
}

}  // namespace

TraceSeries::TraceSeries(std::string name, std::vector<SeriesPoint> points)
    : name_(std::move(name)), points_(std::move(points)) {
  std::sort(points_.begin(), points_.end(),
            [](const SeriesPoint& a, const SeriesPoint& b) { return a.value < b.value; });
  if (points_.size() < 2)
    throw Error(ErrorKind::input, fmt::format("{}: a series needs traces at two values", name_));
  for (std::size_t k = 0; k < points_.size(); ++k) {
    if (!points_[k].trace) throw Error(ErrorKind::internal, "a series point without its trace");
    if (k > 0 && points_[k].value == points_[k - 1].value) {
      throw Error(ErrorKind::input,
                  fmt::format("{}={} is given twice: a series needs distinct values", name_,
                              points_[k].value));
    }
    if (points_[k].trace->format != points_.front().trace->format) {
      throw Error(ErrorKind::input,
                  fmt::format("{}: the trace at {}={} is {}, the one at {}={} is {}: a series is "
                              "one program's traces in one format",
                              points_[k].trace->source.string(), name_, points_[k].value,
                              to_string(points_[k].trace->format), name_, points_.front().value,
                              to_string(points_.front().trace->format)));
    }
  }
  const Trace& anchor = *points_.back().trace;
  const FormatInfo* format = format_info(anchor.format);
  side_streams_ = format != nullptr && format->side_streams;
  std::vector<std::vector<std::uint32_t>> matches;
  for (std::size_t k = 0; k + 1 < points_.size(); ++k) {
    const Trace& other = *points_[k].trace;
    std::optional<std::vector<std::uint32_t>> m = align(other, false);
    // Pairs no line could join: try keys that tell tiny requests apart, kept if they do better.
    if (const std::uint64_t bad = m ? implausible_pairs(other, anchor, *m) : 0; bad > 0) {
      std::optional<std::vector<std::uint32_t>> told = align(other, true);
      if (told && implausible_pairs(other, anchor, *told) < bad) m = std::move(told);
    }
    if (!m) {
      throw Error(
          ErrorKind::input,
          fmt::format("{}={} ({}) and {}={} ({}): their requests differ by more than {} "
                      "insertions and deletions: not one program's sequence at two values",
                      name_, points_[k].value, other.source.string(), name_, points_.back().value,
                      anchor.source.string(), format_count(kMostEdits)));
    }
    fit_.elsewhere_only += unmatched_allocs(other, *m);
    matches.push_back(std::move(*m));
  }
  fit_lines(matches);
  find_transients();
}

bool TraceSeries::on_side(const Trace& trace, std::uint32_t position) const {
  return side_streams_ && trace.events[position].stream != 0;
}

// `other`'s requests paired with the anchor's (by the anchor's position; Event::kNone: none),
// the side streams' left out; none past kMostEdits.
std::optional<std::vector<std::uint32_t>> TraceSeries::align(const Trace& other, bool tiny) const {
  const Trace& anchor = *points_.back().trace;
  if (!side_streams_)
    return align_keys(request_keys(other, tiny), request_keys(anchor, tiny), kMostEdits);
  const auto paired = [&](const Trace& t, std::vector<std::uint32_t>& at) {
    const std::vector<std::uint64_t> all = request_keys(t, tiny, true);
    std::vector<std::uint64_t> keys;
    for (std::uint32_t p = 0; p < t.events.size(); ++p) {
      if (on_side(t, p)) continue;
      at.push_back(p);
      keys.push_back(all[p]);
    }
    return keys;
  };
  std::vector<std::uint32_t> theirs;
  std::vector<std::uint32_t> ours;
  const std::vector<std::uint64_t> other_keys = paired(other, theirs);
  const std::optional<std::vector<std::uint32_t>> m =
      align_keys(other_keys, paired(anchor, ours), kMostEdits);
  if (!m) return std::nullopt;
  std::vector<std::uint32_t> full(anchor.events.size(), Event::kNone);
  for (std::size_t i = 0; i < m->size(); ++i) {
    if ((*m)[i] != Event::kNone) full[ours[i]] = theirs[(*m)[i]];
  }
  return full;
}

// `other`'s allocations no request of the anchor's is paired with, the side streams' left out.
std::uint64_t TraceSeries::unmatched_allocs(const Trace& other,
                                            const std::vector<std::uint32_t>& match) const {
  std::vector<bool> used(other.events.size(), false);
  for (const std::uint32_t q : match) {
    if (q != Event::kNone) used[q] = true;
  }
  std::uint64_t out = 0;
  EventReader events(other.events);
  for (std::uint32_t q = 0; q < other.events.size(); ++q) {
    if (events[q].op == Op::alloc && !used[q] && !on_side(other, q)) ++out;
  }
  return out;
}

// An allocation is transient when every event from it to its free has its frames (one call of
// the program's made, used and freed it), or when the very next event frees it (where no frames
// were recorded: autograd's backward thread). Candidates stay open until an event of other frames.
void TraceSeries::find_transients() {
  const Trace& anchor = *points_.back().trace;
  transient_.assign(anchor.events.size(), false);
  const RecordedState* r = anchor.recorded ? &*anchor.recorded : nullptr;
  const auto stack = [&](std::uint32_t i) {
    return r != nullptr && i < r->event_stacks.size() ? r->event_stacks[i] : Event::kNone;
  };
  std::vector<std::uint32_t> open;  // positions of allocations still candidates
  std::vector<std::uint32_t> slot_alloc(anchor.slots, Event::kNone);
  EventReader events(anchor.events);
  for (std::uint32_t i = 0; i < anchor.events.size(); ++i) {
    const Event& e = events[i];
    const std::uint32_t s = stack(i);
    const bool next =
        e.op == Op::free && e.slot != Event::kNone && i > 0 && slot_alloc[e.slot] == i - 1;
    std::erase_if(open, [&](std::uint32_t p) {
      return (s == Event::kNone || stack(p) != s) && !(next && p == i - 1);
    });
    if (e.slot == Event::kNone) continue;
    if (e.op == Op::alloc) {
      slot_alloc[e.slot] = i;
      if (!e.preexisting) open.push_back(i);
    } else if (e.op == Op::free) {
      const std::uint32_t p = slot_alloc[e.slot];
      const auto it = std::find(open.begin(), open.end(), p);
      if (it == open.end()) continue;
      open.erase(it);
      if (lines_[p].slope == 0.0) continue;
      transient_[p] = true;
      ++fit_.transient;
    }
  }
}

// The line through the sizes at the last two values.
TraceSeries::Line TraceSeries::last_two(const std::vector<double>& xs,
                                        const std::vector<double>& ys) {
  const std::size_t n = xs.size();
  Line line{.slope = (ys[n - 1] - ys[n - 2]) / (xs[n - 1] - xs[n - 2])};
  line.intercept = ys[n - 1] - line.slope * xs[n - 1];
  return line;
}

// The line of least squares, when every size is on it (none: some size is off it).
std::optional<TraceSeries::Line> TraceSeries::least_squares(const std::vector<double>& xs,
                                                            const std::vector<double>& ys) {
  const auto n = static_cast<double>(xs.size());
  double mx = 0;
  double my = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    mx += xs[k] / n;
    my += ys[k] / n;
  }
  double sxy = 0;
  double sxx = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    sxy += (xs[k] - mx) * (ys[k] - my);
    sxx += (xs[k] - mx) * (xs[k] - mx);
  }
  const Line fitted{.intercept = my - (sxy / sxx) * mx, .slope = sxy / sxx};
  const double most = *std::max_element(ys.begin(), ys.end());
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const double off = std::fabs(fitted.intercept + fitted.slope * xs[k] - ys[k]);
    if (off > std::max(kOffLineBytes, kOffLineShare * most)) return std::nullopt;
  }
  return fitted;
}

void TraceSeries::fit_lines(const std::vector<std::vector<std::uint32_t>>& matches) {
  const Trace& anchor = *points_.back().trace;
  lines_.assign(anchor.events.size(), Line{});
  std::map<std::string, std::uint64_t> places;
  std::vector<double> xs(points_.size());
  std::vector<double> ys(points_.size());
  for (std::size_t k = 0; k < points_.size(); ++k)
    xs[k] = static_cast<double>(points_[k].value);
  const FormatInfo* format = format_info(anchor.format);
  const bool may_shift = format != nullptr && format->shifted_pairs &&
                         std::none_of(points_.begin(), points_.end(),
                                      [](const SeriesPoint& pt) { return has_frames(*pt.trace); });
  EventReader events(anchor.events);
  for (std::uint32_t p = 0; p < anchor.events.size(); ++p) {
    const Event& e = events[p];
    if (e.op == Op::free) continue;
    if (e.op == Op::failed) ++fit_.failures;
    lines_[p] = {.intercept = static_cast<double>(e.bytes), .slope = 0.0};
    if (on_side(anchor, p)) {  // the framework's own work: made at the anchor's size
      if (e.op == Op::alloc) ++fit_.side;
      continue;
    }
    if (e.op == Op::alloc) ++fit_.requests;
    const bool everywhere = std::all_of(matches.begin(), matches.end(),
                                        [&](const auto& m) { return m[p] != Event::kNone; });
    if (!everywhere) {
      if (e.op == Op::alloc) ++fit_.anchor_only;
      continue;
    }
    if (e.op == Op::alloc) ++fit_.matched;
    if (e.preexisting) continue;  // placed as the snapshot shows it: its segment's size holds
    for (std::size_t k = 0; k + 1 < points_.size(); ++k)
      ys[k] = static_cast<double>(points_[k].trace->events[matches[k][p]].bytes);
    ys.back() = static_cast<double>(e.bytes);
    if (may_shift && outgrown(xs, ys)) {  // a shifted pair: the most the anchor's may grow
      lines_[p] = {.intercept = 0.0, .slope = ys.back() / xs.back()};
      ++fit_.scaling;
      continue;
    }
    Line line = last_two(xs, ys);
    if (points_.size() > 2) {
      if (const std::optional<Line> fitted = least_squares(xs, ys)) {
        line = *fitted;
      } else if (e.op == Op::alloc) {
        ++fit_.off_line;
        ++places[place_of(anchor, p)];
      }
    }
    if (line.slope != 0.0 && e.op == Op::alloc) ++fit_.scaling;
    lines_[p] = line;
  }
  fit_.aligned_share = fit_.requests == 0
                           ? 1.0
                           : static_cast<double>(fit_.matched) / static_cast<double>(fit_.requests);
  for (auto& [where, count] : places)
    fit_.off_line_places.emplace_back(where, count);
  std::stable_sort(fit_.off_line_places.begin(), fit_.off_line_places.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
}

std::optional<std::string> TraceSeries::misaligned() const {
  if (fit_.aligned_share >= kLeastAligned) return std::nullopt;
  std::string values;
  for (std::size_t k = 0; k + 1 < points_.size(); ++k)
    values += fmt::format("{}{}", k == 0 ? "" : ", ", points_[k].value);
  return fmt::format(
      "only {:.1f}% of the {} requests at {}={} have a counterpart at {}={} (at least {:.0f}% "
      "must): the program does not make the same requests at these values",
      100.0 * fit_.aligned_share, format_count(fit_.requests), name_, points_.back().value, name_,
      values, 100.0 * kLeastAligned);
}

}  // namespace oomlab::trace
