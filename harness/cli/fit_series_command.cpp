// `oomlab fit replay --trace 'DIR/snap_b{batch}.pickle' --from batch=1,2 --range batch=LO..HI
// --budget SIZE|CARD`: the largest value that fits, predicted from a program's snapshots at two
// or more values without running it (each trial a replay of the trace made at its value); with
// --cards, the table of the largest value per card and allocator setting.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>

#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/fit_options.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/series_cli.hpp"
#include "cli/signals.hpp"
#include "device/cards.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab::cli {

namespace {

// The device trace each snapshot is read at, as a replay reads it: -p device=N when given, else
// the one that holds a history.
trace::LoadOptions replayed_device(const Params& params) {
  trace::LoadOptions options{.device_option = "-p device="};
  if (params.values().contains("device") && params.was_set("device"))
    options.device = static_cast<std::uint32_t>(params.integer("device"));
  return options;
}

struct SeriesPlan {
  FitRange range;
  SeriesAsked asked;
  std::string pattern;
  trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::lines;
};

trace::TraceSeries::Rule parse_transients(const std::string& text) {
  using Rule = trace::TraceSeries::Rule;
  if (text == "lines") return Rule::lines;
  if (text == "held") return Rule::held;
  if (text == "refusable") return Rule::refusable;
  throw_usage(
      fmt::format("--transients: '{}': give lines, held or refusable (how requests that live "
                  "inside one call, such as cuDNN's workspaces, are made)",
                  text));
}

SeriesPlan plan_from(const FitOptions& o) {
  const Registry::Entry* player = Registry::global().trace_player();
  if (player == nullptr || o.run.scenario != player->name) {
    throw_usage(fmt::format(
        "--from: only {} takes a series of snapshots (oomlab fit {} --trace "
        "'runs/snap_b{{batch}}.pickle' --from batch=1,2 --range batch=1..64)",
        player != nullptr ? player->name : "replay", player != nullptr ? player->name : "replay"));
  }
  SeriesPlan plan{.range = parse_fit_range(o.range),
                  .asked = parse_series_values(o.from, "--from"),
                  .pattern = o.run.trace,
                  .rule = parse_transients(o.transients)};
  if (plan.range.name != plan.asked.name) {
    throw_usage(fmt::format("--range names '{}', --from names '{}': give the same name",
                            plan.range.name, plan.asked.name));
  }
  if (plan.pattern.empty()) throw_usage("--from needs --trace: the snapshots' pattern");
  if (!o.cards.empty() && o.budget_given) {
    throw_usage(
        "--budget and --cards: give one (--cards names the cards the table answers for, each "
        "less --outside)");
  }
  return plan;
}

// Where transient requests change with the value, the answer under the other bound: refusable
// (the most a capped program fits) beside lines, or lines beside the others.
struct OtherBound {
  trace::TraceSeries::Rule rule = trace::TraceSeries::Rule::refusable;
  std::optional<std::uint64_t> value;  // none: no value completes
};

std::optional<OtherBound> other_bound(const RunConfig& config, const trace::TraceSeries& series,
                                      const SeriesPlan& plan) {
  using Rule = trace::TraceSeries::Rule;
  if (series.fit().transient == 0) return std::nullopt;
  const Rule other = plan.rule == Rule::refusable ? Rule::lines : Rule::refusable;
  RunConfig quiet = config;  // the first search said what the trace holds
  quiet.notice = nullptr;
  const FitResult r = fit_series(quiet, series, {.range = plan.range}, other);
  return OtherBound{.rule = other, .value = r.answer};
}

std::string other_bound_note(const OtherBound& b, const std::string& name) {
  using Rule = trace::TraceSeries::Rule;
  return fmt::format("with --transients {}: {} ({})", trace::to_string(b.rule),
                     b.value ? fmt::format("{}={}", name, *b.value) : "no value completes",
                     b.rule == Rule::refusable
                         ? "each given up when refused, as a capped program's convolutions do: "
                           "the most it fits"
                         : "each needed at its line's size: the least it fits");
}

// --outside with --budget: the allocator's budget is the card's less what the process holds
// outside it; the budget must then be a size or a card's name. An allocator that takes what lies
// beside it from the card itself (its `outside` option: a pool sized as a share of the whole card)
// keeps the card as its budget and is given the figure instead, unless its option was given too.
// Called once the allocator is resolved. None without --outside.
std::optional<std::string> take_outside(const FitOptions& o, RunConfig& config) {
  const std::uint64_t outside = parse_outside(o.outside);
  if (!o.outside_given || outside == 0) return std::nullopt;
  const BudgetRequest& b = config.budget;
  std::uint64_t card = 0;
  if (b.kind == BudgetRequest::Kind::bytes) {
    card = b.bytes.value;
  } else if (b.kind == BudgetRequest::Kind::card && b.card != nullptr) {
    card = card_budget_bytes(*b.card, kept_back_bytes(nullptr));
  } else {
    throw_usage("--outside: give --budget as a size or a card's name, from which it is taken");
  }
  if (card <= outside) {
    throw_usage(fmt::format("--outside: {} is no less than the budget ({})", format_bytes(outside),
                            format_bytes(card)));
  }
  if (config.allocator_options.values().contains("outside")) {
    if (config.allocator_options.was_set("outside")) {
      throw_usage("--outside: the allocator's own outside= option is given too: give one");
    }
    config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{card}};
    config.allocator_options.set("outside", Bytes{outside});
    return fmt::format(
        "the card's {} holds --outside {} beside the allocator, whose pool is still its share "
        "of the whole card (the allocator's outside= option)",
        format_bytes(card), format_bytes(outside));
  }
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{card - outside}};
  return fmt::format(
      "the allocator's budget: the card's {} less --outside {} (held outside the "
      "framework's allocator) = {}",
      format_bytes(card), format_bytes(outside), format_bytes(card - outside));
}

}  // namespace

int fit_series_command(const FitOptions& o, std::ostream& out, std::ostream& err) {
  Console console(err, false);
  const SeriesPlan plan = plan_from(o);
  RunOptions first = o.run;  // the run's checks and `auto` read the first snapshot's head
  first.trace = series_path(plan.pattern, plan.asked.name, plan.asked.values.front());
  RunConfig config = config_from(first);
  check_destination("--json", o.run.json);
  prepare_out_folder(o.run.out, o.run.force, "fit.json");
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  try {
    const trace::TraceSeries series =
        load_series(plan.pattern, plan.asked, replayed_device(config.params), [stop = config.stop] {
          if (stop != nullptr && stop->load()) throw Interrupted();
        });
    if (const auto why = series.misaligned())
      throw Error(ErrorKind::input, fmt::format("--from {}: {}", plan.pattern, *why));
    if (!o.cards.empty()) {
      const RecordedSettings* recorded = trace::allocator_settings(*series.points().front().trace);
      const std::string backend = recorded != nullptr ? recorded->backend : std::string();
      const SeriesTableRun* table = command_table().series_table(backend);
      if (table == nullptr) {
        throw_usage(fmt::format(
            "--cards: no table of settings by card for {}: ask one card at a time with --budget "
            "CARD (oomlab list --cards), and a setting with --allocator",
            backend.empty() ? std::string("snapshots that record no allocator")
                            : fmt::format("snapshots of the '{}' allocator", backend)));
      }
      return (*table)({.series = series,
                       .range = plan.range,
                       .pattern = plan.pattern,
                       .rule = plan.rule,
                       .options = o,
                       .notes = series_notes(series, plan.rule),
                       .out = out,
                       .err = err});
    }
    for (const std::string& note : read_budget(o.run.budget).notes)
      console.notice(note);
    if (!o.budget_given) {
      console.notice(
          fmt::format("--budget not given: the answer is for the default {}; --budget "
                      "names the card (a size, or a card's name: oomlab list --cards)",
                      format_bytes(parse_budget(o.run.budget).bytes.value)));
    }
    resolve_allocator(config, console);
    const std::optional<std::string> outside = take_outside(o, config);
    config.notice = [&](std::string_view text) { console.notice(text); };
    FitResult result = fit_series(config, series,
                                  {.range = plan.range,
                                   .confirm = parse_confirm(o.confirm),
                                   .on_trial =
                                       [&](const Trial& t) {
                                         if (!o.run.quiet)
                                           err << value_trial_line(plan.range.name, t) << '\n';
                                       }},
                                  plan.rule);
    if (config.allocator_options.values().contains("outside"))
      result.beside_bytes = config.allocator_options.bytes("outside");
    std::ostream& said = words_stream(o.run.json, out, err);
    const std::string answer = fit_answer(
        result, fmt::format("{} made from {}={} on {} (predicted, not run)", plan.pattern,
                            plan.asked.name, fmt::join(plan.asked.values, ","), result.allocator));
    said << answer << '\n';
    const std::optional<OtherBound> other = other_bound(config, series, plan);
    if (!o.run.quiet) {
      if (outside) said << "note: " << *outside << '\n';
      for (const std::string& note : series_notes(series, plan.rule))
        said << "note: " << note << '\n';
      if (other) said << "note: " << other_bound_note(*other, plan.range.name) << '\n';
    }
    const SearchSubject subject{.scenario = config.scenario,
                                .params = config.params,
                                .seed = config.seed,
                                .allocator = result.allocator,
                                .backend = result.backend,
                                .allocator_options = result.allocator_options,
                                .simulated = result.simulated,
                                .environment = result.environment,
                                .kept_back_bytes = kept_back_bytes(nullptr)};
    nlohmann::ordered_json doc = fit_json(subject, result, answer);
    if (other) {
      doc["made_from"]["other_bound"] = {
          {"transients", trace::to_string(other->rule)},
          {"value", other->value ? nlohmann::ordered_json(*other->value) : nullptr}};
    }
    if (outside) doc["outside_bytes"] = parse_outside(o.outside);
    write_search_json(o.run.json, o.run.out, "fit.json", doc.dump(2) + "\n", out);
    return fit_exit_code(result);
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every replay freed what it took\n";
    return kExitInterrupted;
  }
}

}  // namespace oomlab::cli
