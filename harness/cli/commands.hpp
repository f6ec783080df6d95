// The subcommands. Each takes the raw option text CLI11 collected, parses it with parse.hpp, and
// returns the process exit code (README.md, "Exit codes").
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/out_folder.hpp"  // check_destination, before any run
#include "run/run_result.hpp"
#include "run/runner.hpp"

namespace oomlab::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoDevice = 3;
inline constexpr int kExitCellFailed = 4;  // a run or a matrix cell crashed or timed out
inline constexpr int kExitIo = 5;          // an output file could not be written (reason named)
// compare: baseline cells missing from the current, or nothing matched (--allow-missing: off)
inline constexpr int kExitIncomplete = 6;
inline constexpr int kExitInterrupted = 130;

struct RunOptions {
  std::string scenario;
  std::string allocator = "auto";
  // A framework's own spelling of its allocator's settings (settings_spelling(): its flag).
  std::string spelled_settings;
  std::string budget = "8GiB";
  std::string seed = "1";
  std::vector<std::string> params;
  std::string out;
  bool no_out = false;  // no run folder: CI that only wants --json -
  bool force = false;   // --out may name a folder that holds a run: its files are replaced
  std::string json;
  std::string csv;
  std::string device = "0";
  std::string verify = "sample";
  std::string trace;  // replay's --trace, --format and --strict: its own parameters
  std::string format;
  bool strict = false;
  bool no_probe = false;
  bool expect_oom = false;
  bool expect_no_oom = false;
  bool quiet = false;
  std::string junit;         // JUnit XML of the run, one testcase
  std::string timeout;       // seconds; empty: none
  std::string repeat = "1";  // > 1: a soak, every cycle in this process
};

// `oomlab exec -- CMD` and `oomlab frontier exec -- CMD`: a program under the budget.
struct ExecOptions {
  std::vector<std::string> command;  // what followed "--"
  std::string budget = "all";
  bool budget_given = false;  // --budget was on the command line
  std::string budgets;        // exec: 0=20GiB,1=24GiB, each device's own budget
  std::string device = "0";
  std::string devices;  // 0,1 or all: a ballast on each (overrides --device)
  std::string timeout;  // seconds; empty: none
  std::string grace = "5";
  std::string interval = "5";  // ms between samples
  std::string out;
  bool no_out = false;
  bool force = false;
  std::string json;
  std::string junit;
  bool expect_oom = false;
  bool expect_no_oom = false;
  bool quiet = false;
  bool check_remedy = false;  // exec: run again with the setting the model names
  std::string gpus;           // fit exec, frontier exec: 0,1,2,3 or all, a trial on each at once
  std::string gpus_per_trial = "1";  // with --gpus: the GPUs each trial's program spans
  std::string resolution = "2MiB";   // frontier exec
  std::string from;  // frontier exec: NAME=V1,V2, the values run for a frontier at --at
  std::string at;    // frontier exec: NAME=N, the value answered without running it
  std::string confirm = "0";
  bool no_snapshot = false;  // a Python program's PyTorch snapshot (the exec shim)
  std::string snapshot_stacks = "none";
  std::string snapshot_entries;  // empty: PyTorch's default
};

// `oomlab fit SCENARIO --range NAME=LO..HI`: the largest value of a scenario's parameter that
// completes under the budget.
struct FitOptions {
  RunOptions run;
  std::string range;
  std::string confirm = "0";
  std::string from;   // NAME=V1,V2: replay the trace made at each value from these snapshots
  std::string cards;  // with --from: a table of cards (or sizes), the largest value per setting
  std::string outside = "0";         // with --from: what the process holds outside the allocator
  std::string transients = "lines";  // with --from: how transient requests are made
  bool budget_given = false;         // --budget was on the command line
  bool outside_given = false;        // --outside was
};

// `oomlab fit exec --range NAME=LO..HI -- CMD ... {NAME}`: the same for a program's setting.
struct FitExecOptions {
  ExecOptions exec;
  std::string range;
  std::vector<std::string> grid;  // NAME=V1,V2 each: the range searched at every combination
  std::string markdown;           // with --grid: the table as Markdown, FILE or '-'
};

// `oomlab matrix`: every scenario against every allocator, each cell in its own child process.
struct MatrixOptions {
  std::string scenarios = "all";
  bool scenarios_given = false;    // with --exec and no --scenarios, only the programs run
  std::vector<std::string> execs;  // --exec NAME=COMMAND: a program's cell
  std::string allocators = "cuda,async,managed";
  std::string budget = "8GiB";
  std::string seed = "1";
  std::string repeat = "1";
  std::string timeout = "600";
  std::string devices = "0";
  std::vector<std::string> params;
  std::string out;
  bool force = false;  // --out may name a folder that holds a matrix
  std::string verify = "sample";
  std::string junit;
  bool quiet = false;
};

// `oomlab report PATH...`: HTML and Markdown of a run folder or a matrix folder.
struct ReportOptions {
  std::vector<std::string> paths;
  std::string out;       // where the files go (default: beside each input)
  bool remodel = false;  // run folders re-diagnosed with this oomlab first (remodel.hpp)
};

// `oomlab compare BASELINE CURRENT`: verdicts per cell; exit 1 on any regression, 6 when baseline
// cells are missing from the current or nothing matched.
struct CompareOptions {
  std::vector<std::string> files;  // BASELINE CURRENT; with --fleet, any number of runners'
  bool fleet = false;
  std::string pick_baseline;  // --pick-baseline DIR: the nightly's baseline for files[0]
  std::string baseline;       // files[0] and files[1] without --fleet
  std::string current;
  std::string tolerance = "2%";
  std::string json;            // FILE or '-'
  std::string markdown;        // FILE or '-'
  std::string junit;           // FILE
  bool allow_missing = false;  // missing baseline cells, or no match at all, do not fail
};

int run_command(const RunOptions& options, const std::vector<std::string>& argv, std::ostream& out,
                std::ostream& err);
int frontier_command(const RunOptions& options, std::ostream& out, std::ostream& err);
int exec_command(const ExecOptions& options, const std::vector<std::string>& argv,
                 std::ostream& out, std::ostream& err);
int frontier_exec_command(const ExecOptions& options, std::ostream& out, std::ostream& err);
int fit_command(const FitOptions& options, std::ostream& out, std::ostream& err);
int fit_exec_command(const FitExecOptions& options, std::ostream& out, std::ostream& err);
int fit_series_command(const FitOptions& options, std::ostream& out, std::ostream& err);
// `frontier exec --from NAME=V1,V2 --at NAME=N -- CMD ... {NAME}`: the frontier at N, not run.
int frontier_series_command(const ExecOptions& options, std::ostream& out, std::ostream& err);
int list_command(bool as_json, bool cards, std::ostream& out);
int matrix_command(const MatrixOptions& options, const std::vector<std::string>& argv,
                   std::ostream& out, std::ostream& err);
int report_command(const ReportOptions& options, std::ostream& out, std::ostream& err);
int compare_command(const CompareOptions& options, std::ostream& out, std::ostream& err);
// --fleet (fleet_command.cpp): every file one runner's; exit 1 on a regression between versions,
// 6 on cells missing from a newer version (unless --allow-missing).
int compare_fleet_command(const CompareOptions& o, double tolerance, std::ostream& out,
                          std::ostream& err);
// --pick-baseline DIR FILE: baseline=, own= and note= lines for ci/nightly.sh; exit 0.
int pick_baseline_command(const CompareOptions& o, std::ostream& out);

// The typed run the options describe (shared by run and frontier); `auto` stays to be resolved.
[[nodiscard]] RunConfig config_from(const RunOptions& options);
class Console;
// Probes the machine once for the config and turns `auto` into async or sim (with a notice).
void resolve_allocator(RunConfig& config, Console& console);
int info_command(bool as_json, std::ostream& out, std::ostream& err);

// What a finished run means for the exit code; `why` says it when the code is not 0.
int exit_code_for(const RunResult& result, const RunOptions& options, std::string* why);

[[nodiscard]] std::string version_text();
// `oomlab run SCENARIO --help`: the scenario's story and its parameters.
[[nodiscard]] std::string scenario_help(const std::string& name);
[[nodiscard]] std::string scenario_and_allocator_overview();

}  // namespace oomlab::cli
