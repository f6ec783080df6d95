// `oomlab compare --fleet FILE...`: every runner's result read, the fleet table written where
// asked; and `compare --pick-baseline DIR FILE`, the nightly's choice of baseline.
#include <fmt/format.h>

#include <sstream>

#include "cli/commands.hpp"
#include "cli/output_failures.hpp"
#include "cli/output_flag.hpp"
#include "oomlab/error.hpp"
#include "reports/matrix/baseline_choice.hpp"
#include "reports/matrix/fleet.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab::cli {

int compare_fleet_command(const CompareOptions& o, double tolerance, std::ostream& out,
                          std::ostream& err) {
  if (o.files.empty())
    throw_usage(
        "compare --fleet: no file given (each runner's matrix.json, summary.json or folder)");
  std::vector<CompareInput> inputs;
  inputs.reserve(o.files.size());
  for (const std::string& file : o.files)
    inputs.push_back(load_compare_input(file));
  const Fleet fleet = compare_fleet(inputs, tolerance);
  // One runner in one environment has nothing to be compared with: "no regression in 0
  // comparisons" would pass a fleet check that checked nothing. One file whose program cells ran
  // under two frameworks is two environments, and is compared.
  if (o.files.size() < 2 && fleet.environments.size() < 2) {
    throw_usage(fmt::format(
        "compare --fleet: {} is one runner in one environment: nothing to compare it with (give "
        "two runners' results or more)",
        o.files.front()));
  }
  OutputFailures failures;
  const auto emit = [&](const std::string& flag_value, const std::string& text) {
    failures.attempt([&] { emit_output(flag_value, text, out); });
  };
  if (!o.json.empty()) emit(o.json, fleet_json(fleet).dump(2) + "\n");
  if (!o.markdown.empty()) emit(o.markdown, fleet_markdown(fleet));
  if (!o.junit.empty()) {
    std::ostringstream xml;
    write_junit(xml, "oomlab.fleet", fleet_junit_cases(fleet));
    emit(o.junit, xml.str());
  }
  const bool on_stdout = to_stdout(o.json) || to_stdout(o.markdown) || to_stdout(o.junit);
  (on_stdout ? err : out) << fleet_table(fleet);
  const std::string incomplete = fleet_incomplete(fleet);
  if (!incomplete.empty()) {
    err << fmt::format(
        "oomlab: {}{}\n", incomplete,
        o.allow_missing ? " (--allow-missing: not a failure)" : " (exit 6 unless --allow-missing)");
  }
  int code = kExitOk;
  if (fleet.regressions() > 0) {
    code = kExitCheckFailed;
  } else if (!incomplete.empty() && !o.allow_missing) {
    code = kExitIncomplete;
  }
  return failures.report(err, code);
}

int pick_baseline_command(const CompareOptions& o, std::ostream& out) {
  if (o.fleet) throw_usage("--pick-baseline and --fleet cannot be given together");
  if (o.files.size() != 1) {
    throw_usage(
        fmt::format("--pick-baseline {}: give one file, the runner's info.json, "
                    "summary.json or matrix.json ({} given)",
                    o.pick_baseline, o.files.size()));
  }
  const RunnerIdentity runner = read_runner_identity(o.files.front());
  const BaselineChoice choice = choose_baseline(o.pick_baseline, runner.gpu, runner.driver);
  out << fmt::format("baseline={}\nown={}\nupgrade={}\nnote={}\n",
                     choice.chosen ? choice.chosen->string() : "", choice.own.string(),
                     choice.upgrade() ? "yes" : "no", baseline_choice_note(choice));
  return kExitOk;
}

}  // namespace oomlab::cli
