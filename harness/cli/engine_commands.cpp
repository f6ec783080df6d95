// The engine's commands in the command table: each one's name, summary, flags and run, in the
// order `oomlab --help` lists them. A framework's come from its own face (Framework::add_commands).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "allocators/backends.hpp"
#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/exec_cli.hpp"
#include "cli/help_text.hpp"
#include "cli/report_writer.hpp"
#include "cli/scenario_cli.hpp"

namespace oomlab::cli {

namespace {

CommandRun define_run(CLI::App& run) {
  auto o = std::make_shared<RunOptions>();
  add_scenario_options(&run, *o);
  run.add_option("--budget,-b", o->budget,
                 "memory the run may use: a size (8GiB, 512MiB, 1.5GB), N% of the device, or all; "
                 "clamped to free memory")
      ->capture_default_str();
  auto* out = run.add_option("--out,-o", o->out,
                             "folder for events.csv and summary.json (default oomlab-runs/<UTC "
                             "time>-<scenario>-<allocator>); not one that holds a run");
  run.add_flag("--no-out", o->no_out, "write no run folder (CI with --json -)")->excludes(out);
  run.add_flag("--force", o->force, "--out may name a folder holding a run: replace it");
  run.add_option("--json", o->json,
                 "also write summary.json to FILE; '-' prints it alone on stdout");
  run.add_option("--csv", o->csv, "also write events.csv to FILE");
  auto* expect_oom =
      run.add_flag("--expect-oom", o->expect_oom, "exit 1 unless the run ends in OOM");
  auto* expect_no_oom =
      run.add_flag("--expect-no-oom", o->expect_no_oom, "exit 1 if the run ends in OOM");
  expect_oom->excludes(expect_no_oom);
  run.add_flag("--quiet,-q", o->quiet, "no summary and no progress line (notices still show)");
  run.add_option("--junit", o->junit,
                 "also write the outcome as JUnit XML to FILE (one testcase); '-' prints it alone "
                 "(not with --json -)");
  run.add_option("--repeat", o->repeat,
                 "N: soak: run it N times in this process, checking after each cycle that the "
                 "process's memory, the device's free memory and the allocator's blocks all come "
                 "back (soak.json; exit 1 if not)")
      ->capture_default_str();
  run.add_option("--timeout", o->timeout,
                 "SECONDS: stop the run there (outcome timeout, everything freed, exit 4); a call "
                 "that never returns ends the process with the record written");
  run.footer(run_footer() + scenario_and_allocator_overview());
  return [o](const CommandCall& c) { return run_command(*o, c.argv, c.out, c.err); };
}

// `frontier SCENARIO` and `frontier exec -- CMD`.
CommandRun define_frontier(CLI::App& frontier) {
  auto run = std::make_shared<RunOptions>();
  auto program = std::make_shared<ExecOptions>();
  add_frontier(frontier, *run, *program);
  CLI::App* exec = frontier.get_subcommand("exec");
  return [run, program, exec](const CommandCall& c) {
    if (exec->parsed()) {
      program->command = c.program;
      return frontier_exec_command(*program, c.out, c.err);
    }
    return frontier_command(*run, c.out, c.err);
  };
}

// `fit SCENARIO` and `fit exec -- CMD`.
CommandRun define_fit(CLI::App& fit) {
  auto options = std::make_shared<FitOptions>();
  auto program = std::make_shared<FitExecOptions>();
  add_fit(fit, *options, *program);
  CLI::App* exec = fit.get_subcommand("exec");
  return [options, program, exec](const CommandCall& c) {
    if (exec->parsed()) {
      program->exec.command = c.program;
      return fit_exec_command(*program, c.out, c.err);
    }
    return fit_command(*options, c.out, c.err);
  };
}

CommandRun define_exec(CLI::App& exec) {
  auto o = std::make_shared<ExecOptions>();
  add_exec(exec, *o);
  return [o](const CommandCall& c) {
    o->command = c.program;
    return exec_command(*o, c.argv, c.out, c.err);
  };
}

// Every allocator of the catalogue, as --allocators takes them.
std::string allocator_names() {
  std::vector<std::string_view> names;
  for (const BackendInfo& b : backend_catalog())
    names.push_back(b.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

CommandRun define_matrix(CLI::App& m) {
  auto o = std::make_shared<MatrixOptions>();
  m.add_option("--scenarios,-s", o->scenarios,
               "all, none, or a comma list (all skips scenarios whose required parameters are "
               "not given; with --exec and no --scenarios, none)")
      ->capture_default_str()
      ->each([o](const std::string&) { o->scenarios_given = true; });
  m.add_option("--exec", o->execs,
               "NAME=COMMAND: a program as a cell (repeatable), run by `oomlab exec` under "
               "--budget through /bin/sh -c, recorded and compared like the scenario cells");
  m.add_option("--allocators,-a", o->allocators,
               fmt::format("comma list of {} (NAME:opt=v allowed)", allocator_names()))
      ->capture_default_str();
  m.add_option("--budget,-b", o->budget, "each cell's budget: a size, N% of the device, or all")
      ->capture_default_str();
  m.add_option("--seed", o->seed, "seed of every cell")->capture_default_str();
  m.add_option("--repeat,-r", o->repeat, "runs per cell; the spread of the OOM point is reported")
      ->capture_default_str();
  m.add_option("--timeout", o->timeout,
               "seconds a cell may run before it is killed and recorded as timeout")
      ->capture_default_str();
  m.add_option("--devices,--gpus,-d", o->devices,
               "CUDA devices (--gpus the same): 0,1 or all; cells on different devices run in "
               "parallel, one cell at a time on each")
      ->capture_default_str();
  m.add_option("--param,-p", o->params,
               "KEY=VALUE for every cell whose scenario declares KEY (repeatable)");
  m.add_option("--verify", o->verify, "data-integrity checks in each cell: all, sample, off")
      ->capture_default_str();
  m.add_option("--out,-o", o->out,
               "folder for matrix.json and the cells (default oomlab-runs/<UTC time>-matrix)");
  m.add_flag("--force", o->force, "--out may name a folder holding a matrix: replace it");
  m.add_option("--junit", o->junit,
               "also write JUnit XML to FILE, one testcase per cell; '-' prints it alone (the "
               "table on stderr)");
  m.add_flag("--quiet,-q", o->quiet, "only the table");
  m.footer(matrix_footer());
  return [o](const CommandCall& c) { return matrix_command(*o, c.argv, c.out, c.err); };
}

CommandRun define_report(CLI::App& r) {
  auto o = std::make_shared<ReportOptions>();
  r.description(
      fmt::format("self-contained HTML and Markdown for {} folders", report_kinds_words()));
  r.add_option("paths", o->paths,
               fmt::format("folders holding {}, or those files", report_files_words()))
      ->required();
  r.add_option("--out,-o", o->out,
               "folder for report.html and report.md (default: beside each input)");
  r.add_flag("--remodel", o->remodel,
             "re-diagnose run folders (exec's and run's) with this oomlab first: the program's "
             "output and snapshots read again, a simulated run made again; the report says "
             "which oomlab wrote the stored verdict and what changed, and remodel.json holds "
             "the new record");
  r.footer(report_footer());
  return [o](const CommandCall& c) { return report_command(*o, c.out, c.err); };
}

CommandRun define_compare(CLI::App& c) {
  auto o = std::make_shared<CompareOptions>();
  c.add_option("files", o->files,
               "BASELINE CURRENT: each a summary.json, a matrix.json, or a folder holding one; "
               "with --fleet, two runners' or more (and with --pick-baseline, one info.json, "
               "summary.json or matrix.json)");
  c.add_option("--tolerance", o->tolerance,
               "how far the OOM point (bytes and step) may move and still be 'same', e.g. 2% "
               "(wider where --repeat measured a spread)")
      ->capture_default_str();
  c.add_option("--json", o->json, "also write the verdicts as JSON to FILE; '-' prints it alone");
  c.add_option("--markdown", o->markdown,
               "also write a Markdown table to FILE; '-' prints it alone");
  c.add_option("--junit", o->junit, "also write JUnit XML to FILE, one testcase per cell");
  c.add_flag("--allow-missing", o->allow_missing,
             "baseline cells missing from the current, or no cell matched, do not fail (exit 6)");
  c.add_flag("--fleet", o->fleet,
             "every FILE is one runner's: one row per cell, one column per environment (GPU, "
             "driver, CUDA, framework), each compared with the previous version on its GPU "
             "model");
  c.add_option("--pick-baseline", o->pick_baseline,
               "DIR: print the nightly's baseline in DIR for the GPU and driver FILE ran on "
               "(its own, else the nearest older driver's of the same GPU model) and exit");
  c.footer(compare_footer());
  return [o](const CommandCall& call) { return compare_command(*o, call.out, call.err); };
}

CommandRun define_list(CLI::App& list) {
  struct Flags {
    bool json = false;
    bool cards = false;
  };
  auto f = std::make_shared<Flags>();
  list.add_flag("--json", f->json, "as JSON");
  list.add_flag("--cards", f->cards,
                "the named cards --budget takes: NVML's total, the budget, the source");
  list.footer(list_footer());
  return [f](const CommandCall& c) { return list_command(f->json, f->cards, c.out); };
}

CommandRun define_info(CLI::App& info) {
  auto json = std::make_shared<bool>(false);
  info.add_flag("--json", *json, "as JSON");
  info.footer(info_footer());
  return [json](const CommandCall& c) { return info_command(*json, c.out, c.err); };
}

}  // namespace

void add_engine_commands(CommandTable& table) {
  table.add({.name = "run",
             .summary = "run one scenario against one allocator",
             .place = 10,
             .define = &define_run});
  table.add({.name = "frontier",
             .summary = "the smallest budget at which a scenario completes: on fresh runs, steps "
                        "doubling from what the top run took, then bisection, to 2 MiB",
             .place = 20,
             .define = &define_frontier});
  table.add({.name = "fit",
             .summary = "the largest value of a setting (steps, a batch) at which a scenario "
                        "completes under the budget: doubling, then bisection, on fresh runs",
             .place = 30,
             .define = &define_fit});
  table.add({.name = "exec",
             .summary = "run any CUDA program on a card cut down to the budget, its memory sampled "
                        "and its OOM recognised: oomlab exec [OPTIONS] -- CMD [ARGS...]",
             .place = 40,
             .define = &define_exec});
  table.add({.name = "matrix",
             .summary = "every scenario against every allocator, each cell a child process "
                        "(crash- and hang-proof)",
             .place = 60,
             .define = &define_matrix});
  table.add({.name = "report",
             .summary = "self-contained HTML and Markdown for run, matrix, frontier and fit "
                        "folders",
             .place = 70,
             .define = &define_report});
  table.add({.name = "compare",
             .summary = "verdicts per cell between a baseline and a current run or matrix; exit 1 "
                        "on a regression",
             .place = 80,
             .define = &define_compare});
  table.add({.name = "list",
             .summary = "scenarios with their parameters, allocators with their options",
             .place = 90,
             .define = &define_list});
  table.add({.name = "info",
             .summary = "devices, driver, CUDA versions, memory, pool/managed/VMM support",
             .place = 100,
             .define = &define_info});
}

}  // namespace oomlab::cli
