// `oomlab fit SCENARIO --range NAME=LO..HI`: the largest value of a scenario's parameter that
// completes under the budget.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/fit_options.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "reports/searches/search_json.hpp"
#include "run/fit.hpp"

namespace oomlab::cli {

int fit_command(const FitOptions& o, std::ostream& out, std::ostream& err) {
  Console console(err, false);
  if (o.run.scenario.empty()) {
    throw_usage(
        "fit: give a scenario (oomlab fit leak -a sim --budget 1GiB --range steps=1..100000) or "
        "a program (oomlab fit exec --budget 24GiB --range batch=1..512 -- CMD ... {batch})");
  }
  if (!o.from.empty()) return fit_series_command(o, out, err);
  if (!o.cards.empty()) throw_usage("--cards needs --from: the table is made from snapshots");
  if (o.outside_given) {
    throw_usage(
        "--outside needs --from: it is taken from the budget of the traces made from snapshots "
        "(a run of a scenario has no memory outside its allocator)");
  }
  if (o.transients != "lines") {
    throw_usage(
        "--transients needs --from: it says how a trace made from snapshots makes its "
        "transient requests");
  }
  const FitRange range = parse_fit_range(o.range);
  const unsigned confirm = parse_confirm(o.confirm);
  RunConfig config = config_from(o.run);  // names an unknown scenario first
  for (const std::string& note : read_budget(o.run.budget).notes)
    console.notice(note);
  check_fit_parameter(range, o.run.scenario, Registry::global().find(o.run.scenario)->params,
                      o.run.params);
  check_destination("--json", o.run.json);
  prepare_out_folder(o.run.out, o.run.force, "fit.json");
  if (!o.budget_given) {
    console.notice(
        fmt::format("--budget not given: the answer is for the default {}; --budget "
                    "names the card (a size, N% of the device, all, or a card's name)",
                    format_bytes(parse_budget(o.run.budget).bytes.value)));
  }
  resolve_allocator(config, console);
  config.notice = [&](std::string_view text) { console.notice(text); };
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  FitResult result;
  try {
    result =
        fit_scenario(config, {.range = range, .confirm = confirm, .on_trial = [&](const Trial& t) {
                                if (!o.run.quiet)
                                  err << value_trial_line(range.name, t) << '\n' << std::flush;
                              }});
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every run freed what it took\n";
    return kExitInterrupted;
  }
  const SearchSubject subject{
      .scenario = config.scenario,
      .params = config.params,
      .seed = config.seed,
      .allocator = result.allocator,
      .backend = result.backend,
      .allocator_options = result.allocator_options,
      .simulated = result.simulated,
      .environment = result.environment,
      .device = result.device,
      .kept_back_bytes = kept_back_bytes(result.device ? &*result.device : nullptr)};
  std::ostream& said = words_stream(o.run.json, out, err);
  const std::string answer =
      fit_answer(result, fmt::format("{} on {}{}", config.scenario, result.allocator,
                                     result.simulated ? " (simulated)" : ""));
  said << answer << '\n';
  if (result.answer && !o.run.quiet)
    said << cards_line(result.budget_bytes, subject.kept_back_bytes) << '\n';
  write_search_json(o.run.json, o.run.out, "fit.json",
                    fit_json(subject, result, answer).dump(2) + "\n", out);
  return fit_exit_code(result);
}

}  // namespace oomlab::cli
