// `oomlab fit exec --range NAME=LO..HI -- CMD ... {NAME}`: the largest value of a program's
// setting at which it exits 0 under the budget, each trial a fresh process.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "cli/fit_grid_command.hpp"
#include "cli/fit_options.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "exec/exec_fit.hpp"
#include "exec/exec_frontier.hpp"
#include "oomlab/error.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab::cli {

namespace {

// The closing line: the prediction, its error and the time to the answer.
std::string prediction_line(const FitResult& r) {
  double seconds = 0.0;
  for (const Trial& t : r.trials)
    seconds += t.seconds;
  if (!r.predicted) {
    return fmt::format("no prediction: {} runs, {:.1f} s of runs to the answer", r.runs(), seconds);
  }
  const std::string error =
      !r.answer ? "no answer to compare"
      : *r.answer == *r.predicted
          ? "exact"
          : fmt::format(
                "off by {}{} ({:+.1f}%)", *r.predicted > *r.answer ? "+" : "-",
                *r.predicted > *r.answer ? *r.predicted - *r.answer : *r.answer - *r.predicted,
                100.0 * (static_cast<double>(*r.predicted) - static_cast<double>(*r.answer)) /
                    static_cast<double>(*r.answer));
  return fmt::format("prediction: {}={}, {}; {} runs, {:.1f} s of runs to the answer", r.range.name,
                     *r.predicted, error, r.runs(), seconds);
}

}  // namespace

int fit_exec_command(const FitExecOptions& options, std::ostream& out, std::ostream& err) {
  const ExecOptions& o = options.exec;
  // With --gpus, a round's runs end together: the line of what runs, on a terminal only.
  Console console(
      err, !o.quiet && (!o.gpus.empty() || !options.grid.empty()) && isatty(STDERR_FILENO) == 1);
  ExecConfig config = exec_config_from(o);  // refuses a missing program first
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  const FitRange range = parse_fit_range(options.range);
  check_fit_command(range, o.command);
  const unsigned confirm = parse_confirm(o.confirm);
  const std::vector<GridAxis> axes = parse_grid(options.grid, range, o.command);
  if (!options.markdown.empty() && axes.empty())
    throw_usage("--markdown: only with --grid (a search's own table: oomlab report DIR)");
  if (to_stdout(o.json) && to_stdout(options.markdown))
    throw_usage("only one of --json and --markdown can be '-' (stdout)");
  check_destination("--json", o.json);
  check_destination("--markdown", options.markdown);
  check_gpu_flags(o);
  prepare_out_folder(o.out, o.force, "fit.json");
  ExecSearchSession session(o, config, console, o.gpus);
  // A completed run's whole-process need: its snapshot's frontier through the model (the
  // settings it ran with) plus what it held outside the framework's allocator.
  const auto need_of = [&](RunResult& run) { return predict_from_snapshots(run, config.stop); };
  if (!axes.empty()) {
    ExecGridSearch grid{.axes = axes,
                        .fit = {.range = range, .confirm = confirm, .need_of = need_of}};
    return fit_grid_command(options, config, session, console, std::move(grid), out, err);
  }
  FitResult result;
  try {
    const ExecFitSearch search{
        .range = range,
        .confirm = confirm,
        .on_trial =
            [&](const Trial& t) {
              console.end_progress();
              if (!o.quiet) err << value_trial_line(range.name, t) << '\n' << std::flush;
            },
        .on_round =
            [&](const std::vector<std::uint64_t>& values, std::size_t done) {
              console.progress(fmt::format("fit exec · running {}={} on {} GPU{} · {} run{} done",
                                           range.name, fmt::join(values, ","), values.size(),
                                           values.size() == 1 ? "" : "s", done,
                                           done == 1 ? "" : "s"));
            },
        .need_of = need_of};
    result = fit_exec(config, session.gpus(), search);
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; the program's group was ended and every "
           "ballast freed\n";
    return kExitInterrupted;
  }
  session.close();
  const SearchSubject subject{
      .scenario = "exec",
      .command = o.command,
      .allocator = "exec",
      .environment = result.environment,
      .device = result.device,
      .kept_back_bytes = kept_back_bytes(result.device ? &*result.device : nullptr)};
  std::ostream& said = words_stream(o.json, out, err);
  const std::string answer = fit_answer(result, clip(command_line(o.command), 60));
  said << answer << '\n';
  if (!result.prediction_note.empty() && !o.quiet) said << result.prediction_note << '\n';
  if (!o.quiet) said << prediction_line(result) << '\n';
  if (result.answer && !o.quiet)
    said << cards_line(result.budget_bytes, subject.kept_back_bytes) << '\n';
  write_search_json(o.json, o.out, "fit.json", fit_json(subject, result, answer).dump(2) + "\n",
                    out);
  return fit_exit_code(result);
}

}  // namespace oomlab::cli
