#include "pytorch/reports/series_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab {

namespace {

std::string cell(const std::optional<std::uint64_t>& largest, const FitRange& range) {
  if (!largest) return fmt::format("<{}", range.lo);
  if (*largest == range.hi) return fmt::format(">={}", range.hi);
  return std::to_string(*largest);
}

std::vector<std::uint64_t> values_of(const trace::TraceSeries& series) {
  std::vector<std::uint64_t> out;
  for (const trace::SeriesPoint& p : series.points())
    out.push_back(p.value);
  return out;
}

// The answer: the best setting on the largest card, against native.
std::string answer_line(const SeriesTableSubject& s, const SeriesTable& table) {
  if (s.cards.empty() || table.rows.empty()) return "no card asked";
  const std::size_t last = s.cards.size() - 1;
  std::size_t best = 0;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    if (table.rows[i].fraction) continue;
    if (table.rows[i].largest[last].value_or(0) > table.rows[best].largest[last].value_or(0))
      best = i;
  }
  const SeriesRow& b = table.rows[best];
  return fmt::format("{} holds {}={} with {} (native: {}); predicted from the snapshots, not run",
                     s.cards[last].name, s.range.name, cell(b.largest[last], s.range), b.setting,
                     cell(table.rows[0].largest[last], s.range));
}

}  // namespace

std::string series_table_text(const SeriesTableSubject& s, const trace::TraceSeries& series,
                              const SeriesTable& table) {
  std::string out = answer_line(s, table) + "\n\n";
  out +=
      fmt::format("the largest {} each card holds, made from {}={} ({}) · {} replays in {:.1f} s\n",
                  s.range.name, s.range.name, fmt::join(values_of(series), ","), s.pattern,
                  format_count(table.replays), table.duration_ms / 1000.0);
  std::size_t width = 7;
  for (const SeriesRow& row : table.rows)
    width = std::max(width, row.setting.size());
  out += fmt::format("{:<{}}", "setting", width);
  for (const SeriesCard& card : s.cards)
    out += fmt::format("  {:>12}", card.name);
  out += '\n';
  for (const SeriesRow& row : table.rows) {
    out += fmt::format("{:<{}}", row.setting, width);
    for (const std::optional<std::uint64_t>& largest : row.largest)
      out += fmt::format("  {:>12}", cell(largest, s.range));
    out += '\n';
  }
  for (const SeriesCard& card : s.cards) {
    out += fmt::format("note: {}: {} for the allocator ({} less {} outside it)\n", card.name,
                       format_bytes(card.budget_bytes), format_bytes(card.card_bytes),
                       format_bytes(s.outside_bytes));
  }
  if (s.outside_bytes == 0) {
    out +=
        "note: nothing is counted outside PyTorch's allocator (--outside SIZE adds the CUDA "
        "context and libraries' workspaces a process holds: about 0.75 GiB for PyTorch on an "
        "H100; fit exec measures it)\n";
  }
  for (const std::string& note : s.notes)
    out += "note: " + note + '\n';
  out += fmt::format("note: '<{}': not even {}={} fits; '>={}': the whole range fits\n", s.range.lo,
                     s.range.name, s.range.lo, s.range.hi);
  return out;
}

nlohmann::ordered_json series_table_json(const SeriesTableSubject& s,
                                         const trace::TraceSeries& series,
                                         const SeriesTable& table) {
  using ojson = nlohmann::ordered_json;
  ojson cards = ojson::array();
  for (const SeriesCard& card : s.cards) {
    cards.push_back({{"name", card.name},
                     {"card_bytes", card.card_bytes},
                     {"budget_bytes", card.budget_bytes}});
  }
  ojson rows = ojson::array();
  for (const SeriesRow& row : table.rows) {
    ojson largest = ojson::array();
    for (const std::optional<std::uint64_t>& v : row.largest)
      largest.push_back(v ? ojson(*v) : ojson(nullptr));
    rows.push_back({{"setting", row.setting},
                    {"alloc_conf", row.alloc_conf},
                    {"fraction_cap", row.fraction},
                    {"largest", largest},
                    {"replays", row.replays}});
  }
  const trace::SeriesFit& f = series.fit();
  return {{"schema", kFitSchema},
          {"oomlab", version_json()},
          {"predicted", true},
          {"range", {{"name", s.range.name}, {"lo", s.range.lo}, {"hi", s.range.hi}}},
          {"made_from",
           {{"trace", s.pattern},
            {"values", values_of(series)},
            {"requests", f.requests},
            {"matched", f.matched},
            {"aligned_share", f.aligned_share}}},
          {"outside_bytes", s.outside_bytes},
          {"cards", cards},
          {"rows", rows},
          {"replays", table.replays},
          {"duration_ms", table.duration_ms},
          {"notes", s.notes}};
}

}  // namespace oomlab
