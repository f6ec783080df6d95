// The chart's frame and marks, shared by svg_chart.cpp (axes, series, the OOM) and svg_marks.cpp
// (a search's trials, where a replayed program failed). Internal to the reports.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "reports/run/run_report.hpp"

namespace oomlab::svg {

inline constexpr double kWidth = 1100;
inline constexpr double kHeight = 470;
inline constexpr const char* kLiveColour = "#1f77b4";
inline constexpr const char* kReservedColour = "#ff7f0e";
inline constexpr const char* kBudgetColour = "#333333";
inline constexpr const char* kFreeColour = "#2ca02c";
inline constexpr const char* kFailedColour = "#e377c2";
inline constexpr const char* kFittedTrialColour = "#2ca02c";
inline constexpr const char* kFailedTrialColour = "#ff9896";
inline constexpr const char* kProgramColour = "#9467bd";
inline constexpr double kLegendRow = 18;

struct ByteUnit {
  double size;
  const char* name;
};

// The plot area and the mapping of (event seq, bytes) onto it.
struct Frame {
  double left = 90;
  double top = 56;
  double width = kWidth - 90 - 30;
  double height = kHeight - 56 - 64;
  double x0 = 0;
  double x1 = 1;
  double y_top = 1;  // bytes at the top of the plot
  ByteUnit unit{1.0, "B"};
  std::vector<double> y_ticks;  // in `unit`
  std::vector<double> x_ticks;

  [[nodiscard]] double x(double seq) const { return left + (seq - x0) / (x1 - x0) * width; }
  [[nodiscard]] double y(double bytes) const {
    return top + height - std::min(bytes, y_top) / y_top * height;
  }
  [[nodiscard]] double bottom() const { return top + height; }
  [[nodiscard]] double right() const { return left + width; }
};

// One entry of the chart's legend: its swatch (SVG, drawn at the origin) and its words.
struct LegendItem {
  std::string swatch;
  std::string text;
};

// The legend's entries for the marks below, where the run has them.
void add_marks_legend(const RunReport& run, std::vector<LegendItem>& items);

// A search's trials as bands over their events (id "trials"), named above.
[[nodiscard]] std::string trials_svg(const Frame& f, const RunReport& run);
// Where a replayed program itself failed (id "program-failure"), named by its trace entry as the
// report's text names it; empty when the timeline does not show it.
[[nodiscard]] std::string program_failure_svg(const Frame& f, const RunReport& run);

}  // namespace oomlab::svg
