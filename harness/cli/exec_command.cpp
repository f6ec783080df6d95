// `oomlab exec -- CMD`: typed config from the flags, the devices opened, the program run, its
// record written as a run's is, and the exit code.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "cli/matrix_plan.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/run_outputs.hpp"
#include "cli/signals.hpp"
#include "exec/exec_frontier.hpp"
#include "exec/exec_run.hpp"
#include "exec/snapshot_folder.hpp"
#include "oomlab/error.hpp"
#include "oomlab/framework.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// What run's outputs need to know, from exec's flags: the folder named after the program.
RunOptions record_options(const ExecOptions& o) {
  RunOptions r;
  r.scenario = "exec";
  r.allocator = fs::path(o.command.front()).filename().string();
  r.out = o.out;
  r.no_out = o.no_out;
  r.force = o.force;
  r.json = o.json;
  r.junit = o.junit;
  r.quiet = o.quiet;
  r.expect_oom = o.expect_oom;
  r.expect_no_oom = o.expect_no_oom;
  return r;
}

// The run's exit code; a program that failed for another reason than memory is exit 1, and so
// is a remedy the model named that still ran out of memory.
int exec_exit_code(const RunResult& result, const RunOptions& o, std::string* why) {
  if (result.outcome == Outcome::error) {
    *why = result.error_message;
    return kExitCheckFailed;
  }
  const int code = exit_code_for(result, o, why);
  if (code != kExitOk || result.models.empty()) return code;
  const std::optional<RemedyCheck>& check = result.models.front().remedy_check;
  if (check && !check->held && check->outcome == Outcome::oom) {
    const ProgramModelling* modelling = program_modelling(result);
    *why = "--check-remedy: " + (modelling != nullptr && modelling->remedy_words != nullptr
                                     ? modelling->remedy_words(*check)
                                     : check->line);
    return kExitCheckFailed;
  }
  return code;
}

// The model's answers from the program's snapshots, and --check-remedy's rerun.
void model_and_check(const ExecOptions& o, const ExecConfig& config,
                     std::span<ExecDevices* const> gpus, RunResult& result, Console& console) {
  const ProgramModelling* modelling = program_modelling(result);
  if (modelling == nullptr) return;  // no framework models the snapshots
  modelling->model(result, config.stop);
  if (!o.check_remedy || modelling->check_remedy == nullptr) return;
  std::string text;
  try {
    const std::string why = modelling->check_remedy(config, gpus, result);
    if (why.empty()) return;
    text = "--check-remedy: nothing to check: " + why;
  } catch (const Error& e) {  // the first run's record stands
    text = fmt::format("--check-remedy: the program could not be run again: {}", e.what());
  }
  console.notice(text);
  result.notices.push_back(text);
}

// The snapshots of a run with no folder: read by the model, then removed with their temporary
// folder; the record names them by their file names only.
void forget_read_snapshots(RunResult& result) {
  ProgramRun& p = *result.program;
  if (p.snapshots.empty()) return;
  p.snapshot_note = fmt::format(
      "{} snapshot(s) read by the model, then removed: the run had no folder to keep them in",
      p.snapshots.size());
  p.snapshots.clear();
  for (ProgramModel& m : result.models)
    m.snapshot = m.snapshot.filename();
}

}  // namespace

int exec_command(const ExecOptions& o, const std::vector<std::string>& argv, std::ostream& out,
                 std::ostream& err) {
  Console console(err, false);
  ExecConfig config = exec_config_from(o);
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  const RunOptions record_as = record_options(o);
  check_destinations(record_as);
  config.notice = [&](std::string_view text) { console.notice(text); };
  config.environment = probe_environment();
  // --gpus: the run on the first, --check-remedy's reruns that may go at once on them all.
  std::vector<std::unique_ptr<ExecDevices>> opened;
  if (o.gpus.empty()) {
    opened.push_back(open_exec_devices(exec_devices_from(o, *config.environment)));
  } else {
    if (!o.check_remedy)
      throw_usage("--gpus: only with --check-remedy (its reruns go on the GPUs at once)");
    if (!o.devices.empty())
      throw_usage("--gpus: not with --devices (the program runs on the first GPU of --gpus)");
    for (const int gpu : choose_devices(o.gpus, *config.environment, "--gpus"))
      opened.push_back(open_exec_devices({gpu}));
  }
  std::vector<ExecDevices*> gpus;
  gpus.reserve(opened.size());
  for (const auto& d : opened)
    gpus.push_back(d.get());
  const bool folder_existed = !o.out.empty() && fs::exists(o.out);
  std::vector<std::string> invocation = argv;
  invocation.emplace_back("--");
  invocation.insert(invocation.end(), o.command.begin(), o.command.end());
  const std::optional<fs::path> folder = prepare_run_folder(record_as, "exec");
  const RunRecord record{record_as, {invocation, {}, folder.value_or(fs::path())}, folder};
  if (record.folder) config.folder = *record.folder;
  // With --json - or --junit -, stdout carries that alone: the program's stdout goes on to stderr.
  if (!stdout_output(record_as).empty()) config.out_fd = STDERR_FILENO;
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  // Without a run folder the snapshots live only until the model has read them.
  const std::optional<SnapshotFolder> kept =
      record.folder ? std::nullopt : std::make_optional<SnapshotFolder>();
  if (kept && config.snapshot.folder.empty()) config.snapshot.folder = kept->path();
  RunResult result;
  try {
    result = run_exec(config, *gpus.front());
    model_and_check(o, config, gpus, result, console);
    if (kept) forget_read_snapshots(result);
  } catch (...) {
    std::error_code ec;
    if (record.folder && !folder_existed) fs::remove_all(*record.folder, ec);
    throw;
  }
  opened.clear();  // oomlab's own contexts go before the record is written
  OutputFailures failures;
  write_outputs(result, record, out, err, failures);
  std::string why;
  const int code = exec_exit_code(result, record_as, &why);
  if (!o.junit.empty()) failures.attempt([&] { write_run_junit(result, o.junit, code, why, out); });
  if (code != kExitOk) err << fmt::format("oomlab: {}\n", why);
  return failures.report(err, code);
}

}  // namespace oomlab::cli
