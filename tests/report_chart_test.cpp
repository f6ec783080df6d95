// The run report's chart, read as SVG text: it ends at the OOM (what follows is the run giving
// back what it held), and the OOM's label stays inside the picture wherever the marker is.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "oomlab/units.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/report_content.hpp"
#include "reports/writers/svg_chart.hpp"
#include "reports/writers/svg_frame.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;

// The x of every point of the polyline inside the group `id`.
std::vector<double> series_xs(const std::string& svg, const std::string& id) {
  const std::size_t group = svg.find("<g id=\"" + id + "\"");
  const std::size_t start = svg.find("points=\"", group) + 8;
  const std::string points = svg.substr(start, svg.find('"', start) - start);
  std::vector<double> xs;
  const std::regex point(R"(([0-9.]+),[0-9.]+)");
  for (auto it = std::sregex_iterator(points.begin(), points.end(), point);
       it != std::sregex_iterator(); ++it) {
    xs.push_back(std::stod((*it)[1]));
  }
  return xs;
}

// The OOM marker's line: x1 of its first <line>.
double oom_x(const std::string& svg) {
  const std::size_t marker = svg.find("id=\"oom-marker\"");
  const std::size_t x1 = svg.find("x1=\"", marker) + 4;
  return std::stod(svg.substr(x1, svg.find('"', x1) - x1));
}

struct Label {
  double x = 0;
  std::string anchor;
  std::string text;
};

Label oom_label(const std::string& svg) {
  const std::size_t marker = svg.find("id=\"oom-marker\"");
  const std::string rest = svg.substr(svg.find("<text", marker));
  std::smatch m;
  EXPECT_TRUE(std::regex_search(
      rest, m,
      std::regex(R"re(<text x="([0-9.]+)"[^>]*text-anchor="(\w+)"[^>]*>([^<]*)</text>)re")));
  return {std::stod(m[1]), m[2], m[3]};
}

TEST(ReportChart, EndsAtTheOomAndCountsWhatCameAfter) {
  // The fixture's run ran out of memory at event 2,026, then freed its blocks up to event 2,065.
  const RunReport run = load_run_report(fs::path(testing::test_data_dir()) / "report" / "run_sim");
  ASSERT_TRUE(run.oom.has_value());
  ASSERT_EQ(run.oom->event, 2026U);
  EXPECT_EQ(run.timeline.last_seq, 2026U);
  EXPECT_EQ(run.timeline.after_oom, 2065U - 2026U);
  const std::string svg = timeline_svg(run);
  const double oom = oom_x(svg);
  EXPECT_NEAR(oom, svg::Frame{}.right(), 0.05) << "the OOM is the chart's last event";
  for (const char* series : {"series-live", "series-reserved"}) {
    const std::vector<double> xs = series_xs(svg, series);
    ASSERT_FALSE(xs.empty()) << series;
    for (const double x : xs)
      EXPECT_LE(x, oom + 0.05) << series << " drawn past the OOM";
  }
  EXPECT_NE(timeline_caption(run.timeline).find("the 39 events after it"), std::string::npos)
      << timeline_caption(run.timeline);
  const auto rows = run_rows(run);
  const auto events = std::find_if(rows.begin(), rows.end(),
                                   [](const ReportRow& r) { return r.label == "Events"; });
  ASSERT_NE(events, rows.end());
  EXPECT_EQ(events->value, "2,066") << "every row of events.csv is still counted";
}

// A run whose OOM is a little past the middle of what is drawn: its label (about 60 characters)
// does not fit right of the marker.
RunReport run_with_oom_at(std::uint64_t oom_event, std::uint64_t last_event) {
  RunReport run;
  run.outcome = Outcome::oom;
  run.budget_bytes = 1_GiB;
  for (std::uint64_t seq = 0; seq <= last_event; seq += 10) {
    run.timeline.live.push_back({seq, 512_MiB});
    run.timeline.reserved.push_back({seq, 600_MiB});
  }
  run.timeline.events = last_event + 1;
  run.timeline.last_seq = last_event;
  run.timeline.peak_live_bytes = 512_MiB;
  run.timeline.peak_reserved_bytes = 600_MiB;
  run.oom = OomRecord{};
  run.oom->event = oom_event;
  run.oom->step = 12;
  run.oom->request_bytes = 1536_MiB;
  run.oom->live_bytes = 512_MiB;
  run.oom->reserved_bytes = 600_MiB;
  return run;
}

// A 14 px bold character is rarely wider than 0.6 em (8.4 px); the label must fit the picture
// (0 .. svg::kWidth) on the side it is drawn.
void expect_label_inside(const Label& label) {
  const double width = 8.4 * static_cast<double>(label.text.size());
  if (label.anchor == "start") {
    EXPECT_LE(label.x + width, svg::kWidth) << label.text;
  } else {
    EXPECT_EQ(label.anchor, "end");
    EXPECT_GE(label.x - width, 0.0) << label.text;
    EXPECT_LE(label.x, svg::kWidth);
  }
}

TEST(ReportChart, OomLabelNearTheRightEdgeGoesLeftOfTheMarker) {
  for (const std::uint64_t at : {100U, 450U, 550U, 650U, 1000U}) {
    SCOPED_TRACE(at);
    const std::string svg = timeline_svg(run_with_oom_at(at, 1000));
    const Label label = oom_label(svg);
    ASSERT_NE(label.text.find("OOM at event"), std::string::npos);
    expect_label_inside(label);
    if (label.anchor == "end") {
      EXPECT_LT(label.x, oom_x(svg)) << "left of the marker";
    } else {
      EXPECT_GT(label.x, oom_x(svg)) << "right of the marker";
    }
  }
}

}  // namespace
}  // namespace oomlab
