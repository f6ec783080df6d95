#include "cli/exec_cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "cli/help_text.hpp"

namespace oomlab::cli {

namespace {

// What exec and frontier exec share.
void add_program_options(CLI::App* sub, ExecOptions& o) {
  sub->add_option("--device,-d", o.device, "the CUDA device the program gets")
      ->capture_default_str();
  sub->add_option("--devices", o.devices,
                  "0,1 or all: several devices, a ballast on each and the budget on each "
                  "(for multi-GPU programs; overrides --device)");
  sub->add_option("--grace", o.grace,
                  "SECONDS between SIGINT/SIGTERM and SIGKILL when the program must be ended; "
                  "and how long a distributed job may stay quiet after a rank's OOM (no output, "
                  "no device's memory moving) before it is ended")
      ->capture_default_str();
  sub->add_option("--interval", o.interval, "MS between samples of the program's memory (1-1000)")
      ->capture_default_str();
  sub->add_option("--json", o.json, "also write the result as JSON to FILE; '-' prints it alone");
  sub->add_option("--junit", o.junit,
                  "also write the outcome as JUnit XML to FILE; '-' prints it alone (not with "
                  "--json -)");
  sub->add_flag("--quiet,-q", o.quiet, "no summary (the program's own output still shows)");
  auto* off =
      sub->add_flag("--no-snapshot", o.no_snapshot,
                    "record no snapshot of the framework's allocator (what its model reads): no "
                    "model, no prediction");
  sub->add_option("--snapshot-stacks", o.snapshot_stacks,
                  "none or python: the snapshot's history without stacks (cheapest), or with the "
                  "Python stack of each allocation")
      ->capture_default_str()
      ->excludes(off);
  sub->add_option(
         "--snapshot-entries", o.snapshot_entries,
         "N: the most history entries a snapshot keeps (default: the framework's own, no limit)")
      ->excludes(off);
}

}  // namespace

void add_exec(CLI::App& command, ExecOptions& o) {
  CLI::App* sub = &command;
  sub->add_option("--budget,-b", o.budget,
                  "all the program may use on each device, its CUDA context included: a size "
                  "(24GiB), N% of the device, all, or a card's name (L4, A100-80GB: oomlab list "
                  "--cards)")
      ->capture_default_str()
      ->each([&o](const std::string&) { o.budget_given = true; });
  sub->add_option("--budgets", o.budgets,
                  "DEVICE=BUDGET,...: each device's own budget (0=20GiB,1=24GiB); names the "
                  "devices when --devices is not given");
  sub->add_option("--timeout", o.timeout,
                  "SECONDS: end the program there (outcome timeout, exit 4)");
  auto* out = sub->add_option("--out,-o", o.out,
                              "folder for events.csv, summary.json, stdout.txt, stderr.txt "
                              "(default oomlab-runs/<UTC time>-exec-<program>)");
  sub->add_flag("--no-out", o.no_out, "write no run folder (with --json -)")->excludes(out);
  sub->add_flag("--force", o.force, "--out may name a folder holding a run: replace it");
  auto* expect_oom =
      sub->add_flag("--expect-oom", o.expect_oom, "exit 1 unless the program runs out of memory");
  auto* expect_no_oom =
      sub->add_flag("--expect-no-oom", o.expect_no_oom, "exit 1 if the program runs out of memory");
  expect_oom->excludes(expect_no_oom);
  sub->add_flag("--check-remedy", o.check_remedy,
                "after an OOM whose snapshot shows a setting of the framework's allocator "
                "completing (exec --help: each framework's), run the program again at the budget "
                "with it set (exit 1 if it still runs out)");
  sub->add_option("--gpus", o.gpus,
                  "0,1 or all: with --check-remedy, the program runs on the first and the reruns "
                  "that do not wait on each other go at once, one a GPU (a cuBLAS OOM's two "
                  "remedies)");
  add_program_options(sub, o);
  sub->footer(exec_footer());
}

void add_frontier_exec(CLI::App& frontier, ExecOptions& o) {
  CLI::App* sub = frontier.add_subcommand(
      "exec",
      "the smallest budget at which a program exits 0, by search on fresh runs (from the model's "
      "prediction, for a program whose snapshot a framework models): oomlab "
      "frontier exec [OPTIONS] -- CMD [ARGS...]");
  o.budget = "all";
  sub->add_option("--budget,-b", o.budget,
                  "the largest budget tried (MAX): a size, N% of the device, all free memory, or a "
                  "card's name")
      ->capture_default_str();
  sub->add_option("--resolution", o.resolution, "how close the search goes (a size, ≥ 2MiB)")
      ->capture_default_str();
  sub->add_option("--timeout", o.timeout,
                  "SECONDS: each trial's limit; a trial past it stops the search (exit 4)");
  sub->add_option("--confirm", o.confirm,
                  "N: run the frontier and the budget under it N more times each")
      ->capture_default_str();
  sub->add_option("--from", o.from,
                  "NAME=V1,V2[,...]: with --at, run the program at these values only ({NAME} in "
                  "its arguments) and answer for --at from their snapshots, without running it");
  sub->add_option("--at", o.at, "NAME=N: with --from, the value the frontier is asked for");
  sub->add_option("--out,-o", o.out, "folder for frontier.json; not one that holds one");
  sub->add_option("--gpus", o.gpus,
                  "0,1,2,3 or all: run trials on these GPUs at once, each a fresh process on one "
                  "GPU with its own ballast: the top run alone, then the run the search needs "
                  "next beside those it would need after it either way: the same answer and "
                  "trials, sooner; not with --devices");
  sub->add_option("--gpus-per-trial", o.gpus_per_trial,
                  "N: with --gpus, a program that spans N GPUs a trial takes them from --gpus "
                  "in order (--gpus 0,1,2,3 --gpus-per-trial 2: trials on 0,1 and 2,3 at once)")
      ->capture_default_str();
  sub->add_flag("--force", o.force, "--out may name a folder holding a frontier: replace it");
  add_program_options(sub, o);
  sub->footer(frontier_exec_footer());
}

void add_fit_exec(CLI::App& fit, FitExecOptions& options) {
  CLI::App* sub = fit.add_subcommand(
      "exec",
      "the largest value of a program's setting at which it exits 0 under the budget, each trial "
      "a fresh process: oomlab fit exec --budget SIZE --range NAME=LO..HI -- CMD ... {NAME} ...");
  ExecOptions& o = options.exec;
  o.budget = "all";
  sub->add_option("--budget,-b", o.budget,
                  "the card, all the program may use of it, its CUDA context included: a size, N% "
                  "of the device, all, or a card's name (T4, L4, A100-80GB, H100: oomlab list "
                  "--cards)")
      ->capture_default_str();
  sub->add_option("--range", options.range,
                  "NAME=LO..HI: {NAME} in the command becomes each value tried (batch=1..512)");
  sub->add_option("--timeout", o.timeout,
                  "SECONDS: each trial's limit; a trial past it stops the search (exit 4)");
  sub->add_option("--confirm", o.confirm,
                  "N: run the answer and the value above it N more times each")
      ->capture_default_str();
  sub->add_option("--out,-o", o.out, "folder for fit.json; not one that holds one");
  sub->add_flag("--force", o.force, "--out may name a folder holding a fit: replace it");
  sub->add_option("--gpus", o.gpus,
                  "0,1,2,3 or all: run trials on these GPUs at once, each a fresh process on one "
                  "GPU with its own ballast, the search in rounds (the two first runs together, "
                  "then the prediction and the value over it): the same answer, sooner; over "
                  "--device, and not with --devices (a program on several GPUs a trial: "
                  "--gpus-per-trial)");
  sub->add_option("--gpus-per-trial", o.gpus_per_trial,
                  "N: with --gpus, a program that spans N GPUs a trial takes them from --gpus "
                  "in order (--gpus 0,1,2,3 --gpus-per-trial 2: trials on 0,1 and 2,3 at once)")
      ->capture_default_str();
  sub->add_option("--grid", options.grid,
                  "NAME=V1,V2,...: a knob of the program ({NAME} in its words), searched at each "
                  "value; repeatable: every combination gets its own search, one table; an empty "
                  "value drops the word (--grid vae=,--vae-slicing)");
  sub->add_option("--markdown", options.markdown,
                  "FILE or '-': with --grid, the table as Markdown ('-' prints it alone)");
  add_program_options(sub, o);
  sub->footer(fit_exec_footer());
}

std::vector<std::string> take_program(std::vector<std::string>& args) {
  const bool exec = args.size() > 1 && args[1] == "exec";
  const bool search_exec =
      args.size() > 2 && (args[1] == "frontier" || args[1] == "fit") && args[2] == "exec";
  if (!exec && !search_exec) return {};
  const auto dashes = std::find(args.begin(), args.end(), "--");
  if (dashes == args.end()) return {};
  std::vector<std::string> program(dashes + 1, args.end());
  args.erase(dashes, args.end());
  return program;
}

}  // namespace oomlab::cli
