#include "reports/writers/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "oomlab/units.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/svg_frame.hpp"

namespace oomlab {

namespace {

using namespace svg;  // NOLINT(google-build-using-namespace): the chart's own frame

ByteUnit unit_for(double max_bytes) {
  if (max_bytes >= 2.0 * (1ULL << 30)) return {static_cast<double>(1ULL << 30), "GiB"};
  if (max_bytes >= 2.0 * (1ULL << 20)) return {static_cast<double>(1ULL << 20), "MiB"};
  if (max_bytes >= 2.0 * (1ULL << 10)) return {1024.0, "KiB"};
  return {1.0, "B"};
}

// A budget this many times above everything drawn is left above the chart (named at its top), so
// that a small run is not a flat line at the bottom.
constexpr double kBudgetOffChart = 5.0;

double highest_drawn_bytes(const RunReport& run) {
  double high = std::max({static_cast<double>(run.timeline.peak_live_bytes),
                          static_cast<double>(run.timeline.peak_reserved_bytes), 1.0});
  if (run.oom) {
    high = std::max(high, static_cast<double>(run.oom->reserved_bytes));
    high = std::max(high, static_cast<double>(run.oom->live_bytes));
    // Free memory stacked on reserved, unless it would flatten everything else.
    const double stacked =
        static_cast<double>(run.oom->reserved_bytes + run.oom->device_free_bytes);
    if (stacked <= 1.5 * high) high = std::max(high, stacked);
  }
  const auto budget = static_cast<double>(run.budget_bytes);
  const bool drawn = budget <= kBudgetOffChart * high || run.timeline.events == 0;
  return drawn ? std::max(high, budget) : high;
}

Frame make_frame(const RunReport& run) {
  Frame f;
  if (!run.trials.empty()) {  // room for a second legend row and the trials' labels
    f.top += 2 * kLegendRow;
    f.height -= 2 * kLegendRow;
  }
  const double high = highest_drawn_bytes(run) * 1.04;
  f.unit = unit_for(high);
  f.y_ticks = nice_ticks(high / f.unit.size, 6);
  f.y_top = f.y_ticks.back() * f.unit.size;
  const Timeline& t = run.timeline;
  double last = t.events > 0 ? static_cast<double>(t.last_seq) : 0.0;
  if (run.oom) last = std::max(last, static_cast<double>(run.oom->event));
  f.x0 = t.events > 0 ? static_cast<double>(t.first_seq) : 0.0;
  f.x1 = std::max(last, f.x0 + 1.0);
  f.x_ticks = nice_ticks(f.x1, 8);
  std::erase_if(f.x_ticks, [&](double v) { return v < f.x0 || v > f.x1; });
  return f;
}

std::string tick_label(double value) {
  if (value == std::floor(value) && value < 1e15) {
    return format_count(static_cast<std::uint64_t>(value));
  }
  return fmt::format("{:g}", value);
}

std::string axes_svg(const Frame& f) {
  std::string out = "<g class=\"axes\" font-size=\"13\" fill=\"#444\">\n";
  for (const double v : f.y_ticks) {
    const double y = f.y(v * f.unit.size);
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e3e3\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{} {}</text>\n",
        f.left, y, f.right(), y, f.left - 8, y + 4, fmt::format("{:g}", v), f.unit.name);
  }
  for (const double v : f.x_ticks) {
    const double x = f.x(v);
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
        x, f.bottom(), x, f.bottom() + 5, x, f.bottom() + 20, tick_label(v));
  }
  out += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#999\"/>\n",
      f.left, f.top, f.width, f.height);
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">event (seq in events.csv)</text>\n",
      f.left + f.width / 2, f.bottom() + 44);
  out += fmt::format(
      "<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">bytes ({})"
      "</text>\n</g>\n",
      f.top + f.height / 2, f.unit.name);
  return out;
}

// "x,y x,y ...": the points of a series in plot coordinates.
std::string polyline_points(const Frame& f, const std::vector<TimelinePoint>& points) {
  std::string out;
  out.reserve(points.size() * 16);
  for (const TimelinePoint& p : points) {
    out += fmt::format("{:.1f},{:.1f} ", f.x(static_cast<double>(p.seq)),
                       f.y(static_cast<double>(p.bytes)));
  }
  return out;
}

// A series as a line; `filled` adds the area under it, drawn first so the line stays on top.
std::string series_svg(const Frame& f, const std::vector<TimelinePoint>& points, const char* id,
                       const char* colour, bool filled) {
  if (points.empty()) return {};
  const std::string line = polyline_points(f, points);
  std::string out = fmt::format("<g id=\"{}\">", id);
  if (filled) {
    out +=
        fmt::format(R"(<path d="M{:.1f},{:.1f}L{}{:.1f},{:.1f}Z" fill="{}" fill-opacity="0.22"/>)",
                    f.x(static_cast<double>(points.front().seq)), f.bottom(), line,
                    f.x(static_cast<double>(points.back().seq)), f.bottom(), colour);
  }
  out += fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
      "stroke-linejoin=\"round\"/></g>\n",
      line, colour, filled ? "1.5" : "2");
  return out;
}

std::string budget_svg(const Frame& f, std::uint64_t budget) {
  if (static_cast<double>(budget) > f.y_top) {
    return fmt::format(
        "<g id=\"budget-line\"><text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"13\" fill=\"{}\">"
        "budget {} (above the chart: everything drawn is far below it)</text></g>\n",
        f.left + 6, f.top + 16, kBudgetColour, format_bytes(budget));
  }
  const double y = f.y(static_cast<double>(budget));
  return fmt::format(
      "<g id=\"budget-line\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"8 5\"/>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"13\" fill=\"{}\">budget {}</text></g>\n",
      f.left, y, f.right(), y, kBudgetColour, f.left + 6, y - 6, kBudgetColour,
      format_bytes(budget));
}

// Device free memory at the OOM, stacked on reserved: the room the allocator could still have had.
std::string device_free_svg(const Frame& f, const OomRecord& oom) {
  const double x = f.x(static_cast<double>(oom.event)) + 10;
  const double low = f.y(static_cast<double>(oom.reserved_bytes));
  const double high = f.y(static_cast<double>(oom.reserved_bytes + oom.device_free_bytes));
  return fmt::format(
      "<g id=\"device-free-at-oom\" stroke=\"{0}\" stroke-width=\"3\">"
      "<line x1=\"{1:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{3:.1f}\"/>"
      "<line x1=\"{4:.1f}\" y1=\"{2:.1f}\" x2=\"{5:.1f}\" y2=\"{2:.1f}\"/>"
      "<line x1=\"{4:.1f}\" y1=\"{3:.1f}\" x2=\"{5:.1f}\" y2=\"{3:.1f}\"/>"
      "<title>device free at the OOM: {6}</title></g>\n",
      kFreeColour, x, low, std::min(high, low - 2), x - 4, x + 4,
      format_bytes(oom.device_free_bytes));
}

std::string failed_marks_svg(const Frame& f, const RunReport& run) {
  std::string out;
  for (const std::uint64_t seq : run.timeline.failed_seqs) {
    if (run.oom && seq == run.oom->event) continue;
    const double x = f.x(static_cast<double>(seq));
    out += fmt::format(R"(<path d="M{:.1f},{:.1f}l-5,9h10z" fill="{}"/>)", x, f.bottom() - 9,
                       kFailedColour);
  }
  return out.empty() ? out : "<g id=\"failed-requests\">" + out + "</g>\n";
}

// The width of a line of the OOM label (14 px bold): a generous 0.6 em a character, so that an
// estimate never lets it run past the frame.
constexpr double kLabelCharWidth = 8.6;

double label_width(std::string_view text) {
  return kLabelCharWidth * static_cast<double>(text.size());
}

std::string oom_svg(const Frame& f, const OomRecord& oom) {
  const double x = f.x(static_cast<double>(oom.event));
  const double y_live = f.y(static_cast<double>(oom.live_bytes));
  const double y_want = f.y(static_cast<double>(oom.live_bytes + oom.request_bytes));
  const std::string label =
      fmt::format("OOM at {} (step {}): request {}, live {}", oom_where(oom), oom.step,
                  format_bytes(oom.request_bytes), format_bytes(oom.live_bytes));
  // Right of the marker where the label fits inside the frame, else left of it (moved right as
  // far as the frame's left edge needs).
  const double width = label_width(label);
  const bool left_side = x + 10 + width > f.right();
  const double text_x =
      left_side ? std::min(std::max(x - 10, f.left + 4 + width), f.right() - 4) : x + 10;
  return fmt::format(
      "<g id=\"oom-marker\" class=\"oom\" fill=\"{0}\" stroke=\"{0}\">"
      "<title>{8}</title>"
      "<line x1=\"{1:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{3:.1f}\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"4 3\"/>"
      "<rect x=\"{4:.1f}\" y=\"{5:.1f}\" width=\"8\" height=\"{6:.1f}\" fill-opacity=\"0.35\"/>"
      "<circle cx=\"{1:.1f}\" cy=\"{7:.1f}\" r=\"7\"/>"
      "<text x=\"{9:.1f}\" y=\"{10:.1f}\" text-anchor=\"{11}\" stroke=\"none\" font-size=\"14\" "
      "font-weight=\"bold\">{8}</text></g>\n",
      kOomColour, x, f.top, f.bottom(), x - 4, y_want, std::max(y_live - y_want, 1.0), y_live,
      xml_escape(label), text_x, f.top + 18, left_side ? "end" : "start");
}

std::string legend_svg(const RunReport& run) {
  std::vector<LegendItem> items = {
      {fmt::format("<rect width=\"22\" height=\"12\" y=\"-10\" fill=\"{0}\" fill-opacity=\"0.3\" "
                   "stroke=\"{0}\"/>",
                   kReservedColour),
       "reserved bytes"},
      {fmt::format(R"(<rect width="22" height="4" y="-6" fill="{}"/>)", kLiveColour),
       "live bytes"}};
  if (run.budget_bytes > 0) {
    items.push_back({fmt::format("<line x2=\"22\" y1=\"-4\" y2=\"-4\" stroke=\"{}\" "
                                 "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>",
                                 kBudgetColour),
                     "budget"});
  }
  if (run.oom) {
    items.push_back({fmt::format(R"(<circle cx="11" cy="-4" r="6" fill="{}"/>)", kOomColour),
                     "OOM (bar: the request)"});
    items.push_back(
        {fmt::format(R"(<rect x="9" width="4" height="14" y="-11" fill="{}"/>)", kFreeColour),
         "device free at the OOM"});
  }
  const auto& failed = run.timeline.failed_seqs;
  if (std::any_of(failed.begin(), failed.end(),
                  [&](std::uint64_t seq) { return !run.oom || seq != run.oom->event; })) {
    items.push_back({fmt::format(R"(<path d="M11,-10l-5,9h10z" fill="{}"/>)", kFailedColour),
                     "other refused requests"});
  }
  add_marks_legend(run, items);
  std::string out = R"(<g class="legend" font-size="13" fill="#222">)";
  double x = 90;
  double y = 26;
  for (const LegendItem& item : items) {
    const double width = 40 + 7.2 * static_cast<double>(item.text.size());
    if (x + width > kWidth && x > 90) {  // a second row rather than past the edge
      x = 90;
      y += kLegendRow;
    }
    out += fmt::format("<g transform=\"translate({:.0f} {:.0f})\">{}<text x=\"28\">{}</text></g>",
                       x, y, item.swatch, item.text);
    x += width;
  }
  return out + "</g>\n";
}

}  // namespace

std::vector<double> nice_ticks(double max, int target) {
  if (!(max > 0) || !std::isfinite(max)) return {0.0, 1.0};
  const double raw = max / std::max(target, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  double step = 10 * magnitude;
  for (const double nice : {1.0, 2.0, 2.5, 5.0}) {
    if (norm <= nice) {
      step = nice * magnitude;
      break;
    }
  }
  std::vector<double> ticks;
  for (int i = 0; ticks.empty() || ticks.back() < max * (1 - 1e-12); ++i) {
    ticks.push_back(step * i);
  }
  return ticks;
}

std::string timeline_svg(const RunReport& run) {
  const Frame f = make_frame(run);
  std::string out = fmt::format(
      "<svg viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" "
      "aria-label=\"live and reserved bytes over events\" class=\"chart\" "
      "font-family=\"system-ui, sans-serif\">\n",
      kWidth, kHeight);
  out += axes_svg(f);
  out += legend_svg(run);
  if (!run.trials.empty()) out += trials_svg(f, run);
  out += series_svg(f, run.timeline.reserved, "series-reserved", kReservedColour, true);
  out += series_svg(f, run.timeline.live, "series-live", kLiveColour, false);
  if (!run.timeline.missing.empty()) {
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"16\" "
        "fill=\"#777\">{}</text>\n",
        f.left + f.width / 2, f.top + f.height / 2, xml_escape(run.timeline.missing));
  }
  if (run.budget_bytes > 0) out += budget_svg(f, run.budget_bytes);  // none: several devices'
  out += failed_marks_svg(f, run);
  out += program_failure_svg(f, run);
  if (run.oom) {
    out += device_free_svg(f, *run.oom);
    out += oom_svg(f, *run.oom);
  }
  return out + "</svg>\n";
}

}  // namespace oomlab
