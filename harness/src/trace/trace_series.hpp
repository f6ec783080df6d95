// A program traced at several values of one parameter (its snapshots at batch 1 and 2), and the
// trace it would make at any other value: the requests aligned one to one across the traces
// (trace/series_align.hpp), each allocation's size fitted as a line in the value, and the trace
// at the value asked made from the one at the largest value traced (the anchor), its requests in
// its order and its frees where they were, each allocation at its line's size there.
//   - Two traces give each request the line through its two sizes; three or more give the line
//     of least squares, and the requests off it (a convolution's workspace, chosen per shape by
//     cuDNN) are counted and named by their frames: each takes the line through its last two.
//   - A request of the anchor that some trace lacks keeps the anchor's size; one the anchor
//     lacks is left out; both are counted. A failed request is a request: it is kept where it
//     was, at its line's size (a replay asks for it again).
//   - Transient requests (SeriesFit::transient) may follow another rule: at(value, Rule::held)
//     keeps them at the anchor's size, so that the two traces bound what such a request might be
//     between its size at the largest value traced and its line. Rule::refusable makes each one
//     a request the program survives being refused (a failed request with requests after it: a
//     replay asks for it at its line's size and, refused, goes on without it), as PyTorch's
//     convolutions do, falling back to an algorithm with a smaller workspace: the most a
//     capped program can do, where the lines are the least.
//   - In a format whose streams past the first are the framework's own work
//     (FormatInfo::side_streams: a compiler's autotuner on threads of its own), only the first
//     stream's requests are paired and fitted; each other allocation is made at the anchor's
//     size as a request the program survives being refused (SeriesFit::side).
// Where too few requests align (SeriesFit::aligned_share under kLeastAligned) the series says
// so, by how much, and makes no trace: the caller falls back to runs.
// One trace alone makes a series too (TraceSeries::in_proportion): each request grown in
// proportion to the value, the most a program whose requests are a part that grows with the
// value and a part that does not can need; a bound, not a prediction.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oomlab/trace.hpp"

namespace oomlab::trace {

struct SeriesPoint {
  std::uint64_t value = 0;
  std::shared_ptr<const Trace> trace;
};

// What the alignment and the fit found, for the caller's words and its JSON.
struct SeriesFit {
  std::uint64_t requests = 0;        // the anchor's allocations
  std::uint64_t matched = 0;         // of them, matched at every value
  std::uint64_t scaling = 0;         // of those, whose size changes with the value
  std::uint64_t off_line = 0;        // matched, not on one line (three or more values only)
  std::uint64_t anchor_only = 0;     // the anchor's, missing at some value: its size kept
  std::uint64_t elsewhere_only = 0;  // at other values only: left out
  std::uint64_t failures = 0;        // the anchor's failed requests, kept
  // Matched requests that change with the value and live inside one call of the program's (the
  // frames that made one are the frames of every event until its free): a library's workspace,
  // sized by what the library chose for the shape (cuDNN's convolution algorithms), which need
  // not follow a line. None without recorded frames.
  std::uint64_t transient = 0;
  // The anchor's allocations on the framework's side streams (FormatInfo::side_streams), not
  // counted in `requests`: made at the anchor's size, each refusable.
  std::uint64_t side = 0;
  double aligned_share = 0.0;  // matched / requests
  // Where the off-line requests were made (their innermost frames), most first, and how many.
  std::vector<std::pair<std::string, std::uint64_t>> off_line_places;
};

inline constexpr double kLeastAligned = 0.9;
inline constexpr std::uint32_t kMostEdits = 20000;

class TraceSeries {
 public:
  // `points` at distinct values, at least two, each trace of the same format. Throws
  // Error(input) naming the two values whose traces cannot be aligned within kMostEdits, or
  // for fewer than two points.
  TraceSeries(std::string name, std::vector<SeriesPoint> points);
  // The series of one trace, each request of the program's a line through nothing at 0: at
  // `value` it is the point's size times value / the point's value.
  [[nodiscard]] static TraceSeries in_proportion(std::string name, SeriesPoint point);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const SeriesFit& fit() const { return fit_; }
  [[nodiscard]] const std::vector<SeriesPoint>& points() const { return points_; }
  // None when the series can be trusted; else why, in words.
  [[nodiscard]] std::optional<std::string> misaligned() const;
  // How the transient requests are made: on their line, held at the anchor's size, or asked for
  // on their line and given up when refused.
  enum class Rule : std::uint8_t { lines, held, refusable };
  // The trace at `value` (made from the anchor, its source the anchor's).
  [[nodiscard]] Trace at(std::uint64_t value, Rule rule = Rule::lines) const;
  // The anchor's size of each allocation at `value`, by the anchor's position (0 for others).
  [[nodiscard]] std::uint64_t size_at(std::uint32_t position, std::uint64_t value) const;

 private:
  struct Line {
    double intercept = 0.0;
    double slope = 0.0;
  };
  TraceSeries() = default;
  [[nodiscard]] bool on_side(const Trace& trace, std::uint32_t position) const;
  [[nodiscard]] std::optional<std::vector<std::uint32_t>> align(const Trace& other,
                                                                bool tiny) const;
  [[nodiscard]] std::uint64_t unmatched_allocs(const Trace& other,
                                               const std::vector<std::uint32_t>& match) const;
  static Line last_two(const std::vector<double>& xs, const std::vector<double>& ys);
  static std::optional<Line> least_squares(const std::vector<double>& xs,
                                           const std::vector<double>& ys);
  void fit_lines(const std::vector<std::vector<std::uint32_t>>& matches);
  void find_transients();

  std::string name_;
  std::vector<SeriesPoint> points_;  // by value
  std::vector<Line> lines_;          // the anchor's, by position
  std::vector<bool> transient_;      // the anchor's, by position
  bool side_streams_ = false;        // the format's (FormatInfo::side_streams)
  SeriesFit fit_;
};

// The rule's name as --transients takes it: "lines", "held", "refusable".
[[nodiscard]] std::string_view to_string(TraceSeries::Rule rule);
// The files the series was read from, by value.
[[nodiscard]] std::vector<std::filesystem::path> source_files(const TraceSeries& series);

}  // namespace oomlab::trace
