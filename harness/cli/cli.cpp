#include "cli/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
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
  WhatIfOptions whatif;
  MatrixOptions matrix;
  ReportOptions report;
  CompareOptions compare;
  bool list_json = false;
  bool info_json = false;
  std::vector<std::string> plugins;
};

// What `run` and `frontier` share: a scenario, its allocator, parameters and trace.
void add_scenario_options(CLI::App* sub, RunOptions& o) {
  sub->add_option("scenario", o.scenario, "the scenario (see 'oomlab list')")->required();
  sub->add_option(
         "--allocator,-a", o.allocator,
         "NAME[:opt=value,...]: cuda, async, managed, sim or auto (async with a GPU, else sim)")
      ->capture_default_str();
  sub->add_option("--seed", o.seed, "seed of the scenario's random choices")->capture_default_str();
  sub->add_option("--param,-p", o.params, "KEY=VALUE for the scenario (repeatable)");
  sub->add_option("--trace", o.trace, "replay: the trace file (same as --param trace=FILE)");
  sub->add_option("--format", o.format,
                  "replay: auto, oomlab, rmm or pytorch (same as --param format=)");
  sub->add_flag("--strict", o.strict,
                "replay: a free of an unknown address is an error (--param strict=on)");
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
                  "also write the outcome as JUnit XML to FILE (one testcase)");
  run->add_option("--repeat", p.run.repeat,
                  "N: soak: run it N times in this process, checking after each cycle that the "
                  "process's memory, the device's free memory and the allocator's blocks all come "
                  "back (soak.json; exit 1 if not)")
      ->capture_default_str();
  run->add_option("--timeout", p.run.timeout,
                  "SECONDS: stop the run there (outcome timeout, everything freed, exit 4); a call "
                  "that never returns ends the process with the record written");
  run->footer(scenario_and_allocator_overview());
}

void add_frontier(CLI::App& app, Parsed& p) {
  CLI::App* frontier = app.add_subcommand(
      "frontier",
      "the smallest budget at which a scenario completes: bisection on fresh runs, to 2 MiB");
  add_scenario_options(frontier, p.frontier);
  p.frontier.budget = "all";
  frontier
      ->add_option(
          "--budget,-b", p.frontier.budget,
          "the largest budget tried: a size, N% of the device, or all (the sim's 'total' option "
          "on sim: ask 'does it fit on 24 GiB?' with -a sim:total=24GiB)")
      ->capture_default_str();
  frontier->add_option("--json", p.frontier.json,
                       "also write the result as JSON to FILE; '-' prints it alone");
  frontier->add_flag("--quiet,-q", p.frontier.quiet, "only the answer");
  frontier->footer(
      "Examples:\n"
      "  oomlab frontier replay --trace snapshot.pickle -a sim:total=24GiB   # would it fit on a "
      "24 GiB card?\n"
      "  oomlab frontier growing-batch -a async -p start=32 -p schedule=linear\n"
      "Exit codes: 0 a frontier was found, 1 the run does not complete even at the largest "
      "budget.");
}

constexpr std::string_view kWhatIfFooter =
    "How to read it:\n"
    "  The first line is the answer: the setting that needs the least memory against native\n"
    "  (PyTorch's defaults) and, when a budget is known, which settings fit in it.\n"
    "  frontier   the smallest budget at which the replay completes (bisection to 2 MiB, on a\n"
    "             simulated 80 GiB card, or --budget when larger); 'over N': not even then\n"
    "  vs native  how much more or less that is than native's frontier\n"
    "  at BUDGET  'fits', or the snapshot entry whose request ran out of memory, and its cause\n"
    "  Rows: as recorded (the snapshot's own allocator_settings, when they differ from the\n"
    "  defaults), native, expandable_segments, max_split_size=128MiB and 512MiB,\n"
    "  garbage_collection_threshold=0.8 (under set_per_process_memory_fraction, the only place\n"
    "  PyTorch collects), backend=async (cudaMallocAsync). The budget is --budget, else what the\n"
    "  program had when its OOM found the device full; a run capped by\n"
    "  set_per_process_memory_fraction does not record its cap, so then only frontiers show.\n"
    "Examples:\n"
    "  oomlab whatif --trace memory_snapshot.pickle\n"
    "  oomlab whatif --trace memory_snapshot.pickle --budget 24GiB --out whatif/\n"
    "Exit codes: 0 the table was made, 2 bad usage or a file that is not a PyTorch snapshot, 130 "
    "interrupted.";

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
                "the memory the program had (8GiB, 1.5GB): adds 'fits' or 'OOM at entry N' per "
                "setting (default: the snapshot's own, when its OOM found the device full)");
  w->add_option("--json", o.json,
                "also write oomlab.whatif.v1 JSON to FILE; '-' prints it alone on stdout and the "
                "table on stderr");
  w->add_option("--out,-o", o.out, "folder for whatif.json, report.html and report.md");
  w->add_option("--level", o.level, "what is replayed: tensor (the program's requests)")
      ->capture_default_str();
  w->add_option("--device,-d", o.device, "whose device trace in the snapshot")
      ->capture_default_str();
  w->add_flag("--quiet,-q", o.quiet, "only the answer line");
  w->footer(std::string(kWhatIfFooter));
}

void add_matrix(CLI::App& app, Parsed& p) {
  CLI::App* m = app.add_subcommand(
      "matrix",
      "every scenario against every allocator, each cell a child process (crash- and hang-proof)");
  MatrixOptions& o = p.matrix;
  m->add_option(
       "--scenarios,-s", o.scenarios,
       "all, or a comma list (all skips scenarios whose required parameters are not given)")
      ->capture_default_str();
  m->add_option("--allocators,-a", o.allocators,
                "comma list of cuda, async, managed, sim (NAME:opt=v allowed)")
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
  m->add_option("--junit", o.junit, "also write JUnit XML to FILE, one testcase per cell");
  m->add_flag("--quiet,-q", o.quiet, "only the table");
  m->footer(
      "Examples:\n"
      "  oomlab matrix --scenarios=all --allocators=cuda,async,managed --budget=8GiB --out "
      "runs/nightly\n"
      "  oomlab matrix -s fragmentation,leak -a async,sim --repeat 5 --timeout 120\n"
      "Exit codes: 0 every cell ran (OOMs included), 2 bad usage, 4 a cell crashed or timed out.");
}

void add_report(CLI::App& app, Parsed& p) {
  CLI::App* r = app.add_subcommand(
      "report", "self-contained HTML and Markdown for run folders and matrix folders");
  r->add_option("paths", p.report.paths,
                "run folders (summary.json), matrix folders (matrix.json) or those files")
      ->required();
  r->add_option("--out,-o", p.report.out,
                "folder for report.html and report.md (default: beside each input)");
}

void add_compare(CLI::App& app, Parsed& p) {
  CLI::App* c = app.add_subcommand(
      "compare",
      "verdicts per cell between a baseline and a current run or matrix; exit 1 on a regression");
  CompareOptions& o = p.compare;
  c->add_option("baseline", o.baseline, "summary.json, matrix.json, or a folder holding one")
      ->required();
  c->add_option("current", o.current, "summary.json, matrix.json, or a folder holding one")
      ->required();
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
  c->footer(
      "Exit codes: 0 no regression, 1 a regression, 2 bad usage or input, 5 an output file\n"
      "could not be written, 6 baseline cells missing from the current or none matched\n"
      "(--allow-missing: 0). A parameter naming a file (a trace) matches by its content.");
}

void build_app(CLI::App& app, Parsed& p) {
  app.description(std::string(kDescription));
  app.set_version_flag("--version", version_text());
  // Never seen by the parser (run_cli loads and removes it first); here for --help.
  app.add_option("--plugin", p.plugins,
                 "PATH.so: load external scenarios (extern \"C\" void oomlab_register(oomlab::"
                 "Registry&)); repeatable, and may stand anywhere on the line");
  app.require_subcommand(1, 1);
  app.footer(
      "Examples:\n"
      "  oomlab run fragmentation --allocator=async --budget=8GiB\n"
      "  oomlab run fragmentation --allocator=sim --budget=1GiB --json -\n"
      "  oomlab run fragmentation -a async:release_threshold=max -p keep=1/4 -p block=1MiB\n"
      "  oomlab run replay --trace memory_snapshot.pickle -a sim --budget=24GiB\n"
      "  oomlab frontier replay --trace memory_snapshot.pickle -a sim\n"
      "  oomlab whatif --trace memory_snapshot.pickle\n"
      "  oomlab matrix --scenarios=all --allocators=cuda,async,managed --out runs/nightly\n"
      "  oomlab report runs/nightly\n"
      "  oomlab compare ci/baselines/h100.json runs/nightly/matrix.json\n"
      "  oomlab list\n"
      "  oomlab info\n"
      "Exit codes: 0 done (a provoked OOM is success), 1 a check failed, 2 bad usage or input,\n"
      "3 no usable device for the allocator, 4 a run or a matrix cell crashed or timed out,\n"
      "5 an output file could not be written, 6 compare: baseline cells missing, 130 interrupted.");
  add_run(app, p);
  add_frontier(app, p);
  add_whatif(app, p);
  add_matrix(app, p);
  add_report(app, p);
  add_compare(app, p);
  app.add_subcommand("list", "scenarios with their parameters, allocators with their options")
      ->add_flag("--json", p.list_json, "as JSON");
  app.add_subcommand("info", "devices, driver, CUDA versions, memory, pool/managed/VMM support")
      ->add_flag("--json", p.info_json, "as JSON");
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
  const std::vector<std::string> commands = {"run",    "frontier", "whatif", "matrix",
                                             "report", "compare",  "list",   "info"};
  if (std::find(commands.begin(), commands.end(), args[1]) != commands.end()) return false;
  err << fmt::format("oomlab: error: unknown command '{}'{} (commands: {})\n", args[1],
                     did_you_mean(args[1], commands), fmt::join(commands, ", "));
  return true;
}

// `oomlab run fragmentation --help` explains that scenario, not only the flags.
void tailor_run_help(CLI::App& app, const std::vector<std::string>& args) {
  for (std::size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "run" && Registry::global().find(args[i + 1]) != nullptr) {
      app.get_subcommand("run")->footer(scenario_help(args[i + 1]));
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
      static_cast<void>(load_plugin(path, Registry::global()));
      loaded_before.push_back(key);
    }
    loaded_plugins().push_back(key);
  }
  return rest;
}

}  // namespace

int run_cli(const std::vector<std::string>& given, std::ostream& out, std::ostream& err) {
  if (given.empty()) return kExitUsage;  // not even a program name: nothing to say it to
  // --plugin loads before anything is parsed: its scenarios are then known like built-ins.
  std::vector<std::string> args;
  try {
    args = load_plugins(given);
  } catch (const Error& e) {
    err << fmt::format("oomlab: error: {}\n", e.what());
    return kExitUsage;
  }
  if (unknown_command(args, err)) return kExitUsage;
  CLI::App app("oomlab", "oomlab");
  Parsed parsed;
  build_app(app, parsed);
  tailor_run_help(app, args);
  std::vector<std::string> reversed(args.rbegin(),
                                    args.rend() - 1);  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << (app.get_subcommands().empty() ? app.help() : app.get_subcommands().front()->help());
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << version_text() << '\n';
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (args.size() == 1) {
      err << app.help();
      return kExitUsage;
    }
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    err << fmt::format("oomlab: error: {} (see oomlab --help)\n", message);
    return kExitUsage;
  }
  try {
    if (app.got_subcommand("run")) return run_command(parsed.run, args, out, err);
    if (app.got_subcommand("frontier")) return frontier_command(parsed.frontier, out, err);
    if (app.got_subcommand("whatif")) return whatif_command(parsed.whatif, out, err);
    if (app.got_subcommand("matrix")) return matrix_command(parsed.matrix, args, out, err);
    if (app.got_subcommand("report")) return report_command(parsed.report, out, err);
    if (app.got_subcommand("compare")) return compare_command(parsed.compare, out, err);
    if (app.got_subcommand("list")) return list_command(parsed.list_json, out);
    return info_command(parsed.info_json, out, err);
  } catch (const Error& e) {
    err << fmt::format("oomlab: error: {}\n", e.what());
    return exit_code_for_error(e);
  } catch (const std::exception& e) {
    err << fmt::format("oomlab: error: {}\n", e.what());
    return kExitCheckFailed;
  }
}

}  // namespace oomlab::cli
