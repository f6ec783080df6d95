// `oomlab frontier exec -- CMD`: the smallest budget at which a program exits 0.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "cli/parse.hpp"
#include "cli/signals.hpp"
#include "exec/exec_frontier.hpp"
#include "exec/exec_run.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "reports/frontier_exec_json.hpp"

namespace oomlab::cli {

namespace {

namespace fs = std::filesystem;

std::string clip(const std::string& text, std::size_t most) {
  return text.size() <= most ? text : text.substr(0, most - 3) + "...";
}

// "prediction   2,921,332,736 B  (2.72 GiB)  completed   12.1 s  peak 2.70 GiB  (verifies ...)"
std::string trial_line(const ExecTrial& t) {
  const std::string how = std::string(to_string(t.outcome)) +
                          (t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
  return fmt::format("{:<10} {:>17} B  {:<11} {:<25} {:>6.1f} s  peak {}{}{}", to_string(t.role),
                     format_count(t.budget_bytes), "(" + format_bytes(t.budget_bytes) + ")", how,
                     t.seconds, format_bytes(t.peak_bytes),
                     t.verifies_prediction ? "  (verifies the prediction)" : "",
                     t.oom_line.empty() ? std::string() : "  " + clip(t.oom_line, 110));
}

// "; the prediction held" or how far it was off.
std::string prediction_verdict(const ExecFrontier& r) {
  if (!r.predicted_bytes || !r.frontier_bytes) return "";
  const std::uint64_t p = *r.predicted_bytes;
  const std::uint64_t f = *r.frontier_bytes;
  if (p > r.failing_bytes && p <= f) return "; the model's prediction held";
  return fmt::format("; the model predicted {}, {} {}", format_bytes(p),
                     format_bytes(p > f ? p - f : f - p), p > f ? "too high" : "too low");
}

std::string answer_line(const ExecOptions& o, std::uint64_t resolution, const ExecFrontier& r) {
  const std::string name = clip(command_line(o.command), 60);
  if (r.timed_out) {
    return fmt::format("{}: a trial passed --timeout {} s: the search stopped there ({} runs)",
                       name, o.timeout, r.trials.size());
  }
  if (!r.frontier_bytes) {
    const ExecTrial& t = r.trials.front();
    return fmt::format("{}: does not complete even at {} ({} B): {}{}", name,
                       format_bytes(r.upper_bytes), format_count(r.upper_bytes),
                       to_string(t.outcome), t.oom_line.empty() ? "" : ": " + t.oom_line);
  }
  std::string line =
      fmt::format("{}: completes at {} ({} B) and above, not at {} B (to {}; {} runs{})", name,
                  format_bytes(*r.frontier_bytes), format_count(*r.frontier_bytes),
                  format_count(r.failing_bytes), format_bytes(resolution), r.trials.size(),
                  prediction_verdict(r));
  if (r.confirm_runs > 0) {
    line += fmt::format("; confirmed: {} of {} completed at it, {} of {} under it",
                        r.frontier_passed, r.confirm_runs, r.below_passed, r.confirm_runs);
  }
  return line;
}

}  // namespace

int frontier_exec_command(const ExecOptions& o, std::ostream& out, std::ostream& err) {
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
  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec || !fs::is_directory(o.out))
      throw_usage(fmt::format("--out: cannot create folder {}", o.out));
  }
  config.notice = [&](std::string_view text) { console.notice(text); };
  config.environment = probe_environment();
  std::unique_ptr<ExecDevices> devices =
      open_exec_devices(exec_devices_from(o, *config.environment));
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  ExecFrontier result;
  try {
    const ExecSearch search{.resolution_bytes = resolution,
                            .confirm = static_cast<unsigned>(confirm),
                            .on_trial =
                                [&](const ExecTrial& t) {
                                  if (!o.quiet) err << trial_line(t) << '\n' << std::flush;
                                },
                            .on_prediction =
                                [&](const std::string& note) {
                                  if (!o.quiet) err << note << '\n' << std::flush;
                                }};
    result = find_exec_frontier(config, *devices, search);
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; the program's group was ended and every "
           "ballast freed\n";
    return kExitInterrupted;
  }
  devices.reset();
  const std::string answer = answer_line(o, resolution, result);
  (o.json == "-" ? err : out) << answer << '\n';
  nlohmann::ordered_json doc = frontier_exec_json(o.command, resolution, result);
  doc["answer"] = answer;  // what `oomlab report` of the folder leads with
  const std::string text = doc.dump(2) + "\n";
  if (o.json == "-") out << text;
  if (!o.json.empty() && o.json != "-") write_output_file(o.json, text);
  if (!o.out.empty()) write_output_file(fs::path(o.out) / "frontier.json", text);
  if (result.timed_out) return kExitCellFailed;
  return result.frontier_bytes ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
