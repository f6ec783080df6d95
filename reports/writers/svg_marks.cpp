#include <fmt/format.h>

#include <algorithm>

#include "oomlab/units.hpp"
#include "reports/run/run_extras.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/svg_frame.hpp"

namespace oomlab::svg {

namespace {

// The first word of the trials' labels ("fp16" of "fp16 batch 8") when it changes along the
// run: a mixed-precision search's precisions, each named above its first trial.
std::string trial_groups_svg(const Frame& f, const std::vector<TrialSpan>& trials) {
  const auto group = [](const TrialSpan& t) { return t.label.substr(0, t.label.find(' ')); };
  if (std::all_of(trials.begin(), trials.end(),
                  [&](const TrialSpan& t) { return group(t) == group(trials.front()); })) {
    return {};
  }
  std::string out;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (i > 0 && group(trials[i]) == group(trials[i - 1])) continue;
    const double x = f.x(static_cast<double>(trials[i].first_event));
    out += fmt::format(
        "<g class=\"trial-group\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
        "y2=\"{2:.1f}\" stroke=\"#555\" stroke-width=\"1.5\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
        "font-size=\"13\" font-weight=\"bold\" fill=\"#333\">{5}</text></g>",
        x, f.top - 30, f.bottom(), x + 3, f.top - 20, xml_escape(group(trials[i])));
  }
  return out;
}

}  // namespace

// Each trial of a search as a band over its events, green when it fitted and red when it ran out
// of memory, its batch above it where there is room (the whole label in its tooltip).
std::string trials_svg(const Frame& f, const RunReport& run) {
  std::string out = "<g id=\"trials\">";
  for (const TrialSpan& t : run.trials) {
    const double x0 = f.x(static_cast<double>(t.first_event));
    const double width = std::max(f.x(static_cast<double>(t.last_event)) - x0, 1.0);
    out += fmt::format(
        "<g class=\"trial {}\"><title>trial {}: {}</title>"
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
        "fill-opacity=\"{}\"/>"
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#bbb\"/>",
        t.fitted ? "fitted" : "failed", xml_escape(t.label),
        t.fitted ? "fitted" : "ran out of memory", x0, f.top, width, f.height,
        t.fitted ? kFittedTrialColour : kFailedTrialColour, t.fitted ? "0.10" : "0.28", x0, f.top,
        x0, f.bottom());
    const std::string batch = t.label.substr(t.label.rfind(' ') + 1);
    if (width >= 8 + 7.0 * static_cast<double>(batch.size())) {
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\" "
          "fill=\"{}\">{}</text>",
          x0 + width / 2, f.top - 5, t.fitted ? "#1e7a1e" : "#b82222", xml_escape(batch));
    }
    out += "</g>";
  }
  return out + trial_groups_svg(f, run.trials) + "</g>\n";
}

// Where a replayed program itself failed: a dotted line and a diamond at that event, labelled
// with its trace entry (the x axis counts events; the report's words count entries).
std::string program_failure_svg(const Frame& f, const RunReport& run) {
  const auto query = program_failure_query(run);
  if (!run.timeline.program_failure_seq || !query) return {};
  const double x = f.x(static_cast<double>(*run.timeline.program_failure_seq));
  const bool left_side = x > f.left + f.width * 0.6;
  return fmt::format(
      "<g id=\"program-failure\" data-event=\"{9}\" stroke=\"{0}\" fill=\"{0}\"><title>the "
      "program itself "
      "failed here (trace entry {1})</title>"
      "<line x1=\"{2:.1f}\" y1=\"{3:.1f}\" x2=\"{2:.1f}\" y2=\"{4:.1f}\" stroke-width=\"2\" "
      "stroke-dasharray=\"2 3\"/><path d=\"M{2:.1f},{5:.1f}l7,9l-7,9l-7,-9z\"/>"
      "<text x=\"{6:.1f}\" y=\"{7:.1f}\" text-anchor=\"{8}\" stroke=\"none\" font-size=\"13\" "
      "font-weight=\"bold\">the program itself failed here (trace entry {1})</text></g>\n",
      kProgramColour, format_count(query->entry), x, f.top, f.bottom(), f.bottom() - 20,
      left_side ? x - 10 : x + 10, f.top + 40, left_side ? "end" : "start",
      *run.timeline.program_failure_seq);
}

void add_marks_legend(const RunReport& run, std::vector<LegendItem>& items) {
  if (run.timeline.program_failure_seq) {
    items.push_back(
        {fmt::format(R"(<path d="M11,-14l6,8l-6,8l-6,-8z" fill="{}"/>)", kProgramColour),
         "where the program itself failed"});
  }
  if (!run.trials.empty()) {
    items.push_back({fmt::format("<rect width=\"22\" height=\"12\" y=\"-10\" fill=\"{}\" "
                                 "fill-opacity=\"0.25\"/>",
                                 kFittedTrialColour),
                     "a trial that fitted (its batch above)"});
    items.push_back({fmt::format("<rect width=\"22\" height=\"12\" y=\"-10\" fill=\"{}\" "
                                 "fill-opacity=\"0.5\"/>",
                                 kFailedTrialColour),
                     "a trial that ran out of memory"});
  }
}

}  // namespace oomlab::svg
