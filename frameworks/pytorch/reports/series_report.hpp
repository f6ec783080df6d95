// A card table made from a program's snapshot series (pytorch/settings/series_table.hpp): the
// largest value each card holds under each setting, as text (the answer first) and as
// oomlab.fit.v1 JSON marked predicted (its "cards" table, the series it was made from).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pytorch/settings/series_table.hpp"

namespace oomlab::torch {

struct SeriesTableSubject {
  std::string pattern;  // the snapshots' --trace pattern
  FitRange range;
  std::vector<SeriesCard> cards;
  std::uint64_t outside_bytes = 0;
  std::vector<std::string> notes;  // the series' own (cli's series_notes)
};

[[nodiscard]] std::string series_table_text(const SeriesTableSubject& subject,
                                            const trace::TraceSeries& series,
                                            const SeriesTable& table);
[[nodiscard]] nlohmann::ordered_json series_table_json(const SeriesTableSubject& subject,
                                                       const trace::TraceSeries& series,
                                                       const SeriesTable& table);

}  // namespace oomlab::torch
