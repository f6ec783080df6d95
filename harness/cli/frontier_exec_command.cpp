// `oomlab frontier exec -- CMD`: the smallest budget at which a program exits 0.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "exec/exec_frontier.hpp"
#include "exec/exec_run.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "record/formats.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab::cli {

namespace {

// "; the prediction held" or how far it was off.
std::string prediction_verdict(const ExecFrontier& r) {
  if (!r.predicted || !r.answer) return "";
  const std::uint64_t p = *r.predicted;
  const std::uint64_t f = *r.answer;
  if (p > r.beyond.value_or(0) && p <= f) return "; the model's prediction held";
  return fmt::format("; the model predicted {}, {} {}", format_bytes(p),
                     format_bytes(p > f ? p - f : f - p), p > f ? "too high" : "too low");
}

std::string answer_line(const ExecOptions& o, std::uint64_t resolution, const ExecFrontier& r) {
  const std::string name = clip(command_line(o.command), 60);
  if (r.timed_out) {
    return fmt::format("{}: a trial passed --timeout {} s: the search stopped there ({} runs)",
                       name, o.timeout, r.trials.size());
  }
  if (!r.answer) {
    const Trial& t = r.trials.front();
    return fmt::format("{}: does not complete even at {} ({} B): {}{}", name,
                       format_bytes(r.upper_bytes()), format_count(r.upper_bytes()),
                       to_string(t.outcome), t.message.empty() ? "" : ": " + t.message);
  }
  std::string line = fmt::format(
      "{}: completes at {} ({} B) and above, not at {} B (to {}; {} runs{})", name,
      format_bytes(*r.answer), format_count(*r.answer), format_count(r.beyond.value_or(0)),
      format_bytes(resolution), r.trials.size(), prediction_verdict(r));
  const Confirmation& c = r.confirmation;
  if (c.runs > 0) {
    line += fmt::format("; confirmed: {} of {} completed at it, {} of {} under it",
                        c.answer_completed, c.runs, c.beyond_completed, c.runs);
  }
  if (r.not_monotonic) line += "; not monotonic: a budget under it completed after it had failed";
  return line;
}

}  // namespace

int frontier_exec_command(const ExecOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.from.empty() || !o.at.empty()) return frontier_series_command(o, out, err);
  Console console(err, false);
  ExecConfig config = exec_config_from(o);
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  check_destination("--json", o.json);
  std::uint64_t resolution = 0;
  std::uint64_t confirm = 0;
  try {
    resolution = parse_size(o.resolution).value;
  } catch (const Error& e) {
    throw_usage(fmt::format("--resolution: {}", e.what()));
  }
  try {
    confirm = parse_unsigned(o.confirm);
  } catch (const Error& e) {
    throw_usage(fmt::format("--confirm: {}", e.what()));
  }
  if (resolution < kDevicePageBytes)
    throw_usage(fmt::format("--resolution: '{}' is under 2 MiB, the device's page", o.resolution));
  if (confirm > 100) throw_usage(fmt::format("--confirm: '{}' is more than 100", o.confirm));
  check_gpu_flags(o);
  prepare_out_folder(o.out, o.force, "frontier.json");
  ExecSearchSession session(o, config, console, o.gpus);
  ExecFrontier result;
  std::size_t session_gpus = 1;
  try {
    const ExecSearch search{.resolution_bytes = resolution,
                            .confirm = static_cast<unsigned>(confirm),
                            .on_trial =
                                [&](const Trial& t) {
                                  if (!o.quiet) err << program_trial_line(t) << '\n' << std::flush;
                                },
                            .on_prediction =
                                [&](const std::string& note) {
                                  if (!o.quiet) err << note << '\n' << std::flush;
                                }};
    result = find_exec_frontier(config, session.gpus(), search);
    session_gpus = session.gpus().size();
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; the program's group was ended and every "
           "ballast freed\n";
    return kExitInterrupted;
  }
  session.close();
  const std::string answer = answer_line(o, resolution, result);
  std::ostream& said = words_stream(o.json, out, err);
  said << answer << '\n';
  SearchSubject subject{.scenario = "exec", .command = o.command, .allocator = "exec"};
  if (result.top) {
    subject.environment = result.top->environment;
    subject.device = result.top->device;
    if (result.top->program) subject.program = &*result.top->program;
    if (!result.top->models.empty()) subject.model = &result.top->models.front();
  }
  subject.kept_back_bytes = kept_back_bytes(subject.device ? &*subject.device : nullptr);
  if (result.answer && !o.quiet)
    said << cards_line(*result.answer, subject.kept_back_bytes) << '\n';
  if (result.rounds > 0 && !o.quiet) {
    said << fmt::format(
        "{} runs in {} rounds on {} GPUs; {} of them beside the search's own, "
        "not needed by the answer\n",
        result.runs() + result.spare.size(), result.rounds, session_gpus, result.spare.size());
  }
  const std::string text = frontier_json(subject, result, resolution, answer).dump(2) + "\n";
  write_search_json(o.json, o.out, "frontier.json", text, out);
  if (result.timed_out) return kExitCellFailed;
  return result.answer ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
