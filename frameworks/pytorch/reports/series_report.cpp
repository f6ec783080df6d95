#include "pytorch/reports/series_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "oomlab/units.hpp"
#include "record/formats.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab::torch {

namespace {

std::string cell(const std::optional<std::uint64_t>& largest, const FitRange& range) {
  if (!largest) return fmt::format("<{}", range.lo);
  if (*largest == range.hi) return fmt::format(">={}", range.hi);
  return std::to_string(*largest);
}

// An approximate row's cell reads as one: "~52".
std::string row_cell(const SeriesRow& row, std::size_t card, const FitRange& range) {
  return (row.approximate ? "~" : "") + cell(row.largest[card], range);
}

std::vector<std::uint64_t> values_of(const trace::TraceSeries& series) {
  std::vector<std::uint64_t> out;
  for (const trace::SeriesPoint& p : series.points())
    out.push_back(p.value);
  return out;
}

// The best exact setting on the largest card: a fraction cap is no card's setting, and an
// approximate model's value is a reading, not an answer.
std::size_t best_row(const SeriesTable& table, std::size_t card) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const SeriesRow& row = table.rows[i];
    if (row.fraction_cap || row.approximate) continue;
    if (row.largest[card].value_or(0) > table.rows[best].largest[card].value_or(0)) best = i;
  }
  return best;
}

// The answer: the best setting on the largest card, against native.
std::string answer_line(const SeriesTableSubject& s, const SeriesTable& table) {
  if (s.cards.empty() || table.rows.empty()) return "no card asked";
  const std::size_t last = s.cards.size() - 1;
  const SeriesRow& b = table.rows[best_row(table, last)];
  return fmt::format("{} holds {}={} with {} (native: {}); predicted from the snapshots, not run",
                     s.cards[last].name, s.range.name, cell(b.largest[last], s.range), b.setting,
                     cell(table.rows[0].largest[last], s.range));
}

// An approximate row that holds more than the answer's setting: said, and why it is not the
// answer.
std::optional<std::string> approximate_note(const SeriesTableSubject& s, const SeriesTable& table) {
  if (s.cards.empty() || table.rows.empty()) return std::nullopt;
  const std::size_t last = s.cards.size() - 1;
  const SeriesRow& b = table.rows[best_row(table, last)];
  for (const SeriesRow& row : table.rows) {
    if (!row.approximate || row.largest[last].value_or(0) <= b.largest[last].value_or(0)) continue;
    return fmt::format(
        "{} reads {} on {}, more than {}'s {}: it is a model of the driver's pool from "
        "measurements, not byte-exact (its frontiers have been up to 9% off PyTorch's), so the "
        "answer names the best exact setting",
        row.setting, row_cell(row, last, s.range), s.cards[last].name, b.setting,
        cell(b.largest[last], s.range));
  }
  return std::nullopt;
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
    for (std::size_t c = 0; c < row.largest.size(); ++c)
      out += fmt::format("  {:>12}", row_cell(row, c, s.range));
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
  if (const auto approximate = approximate_note(s, table)) out += "note: " + *approximate + '\n';
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
                    {"alloc_conf", row.settings},
                    {"fraction_cap", row.fraction_cap},
                    {"approximate", row.approximate},
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

}  // namespace oomlab::torch
