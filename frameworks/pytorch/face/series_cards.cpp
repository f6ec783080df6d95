// `fit replay --from ... --cards T4,L4,...`: the table of the largest value each card holds under
// each setting of PyTorch's allocator, made from the series the engine read (the CLI's hook,
// CommandTable::series_table).
#include <fmt/format.h>

#include <algorithm>

#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/fit_options.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "device/cards.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "pytorch/face/alloc_conf.hpp"
#include "pytorch/face/face.hpp"
#include "pytorch/reports/series_report.hpp"
#include "pytorch/settings/series_table.hpp"

namespace oomlab::torch {

using namespace oomlab::cli;  // the engine's cli types, which it works in

namespace {

// --cards T4,L4,24GiB: each a named card (its budget on an idle H100's driver) or a size, less
// what the process holds outside the allocator.
std::vector<SeriesCard> parse_cards(const std::string& text, std::uint64_t outside) {
  std::vector<SeriesCard> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string word = text.substr(at, comma - at);
    at = comma + 1;
    BudgetRequest b;
    try {
      b = parse_budget(word);
    } catch (const Error& e) {
      throw_usage(fmt::format("--cards: {}", e.what()));
    }
    std::uint64_t bytes = 0;
    if (b.kind == BudgetRequest::Kind::card) {
      bytes = card_budget_bytes(*b.card, kIdleKeptBackH100);
    } else if (b.kind == BudgetRequest::Kind::bytes) {
      bytes = b.bytes.value;
    } else {
      throw_usage(fmt::format("--cards: '{}': give a card's name or a size (T4,L4,24GiB)", word));
    }
    if (bytes <= outside) {
      throw_usage(fmt::format("--cards: '{}' ({}) is no more than --outside ({})", word,
                              format_bytes(bytes), format_bytes(outside)));
    }
    out.push_back({.name = word, .card_bytes = bytes, .budget_bytes = bytes - outside});
  }
  return out;
}

}  // namespace

int card_table(const SeriesTableCall& call) {
  const FitOptions& o = call.options;
  std::ostream& out = call.out;
  std::ostream& err = call.err;
  const std::uint64_t outside = parse_outside(o.outside);
  SeriesTableRequest request{.series = &call.series,
                             .range = call.range,
                             .cards = parse_cards(o.cards, outside),
                             .stop = StopOnSignal::flag(),
                             .rule = call.rule};
  for (const SeriesCard& c : request.cards)
    request.card_bytes = std::max(request.card_bytes, c.card_bytes);
  if (!o.run.spelled_settings.empty()) {
    static_cast<void>(torch_assignments(o.run.spelled_settings, "--alloc-conf"));
    request.own_options = parse_allocator("torch:" + o.run.spelled_settings).options;
    request.own_name = o.run.spelled_settings;
  }
  const SeriesTable table = series_table(request);
  const SeriesTableSubject subject{.pattern = call.pattern,
                                   .range = call.range,
                                   .cards = request.cards,
                                   .outside_bytes = outside,
                                   .notes = call.notes};
  std::ostream& said = words_stream(o.run.json, out, err);
  said << series_table_text(subject, call.series, table);
  write_search_json(o.run.json, o.run.out, "fit.json",
                    series_table_json(subject, call.series, table).dump(2) + "\n", out);
  return kExitOk;
}

}  // namespace oomlab::torch
