#include "cli/scenario_cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include "allocators/backends.hpp"
#include "cli/exec_cli.hpp"
#include "cli/help_text.hpp"
#include "cli/parse.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/trace_format.hpp"

namespace oomlab::cli {

namespace {

// "a, b or c".
std::string listed_or(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

// The catalogue's backends, and what `auto` replays through each model of a recorded allocator.
std::string allocator_help() {
  std::vector<std::string> names;
  std::vector<std::string> models;
  for (const BackendInfo& b : backend_catalog()) {
    if (b.kind == BackendKind::automatic) continue;
    names.push_back(b.name);
    if (!b.replays.empty()) models.push_back(fmt::format("{} for {}", b.name, b.replays));
  }
  names.emplace_back(fmt::format("auto ({}{}async with a GPU, else sim)", fmt::join(models, "; "),
                                 models.empty() ? "" : "; otherwise "));
  return "NAME[:opt=value,...]: " + listed_or(names);
}

std::string format_names() {
  std::vector<std::string> names;
  for (const trace::FormatInfo& f : trace::formats())
    names.push_back(f.name);
  return listed_or(names);
}

}  // namespace

void add_scenario_options(CLI::App* sub, RunOptions& o, bool required) {
  auto* scenario = sub->add_option("scenario", o.scenario, "the scenario (see 'oomlab list')");
  if (required) scenario->required();
  sub->add_option("--allocator,-a", o.allocator, allocator_help())->capture_default_str();
  if (const SettingsSpelling* spelling = settings_spelling())
    sub->add_option(spelling->flag, o.spelled_settings, spelling->help);
  sub->add_option("--seed", o.seed, "seed of the scenario's random choices")->capture_default_str();
  sub->add_option("--param,-p", o.params, "KEY=VALUE for the scenario (repeatable)");
  sub->add_option("--trace", o.trace, "replay: the trace file (same as --param trace=FILE)");
  sub->add_option("--format", o.format,
                  fmt::format("replay: auto, {} (same as --param format=)", format_names()));
  sub->add_flag("--strict", o.strict,
                "replay: a free of an unknown address, or an allocation at a live one, is an "
                "error (--param strict=on)");
  sub->add_option("--device,-d", o.device, "CUDA device index")->capture_default_str();
  sub->add_option(
         "--verify", o.verify,
         "data-integrity checks on real devices: all (fill every block when allocated, verify at "
         "OOM and at the end), sample (one block in 64 and every one of 64 MiB or more), off")
      ->capture_default_str();
  sub->add_flag(
      "--no-probe", o.no_probe,
      "skip the largest-free-block search at OOM (faster; fragmentation is then inferred)");
}

void add_frontier(CLI::App& command, RunOptions& run, ExecOptions& program) {
  CLI::App* frontier = &command;
  add_scenario_options(frontier, run, false);  // or `frontier exec`
  add_frontier_exec(*frontier, program);
  frontier->require_subcommand(0, 1);
  run.budget = "all";
  frontier
      ->add_option(
          "--budget,-b", run.budget,
          "the largest budget tried: a size, N% of the device, all, or a card's name (the sim's "
          "'total' option on sim: ask 'does it fit on 24 GiB?' with -a sim:total=24GiB)")
      ->capture_default_str();
  frontier->add_option("--json", run.json,
                       "also write the result as JSON to FILE; '-' prints it alone");
  frontier->add_flag("--quiet,-q", run.quiet, "only the answer");
  frontier->add_option("--timeout", run.timeout,
                       "SECONDS: each trial's limit; a trial past it stops the search (exit 4)");
  frontier->add_option("--out,-o", run.out, "folder for frontier.json; not one that holds one");
  frontier->add_flag("--force", run.force,
                     "--out may name a folder holding a frontier: replace it");
  frontier->add_option(
      "--junit", run.junit,
      "also write the answer as JUnit XML to FILE (one testcase); '-' prints it alone");
  frontier->footer(frontier_footer());
}

void add_fit(CLI::App& command, FitOptions& o, FitExecOptions& program) {
  CLI::App* fit = &command;
  add_scenario_options(fit, o.run, false);  // or `fit exec`
  add_fit_exec(*fit, program);
  fit->require_subcommand(0, 1);
  fit->add_option(
      "--range", o.range,
      "NAME=LO..HI: the whole-number parameter searched, and its values (steps=1..1000)");
  fit->add_option("--budget,-b", o.run.budget,
                  "the card: a size, N% of the device, all, or a card's name (T4, L4, A100-80GB, "
                  "H100: oomlab list --cards)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.budget_given = true; });
  fit->add_option("--confirm", o.confirm,
                  "N: run the answer and the value above it N more times each")
      ->capture_default_str();
  fit->add_option("--json", o.run.json,
                  "also write oomlab.fit.v1 JSON to FILE; '-' prints it alone");
  fit->add_flag("--quiet,-q", o.run.quiet, "only the answer");
  fit->add_option("--timeout", o.run.timeout,
                  "SECONDS: each trial's limit; a trial past it stops the search (exit 4)");
  fit->add_option("--from", o.from,
                  "NAME=V1,V2[,...]: replay: --trace is a pattern with {NAME} where each "
                  "snapshot's value goes ('runs/snap_b{batch}.pickle', or a framework's log: "
                  "any trace format of oomlab list that records a program's requests), all "
                  "recorded under the same allocator settings, none ending at an OOM; each trial "
                  "replays the trace made at its value from them: the answer is predicted, not "
                  "run");
  fit->add_option("--cards", o.cards,
                  "with --from: CARD,CARD,... (T4,L4,A100-40GB,H100 or sizes): a table of the "
                  "largest value each holds under each of the allocator's settings (where the "
                  "snapshots' framework makes one; otherwise --budget CARD, one at a time)");
  fit->add_option(
         "--outside", o.outside,
         "with --from: what the process holds outside the framework's allocator (the CUDA "
         "context, libraries' workspaces), taken from the budget or from each of --cards; an "
         "allocator with an outside= option (a pool that is a share of the whole card) "
         "is given it instead")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.outside_given = true; });
  fit->add_option(
         "--transients", o.transients,
         "with --from: how requests that live inside one call and change with the value "
         "(cuDNN's workspaces) are made: 'lines' (on their line: the program needs "
         "them), 'held' (at the largest snapshot's size), 'refusable' (asked for on "
         "their line and given up when refused, as a framework's convolutions fall back to "
         "an algorithm with a smaller workspace: the most a capped program can fit)")
      ->capture_default_str();
  fit->add_option("--out,-o", o.run.out, "folder for fit.json; not one that holds one");
  fit->add_flag("--force", o.run.force, "--out may name a folder holding a fit: replace it");
  fit->footer(fit_footer());
}

}  // namespace oomlab::cli
