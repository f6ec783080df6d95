// `oomlab matrix`: every chosen scenario against every chosen allocator, each cell (and each
// repeat) in a child process of this same binary running `run --json -`, so that a crash, a sticky
// CUDA error or a hang stays in its cell. One worker per device takes cells from a shared queue:
// cells on different devices run in parallel, a device runs one cell at a time.
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/child_process.hpp"
#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/matrix_plan.hpp"
#include "cli/output_failures.hpp"
#include "cli/output_flag.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "reports/matrix/matrix_json.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab::cli {

using json = nlohmann::ordered_json;

namespace {

// The child's summary, when what it printed on stdout is one.
json summary_from(const std::string& text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("schema", "") == kRunSchema) return parsed;
  return nullptr;
}

// What the cell's process runs: `oomlab run` for a scenario, `oomlab exec` for a program.
std::vector<std::string> cell_argv(const MatrixPlan& plan, const PlannedCell& cell,
                                   const std::string& dir) {
  if (!cell.command.empty()) {
    return {plan.self,  "exec",
            "--budget", plan.budget,
            "--device", std::to_string(cell.device),
            "--out",    (plan.out / dir).string(),
            "--force",  "--json",
            "-",        "--quiet",
            "--",       "/bin/sh",
            "-c",       cell.command};
  }
  std::vector<std::string> argv = {plan.self,
                                   "run",
                                   cell.scenario,
                                   "--allocator",
                                   cell.allocator,
                                   "--budget",
                                   plan.budget,
                                   "--seed",
                                   plan.seed,
                                   "--device",
                                   std::to_string(cell.device),
                                   "--verify",
                                   plan.verify,
                                   "--out",
                                   (plan.out / dir).string(),
                                   "--force",  // the cell's folder is this matrix's own
                                   "--json",
                                   "-",
                                   "--quiet"};
  for (const std::string& p : cell.params) {
    argv.emplace_back("--param");
    argv.push_back(p);
  }
  for (const std::string& plugin : loaded_plugins()) {
    argv.emplace_back("--plugin");
    argv.push_back(plugin);
  }
  return argv;
}

// A cell's outcome from how its process ended and what it printed.
MatrixRepeat run_repeat(const MatrixPlan& plan, const PlannedCell& cell, const std::string& dir,
                        const std::atomic<bool>* stop) {
  const ChildResult child =
      run_child(cell_argv(plan, cell, dir), {.timeout = plan.timeout, .stop = stop});
  MatrixRepeat r;
  r.exit_code = child.exit_code;
  if (child.signal != 0) r.signal = signal_name(child.signal);
  r.duration_ms = child.seconds * 1e3;
  r.dir = dir;
  r.last_lines = last_lines(child.err_tail, 12);
  r.summary = summary_from(child.out);
  r.outcome = cell_outcome(child, r.summary);
  if (child.out_overflow)
    r.last_lines.emplace_back(
        "oomlab matrix: the cell wrote over 64 MiB to stdout and was stopped");
  return r;
}

class Runner {
 public:
  Runner(const MatrixPlan& plan, std::ostream& err, bool quiet)
      : plan_(plan), err_(err), quiet_(quiet) {
    for (const PlannedCell& c : plan.cells)
      cells_.push_back({.id = c.id,
                        .scenario = c.scenario,
                        .allocator = c.allocator,
                        .device = c.device,
                        .budget = plan.budget,
                        .key = c.key,
                        .repeats = {}});
  }

  std::vector<MatrixCell> run(const std::atomic<bool>* stop) {
    std::vector<std::thread> workers;
    for (const int device : plan_.devices)
      workers.emplace_back([this, device, stop] { work(device, stop); });
    for (std::thread& w : workers)
      w.join();
    return cells_;
  }

 private:
  // Cells are taken in order; each is pinned to the worker's device.
  void work(int device, const std::atomic<bool>* stop) {
    for (;;) {
      std::size_t index = 0;
      {
        const std::lock_guard lock(mutex_);
        if (next_ >= cells_.size() || (stop != nullptr && stop->load())) return;
        index = next_++;
        cells_[index].device = device;
      }
      PlannedCell planned = plan_.cells[index];
      planned.device = device;
      std::vector<MatrixRepeat> repeats;
      for (std::uint32_t r = 1; r <= plan_.repeat; ++r) {
        if (r > 1 && stop != nullptr && stop->load()) break;
        const std::string dir =
            plan_.repeat == 1 ? planned.id : fmt::format("{}/r{}", planned.id, r);
        try {
          repeats.push_back(run_repeat(plan_, planned, dir, stop));
        } catch (const std::exception& e) {  // the process could not start (no fds, no memory)
          repeats.push_back(
              {.outcome = "error", .exit_code = -1, .dir = dir, .last_lines = {e.what()}});
        }
      }
      const std::lock_guard lock(mutex_);
      cells_[index].repeats = std::move(repeats);
      ++done_;
      progress(cells_[index]);
      try {
        write_matrix_json(plan_, cells_);  // a matrix killed half-way still leaves its record
      } catch (
          ...) {  // NOLINT(bugprone-empty-catch): the final write, after the workers, reports it
      }
    }
  }

  void progress(const MatrixCell& cell) const {
    if (quiet_) return;
    err_ << fmt::format("[{}/{}] {} on {} (device {}): {}\n", done_, cells_.size(), cell.scenario,
                        cell.allocator, cell.device, cell_line(cell));
  }

  const MatrixPlan& plan_;
  std::ostream& err_;
  bool quiet_;
  std::mutex mutex_;
  std::vector<MatrixCell> cells_;
  std::size_t next_ = 0;
  std::size_t done_ = 0;
};

std::vector<JUnitCase> junit_cases(const std::vector<MatrixCell>& cells) {
  std::vector<JUnitCase> cases;
  for (const MatrixCell& cell : cells) {
    const std::string outcome = cell_outcome(cell);
    JUnitCase c{.classname = "oomlab.matrix." + cell.scenario, .name = cell.allocator};
    for (const MatrixRepeat& r : cell.repeats)
      c.seconds += r.duration_ms / 1e3;
    c.message = cell_line(cell);
    if (outcome == "crash" || outcome == "timeout") {
      c.result = JUnitCase::Result::error;
    } else if (outcome == "error" || outcome == "interrupted" || outcome == "missing") {
      c.result = JUnitCase::Result::failure;
    }
    const auto worst = std::find_if(cell.repeats.begin(), cell.repeats.end(),
                                    [&](const MatrixRepeat& r) { return r.outcome == outcome; });
    if (worst != cell.repeats.end())
      c.details = fmt::format("{}", fmt::join(worst->last_lines, "\n"));
    if (c.result == JUnitCase::Result::passed) c.details = c.message;
    cases.push_back(std::move(c));
  }
  return cases;
}

int exit_code_of(const std::vector<MatrixCell>& cells, bool stopped) {
  if (stopped) return kExitInterrupted;
  bool failed = false;
  for (const MatrixCell& cell : cells) {
    const std::string outcome = cell_outcome(cell);
    if (outcome == "crash" || outcome == "timeout") return kExitCellFailed;
    // interrupted without a stop of ours: something else signalled the cell
    failed = failed || outcome == "error" || outcome == "missing" || outcome == "interrupted";
  }
  return failed ? kExitCheckFailed : kExitOk;
}

}  // namespace

int matrix_command(const MatrixOptions& options, const std::vector<std::string>& /*argv*/,
                   std::ostream& out, std::ostream& err) {
  check_destination("--junit", options.junit);  // before the cells: their result is not to be lost
  const MatrixPlan plan = plan_matrix(options, err);
  if (!options.quiet) {
    err << fmt::format(
        "matrix: {} cells ({} scenarios x {} allocators{}){}, devices {}, into {}/\n",
        plan.cells.size(), plan.scenario_count, plan.allocator_count,
        options.execs.empty() ? "" : fmt::format(", {} programs", options.execs.size()),
        plan.repeat > 1 ? fmt::format(", {} runs each", plan.repeat) : "",
        fmt::join(plan.devices, ","), plan.out.string());
    if (!options.execs.empty())
      err << fmt::format("matrix: programs run in {}\n", plan.directory.string());
  }
  // Cells die with us. Set before the runner starts any thread.
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  ::setenv(kMatrixParentVariable, std::to_string(::getpid()).c_str(), 1);
  const StopOnSignal signals;
  Runner runner(plan, err, options.quiet);
  const std::vector<MatrixCell> cells = runner.run(StopOnSignal::flag());
  const bool stopped = StopOnSignal::flag()->load();
  OutputFailures failures;
  const bool written = failures.attempt([&] { write_matrix_json(plan, cells); });
  // --junit - is the XML alone on stdout, as compare's: the table goes to stderr then.
  std::ostream& words = words_stream(options.junit, out, err);
  words << matrix_table(cells);
  if (written)
    words << fmt::format("matrix.json and one folder per cell in {}/\n", plan.out.string());
  if (!options.junit.empty()) {
    failures.attempt([&] {
      std::ostringstream xml;
      write_junit(xml, "oomlab matrix", junit_cases(cells));
      emit_output(options.junit, xml.str(), out);
    });
  }
  const int code = exit_code_of(cells, stopped);
  if (code == kExitCellFailed) err << "oomlab: a cell crashed or timed out (see the table)\n";
  if (code == kExitCheckFailed) err << "oomlab: a cell failed to run (see the table)\n";
  return failures.report(err, code);
}

std::string cell_outcome(const ChildResult& child, const nlohmann::json& summary) {
  std::string outcome = summary.is_object() ? summary.value("outcome", "error") : "";
  // `run` exits 1 for a failed check (corrupted data, memory left on the device) and 5 for a file
  // it could not write, with a summary that still says oom or completed: the cell failed.
  const bool check_failed = child.exit_code != kExitOk && child.exit_code != kExitInterrupted;
  const bool ran_to_its_end = outcome == "oom" || outcome == "completed";
  // A child that exited on its own after its run ended keeps its outcome, even when a stop or
  // the deadline came between its end and ours (a matrix interrupted right after the cell).
  if (child.signal == 0 && !child.out_overflow && ran_to_its_end)
    return check_failed ? "error" : outcome;
  if (child.timed_out) return "timeout";
  if (child.stopped) return "interrupted";
  if (child.out_overflow) return "error";
  if (child.signal != 0) return "crash";
  if (summary.is_object()) return outcome;
  // No summary: oomlab's own exits (1, 2, 3, 5, 130) are errors it explained; any other code is a
  // process that died on its way (exit() in a library, a failed assertion's handler).
  const bool oomlab_exit = child.exit_code == kExitCheckFailed || child.exit_code == kExitUsage ||
                           child.exit_code == kExitNoDevice || child.exit_code == kExitIo ||
                           child.exit_code == kExitInterrupted;
  return oomlab_exit ? "error" : "crash";
}

}  // namespace oomlab::cli
