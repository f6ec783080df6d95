#include "cli/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "allocators/backends.hpp"
#include "cli/cli_messages.hpp"
#include "cli/commands.hpp"
#include "cli/exec_cli.hpp"
#include "cli/help_text.hpp"
#include "cli/parse.hpp"
#include "cli/scenario_cli.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "plugin/plugin_loader.hpp"

namespace oomlab::cli {

std::vector<std::string>& loaded_plugins() {
  static std::vector<std::string> paths;
  return paths;
}

namespace {

constexpr std::string_view kDescription =
    "oomlab reproduces GPU out-of-memory failures on purpose: a scenario allocates in a pattern "
    "real programs produce, against a real allocator (cudaMalloc, cudaMallocAsync pools, "
    "managed memory) or the host-side model 'sim', and oomlab records where, when and why it ran "
    "out of memory.";

struct Parsed {
  RunOptions run;
  RunOptions frontier;
  ExecOptions exec;
  ExecOptions frontier_exec;
  FitOptions fit;
  FitExecOptions fit_exec;
  WhatIfOptions whatif;
  MatrixOptions matrix;
  ReportOptions report;
  CompareOptions compare;
  bool list_json = false;
  bool list_cards = false;
  bool info_json = false;
  std::vector<std::string> plugins;
};

void add_run(CLI::App& app, Parsed& p) {
  CLI::App* run = app.add_subcommand("run", "run one scenario against one allocator");
  add_scenario_options(run, p.run);
  run->add_option("--budget,-b", p.run.budget,
                  "memory the run may use: a size (8GiB, 512MiB, 1.5GB), N% of the device, or all; "
                  "clamped to free memory")
      ->capture_default_str();
  auto* out = run->add_option("--out,-o", p.run.out,
                              "folder for events.csv and summary.json (default oomlab-runs/<UTC "
                              "time>-<scenario>-<allocator>); not one that holds a run");
  run->add_flag("--no-out", p.run.no_out, "write no run folder (CI with --json -)")->excludes(out);
  run->add_flag("--force", p.run.force, "--out may name a folder holding a run: replace it");
  run->add_option("--json", p.run.json,
                  "also write summary.json to FILE; '-' prints it alone on stdout");
  run->add_option("--csv", p.run.csv, "also write events.csv to FILE");
  auto* expect_oom =
      run->add_flag("--expect-oom", p.run.expect_oom, "exit 1 unless the run ends in OOM");
  auto* expect_no_oom =
      run->add_flag("--expect-no-oom", p.run.expect_no_oom, "exit 1 if the run ends in OOM");
  expect_oom->excludes(expect_no_oom);
  run->add_flag("--quiet,-q", p.run.quiet, "no summary and no progress line (notices still show)");
  run->add_option("--junit", p.run.junit,
                  "also write the outcome as JUnit XML to FILE (one testcase); '-' prints it alone "
                  "(not with --json -)");
  run->add_option("--repeat", p.run.repeat,
                  "N: soak: run it N times in this process, checking after each cycle that the "
                  "process's memory, the device's free memory and the allocator's blocks all come "
                  "back (soak.json; exit 1 if not)")
      ->capture_default_str();
  run->add_option("--timeout", p.run.timeout,
                  "SECONDS: stop the run there (outcome timeout, everything freed, exit 4); a call "
                  "that never returns ends the process with the record written");
  run->footer(run_footer() + scenario_and_allocator_overview());
}

void add_whatif(CLI::App& app, Parsed& p) {
  CLI::App* w = app.add_subcommand(
      "whatif",
      "would other PyTorch allocator settings have avoided the OOM? A snapshot replayed on a "
      "model of PyTorch's caching allocator under each (no GPU needed)");
  WhatIfOptions& o = p.whatif;
  w->add_option("--trace", o.trace,
                "the PyTorch memory snapshot (torch.cuda.memory._dump_snapshot(), pickle or JSON)")
      ->required();
  w->add_option("--budget,-b", o.budget,
                "the memory the program had: a size (24GiB, 1.5GB; a larger card is modelled when "
                "it is over 80 GiB), N% of the modelled card, or all; adds 'fits' or 'OOM at "
                "entry N' per setting (default: the snapshot's own, when its OOM found the device "
                "full)");
  w->add_option("--json", o.json,
                "also write oomlab.whatif.v1 JSON to FILE; '-' prints it alone on stdout and the "
                "table on stderr");
  w->add_option("--out,-o", o.out,
                "folder for whatif.json, report.html and report.md; not one that holds one");
  w->add_flag("--force", o.force, "--out may name a folder holding a what-if: replace it");
  w->add_option("--level", o.level, "what is replayed: tensor (the program's requests)")
      ->capture_default_str();
  w->add_option("--device,-d", o.device,
                "whose device trace in the snapshot (default: the one that holds a history)");
  w->add_option("--alloc-conf", o.alloc_conf,
                "a row of your own: PYTORCH_CUDA_ALLOC_CONF as your job sets it "
                "(\"expandable_segments:True,max_split_size_mb:128\")");
  w->add_flag("--fraction", o.fraction,
              "ask every row under torch.cuda.set_per_process_memory_fraction: the frontiers are "
              "the smallest caps on the modelled card, not the smallest cards");
  w->add_flag("--quiet,-q", o.quiet, "only the answer line");
  w->add_option("--from", o.from,
                "NAME=V1,V2[,...]: --trace is a pattern with {NAME} where each snapshot's value "
                "goes ('runs/snap_b{batch}.pickle'); the table is of the trace made from them at "
                "--at");
  w->add_option("--at", o.at, "NAME=N: with --from, the value the table is made for (batch=64)");
  w->footer(whatif_footer());
}

// Every allocator of the catalogue, as --allocators takes them.
std::string allocator_names() {
  std::vector<std::string_view> names;
  for (const BackendInfo& b : backend_catalog())
    names.push_back(b.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

void add_matrix(CLI::App& app, Parsed& p) {
  CLI::App* m = app.add_subcommand(
      "matrix",
      "every scenario against every allocator, each cell a child process (crash- and hang-proof)");
  MatrixOptions& o = p.matrix;
  m->add_option("--scenarios,-s", o.scenarios,
                "all, none, or a comma list (all skips scenarios whose required parameters are "
                "not given; with --exec and no --scenarios, none)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.scenarios_given = true; });
  m->add_option("--exec", o.execs,
                "NAME=COMMAND: a program as a cell (repeatable), run by `oomlab exec` under "
                "--budget through /bin/sh -c, recorded and compared like the scenario cells");
  m->add_option("--allocators,-a", o.allocators,
                fmt::format("comma list of {} (NAME:opt=v allowed)", allocator_names()))
      ->capture_default_str();
  m->add_option("--budget,-b", o.budget, "each cell's budget: a size, N% of the device, or all")
      ->capture_default_str();
  m->add_option("--seed", o.seed, "seed of every cell")->capture_default_str();
  m->add_option("--repeat,-r", o.repeat, "runs per cell; the spread of the OOM point is reported")
      ->capture_default_str();
  m->add_option("--timeout", o.timeout,
                "seconds a cell may run before it is killed and recorded as timeout")
      ->capture_default_str();
  m->add_option("--devices,-d", o.devices,
                "CUDA devices: 0,1 or all; cells on different devices run in parallel")
      ->capture_default_str();
  m->add_option("--param,-p", o.params,
                "KEY=VALUE for every cell whose scenario declares KEY (repeatable)");
  m->add_option("--verify", o.verify, "data-integrity checks in each cell: all, sample, off")
      ->capture_default_str();
  m->add_option("--out,-o", o.out,
                "folder for matrix.json and the cells (default oomlab-runs/<UTC time>-matrix)");
  m->add_flag("--force", o.force, "--out may name a folder holding a matrix: replace it");
  m->add_option("--junit", o.junit,
                "also write JUnit XML to FILE, one testcase per cell; '-' prints it alone (the "
                "table on stderr)");
  m->add_flag("--quiet,-q", o.quiet, "only the table");
  m->footer(matrix_footer());
}

void add_report(CLI::App& app, Parsed& p) {
  CLI::App* r = app.add_subcommand(
      "report",
      "self-contained HTML and Markdown for run, matrix, frontier, fit and whatif folders");
  r->add_option("paths", p.report.paths,
                "run (summary.json), matrix (matrix.json), frontier (frontier.json), fit "
                "(fit.json) or whatif (whatif.json) folders, or those files")
      ->required();
  r->add_option("--out,-o", p.report.out,
                "folder for report.html and report.md (default: beside each input)");
  r->add_flag("--remodel", p.report.remodel,
              "re-diagnose run folders (exec's and run's) with this oomlab first: the program's "
              "output and snapshots read again, a simulated run made again; the report says "
              "which oomlab wrote the stored verdict and what changed, and remodel.json holds "
              "the new record");
  r->footer(report_footer());
}

void add_compare(CLI::App& app, Parsed& p) {
  CLI::App* c = app.add_subcommand(
      "compare",
      "verdicts per cell between a baseline and a current run or matrix; exit 1 on a regression");
  CompareOptions& o = p.compare;
  c->add_option("files", o.files,
                "BASELINE CURRENT: each a summary.json, a matrix.json, or a folder holding one; "
                "with --fleet, two runners' or more (and with --pick-baseline, one info.json, "
                "summary.json or matrix.json)");
  c->add_option("--tolerance", o.tolerance,
                "how far the OOM point (bytes and step) may move and still be 'same', e.g. 2% "
                "(wider where --repeat measured a spread)")
      ->capture_default_str();
  c->add_option("--json", o.json, "also write the verdicts as JSON to FILE; '-' prints it alone");
  c->add_option("--markdown", o.markdown,
                "also write a Markdown table to FILE; '-' prints it alone");
  c->add_option("--junit", o.junit, "also write JUnit XML to FILE, one testcase per cell");
  c->add_flag("--allow-missing", o.allow_missing,
              "baseline cells missing from the current, or no cell matched, do not fail (exit 6)");
  c->add_flag("--fleet", o.fleet,
              "every FILE is one runner's: one row per cell, one column per environment (GPU, "
              "driver, CUDA, framework), each compared with the previous version on its GPU "
              "model");
  c->add_option("--pick-baseline", o.pick_baseline,
                "DIR: print the nightly's baseline in DIR for the GPU and driver FILE ran on "
                "(its own, else the nearest older driver's of the same GPU model) and exit");
  c->footer(compare_footer());
}

void build_app(CLI::App& app, Parsed& p) {
  app.description(std::string(kDescription));
  app.set_version_flag("--version", version_text());
  // Never seen by the parser (run_cli loads and removes it first); here for --help.
  app.add_option("--plugin", p.plugins,
                 "PATH.so: load external scenarios (extern \"C\" void oomlab_register(oomlab::"
                 "Registry&)); repeatable, and may stand anywhere on the line");
  app.require_subcommand(1, 1);
  app.footer(top_footer());
  add_run(app, p);
  add_frontier(app, p.frontier, p.frontier_exec);
  add_fit(app, p.fit, p.fit_exec);
  add_exec(app, p.exec);
  add_whatif(app, p);
  add_matrix(app, p);
  add_report(app, p);
  add_compare(app, p);
  CLI::App* list =
      app.add_subcommand("list", "scenarios with their parameters, allocators with their options");
  list->add_flag("--json", p.list_json, "as JSON");
  list->add_flag("--cards", p.list_cards,
                 "the named cards --budget takes: NVML's total, the budget, the source");
  list->footer(list_footer());
  CLI::App* info = app.add_subcommand(
      "info", "devices, driver, CUDA versions, memory, pool/managed/VMM support");
  info->add_flag("--json", p.info_json, "as JSON");
  info->footer(info_footer());
  // What matches nothing is kept (remaining()) and explained by cli_messages, not by CLI11.
  app.allow_extras();
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->allow_extras();
}

int exit_code_for_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::usage:
    case ErrorKind::input:
      return kExitUsage;
    case ErrorKind::no_device:
      return kExitNoDevice;
    case ErrorKind::io:
      return kExitIo;
    default:
      return kExitCheckFailed;
  }
}

// `oomlab rnu` gets a suggestion rather than CLI11's "arguments were not expected".
bool unknown_command(const std::vector<std::string>& args, std::ostream& err) {
  if (args.size() < 2 || args[1].empty() || args[1][0] == '-') return false;
  const std::vector<std::string> commands = {"run",    "frontier", "fit",     "exec", "whatif",
                                             "matrix", "report",   "compare", "list", "info"};
  if (std::find(commands.begin(), commands.end(), args[1]) != commands.end()) return false;
  err << "oomlab: error: "
      << clip_long_words(fmt::format("unknown command '{}'{} (commands: {})", args[1],
                                     did_you_mean(args[1], commands), fmt::join(commands, ", ")))
      << '\n';
  return true;
}

// `oomlab run fragmentation --help` explains that scenario, not only the flags.
void tailor_run_help(CLI::App& app, const std::vector<std::string>& args) {
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "run" && Registry::global().find(args[i + 1]) != nullptr) {
      app.get_subcommand("run")->footer(scenario_help(args[i + 1]) + "\n" + run_footer());
      return;
    }
  }
}

// Takes every `--plugin PATH` / `--plugin=PATH` out of the arguments, wherever it stands, and
// loads the library; what remains goes to the parser.
std::vector<std::string> load_plugins(const std::vector<std::string>& args) {
  static std::vector<std::string> loaded_before;  // in this process (run_cli called again: tests)
  loaded_plugins().clear();
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--plugin") {
      if (i + 1 == args.size()) throw_usage("--plugin: needs the path of a shared library");
      path = args[++i];
    } else if (args[i].starts_with("--plugin=")) {
      path = args[i].substr(9);
    } else {
      rest.push_back(args[i]);
      continue;
    }
    if (path.empty()) throw_usage("--plugin: needs the path of a shared library");
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
    const std::string key = ec ? path : canonical.string();
    if (std::find(loaded_before.begin(), loaded_before.end(), key) == loaded_before.end()) {
      // The built-in catalogues first: a plugin's names are checked against all of them.
      static_cast<void>(backend_catalog());
      static_cast<void>(trace::formats());
      static_cast<void>(load_plugin(path, Registry::global()));
      loaded_before.push_back(key);
    }
    loaded_plugins().push_back(key);
  }
  return rest;
}

// The command given, run.
int dispatch(const CLI::App& app, const Parsed& parsed, const std::vector<std::string>& args,
             std::ostream& out, std::ostream& err) {
  if (app.got_subcommand("run")) return run_command(parsed.run, args, out, err);
  if (app.got_subcommand("exec")) return exec_command(parsed.exec, args, out, err);
  if (app.got_subcommand("frontier")) {
    if (app.get_subcommand("frontier")->got_subcommand("exec"))
      return frontier_exec_command(parsed.frontier_exec, out, err);
    return frontier_command(parsed.frontier, out, err);
  }
  if (app.got_subcommand("fit")) {
    if (app.get_subcommand("fit")->got_subcommand("exec"))
      return fit_exec_command(parsed.fit_exec, out, err);
    return fit_command(parsed.fit, out, err);
  }
  if (app.got_subcommand("whatif")) return whatif_command(parsed.whatif, out, err);
  if (app.got_subcommand("matrix")) return matrix_command(parsed.matrix, args, out, err);
  if (app.got_subcommand("report")) return report_command(parsed.report, out, err);
  if (app.got_subcommand("compare")) return compare_command(parsed.compare, out, err);
  if (app.got_subcommand("list")) return list_command(parsed.list_json, parsed.list_cards, out);
  return info_command(parsed.info_json, out, err);
}

}  // namespace

int run_cli(const std::vector<std::string>& given, std::ostream& out, std::ostream& err) {
  if (given.empty()) return kExitUsage;  // not even a program name: nothing to say it to
  // --plugin loads before anything is parsed: its scenarios are then known like built-ins.
  std::vector<std::string> args;
  try {
    args = load_plugins(given);
  } catch (const Error& e) {
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return kExitUsage;
  }
  if (unknown_command(args, err)) return kExitUsage;
  const std::vector<std::string> program = take_program(args);
  CLI::App app("oomlab", "oomlab");
  Parsed parsed;
  build_app(app, parsed);
  parsed.exec.command = program;
  parsed.frontier_exec.command = program;
  parsed.fit_exec.exec.command = program;
  tailor_run_help(app, args);
  std::vector<std::string> reversed(args.rbegin(),
                                    args.rend() - 1);  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* asked = &app;  // the innermost command given: `frontier exec --help`
    while (!asked->get_subcommands().empty())
      asked = asked->get_subcommands().front();
    out << asked->help();
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << version_text() << '\n';
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (args.size() == 1) {
      err << app.help();
      return kExitUsage;
    }
    err << "oomlab: error: " << parse_error_line(e, app) << '\n';
    return kExitUsage;
  }
  if (const std::string unexpected = unexpected_arguments(app); !unexpected.empty()) {
    err << "oomlab: error: " << clip_long_words(unexpected) << '\n';
    return kExitUsage;
  }
  try {
    return dispatch(app, parsed, args, out, err);
  } catch (const Error& e) {
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return exit_code_for_error(e);
  } catch (const std::exception& e) {
    err << "oomlab: error: " << clip_long_words(e.what()) << '\n';
    return kExitCheckFailed;
  }
}

}  // namespace oomlab::cli
