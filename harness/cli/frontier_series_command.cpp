// `oomlab frontier exec --from NAME=V1,V2 --at NAME=N -- CMD ... {NAME}`: a program's frontier at
// a value it is not run at, from its runs at smaller ones (pytorch/exec/exec_series.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/exec_config.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/series_cli.hpp"
#include "cli/signals.hpp"
#include "exec/exec_series.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "reports/searches/search_json.hpp"

namespace oomlab::cli {

namespace {

// --from and --at: both, one name, the name in the command; --confirm has nothing to confirm.
SeriesFrontierRequest request_from(const ExecOptions& o) {
  if (o.from.empty())
    throw_usage("--at needs --from: the values the program is run at (batch=1,2)");
  if (o.at.empty())
    throw_usage("--from needs --at: the value the frontier is asked for (batch=64)");
  if (o.confirm != "0") throw_usage("--confirm: with --from nothing is run at --at to confirm");
  const SeriesAsked asked = parse_series_values(o.from, "--from");
  const auto [name, value] = parse_series_value(o.at, "--at");
  if (name != asked.name) {
    throw_usage(
        fmt::format("--at names '{}', --from names '{}': give the same name", name, asked.name));
  }
  const std::string placeholder = "{" + name + "}";
  if (std::none_of(o.command.begin(), o.command.end(), [&](const std::string& word) {
        return word.find(placeholder) != std::string::npos;
      })) {
    throw_usage(fmt::format(
        "--from: the command has no {0}: put it where the value goes (oomlab frontier exec "
        "--from {1}=1,2 --at {1}=64 -- python train.py --{1} {0})",
        placeholder, name));
  }
  return {.name = name, .from = asked.values, .at = value};
}

std::string answer_line(const ExecOptions& o, const SeriesFrontierRequest& request,
                        const SeriesFrontier& r) {
  const std::string name = clip(command_line(o.command), 60);
  double seconds = 0.0;
  for (const Trial& t : r.trials)
    seconds += t.seconds;
  const std::string runs = fmt::format("{} runs at {}={}, {:.1f} s", r.trials.size(), request.name,
                                       fmt::join(request.from, ","), seconds);
  if (!r.frontier_bytes && !r.low_bytes) {
    return fmt::format("{}: no frontier at {}={} ({}): {}", name, request.name, request.at, runs,
                       r.note);
  }
  if (!r.frontier_bytes) {
    return fmt::format(
        "{}: at {}={} (predicted, not run) completes at no less than {} ({} B), where its "
        "convolutions give up refused workspaces; with each workspace on its line it needs more "
        "than the runs' budget, {} ({})",
        name, request.name, request.at, format_bytes(*r.low_bytes), format_count(*r.low_bytes),
        format_bytes(r.card_bytes), runs);
  }
  std::string line = fmt::format(
      "{}: at {}={} (predicted, not run) completes at {} ({} B) and above ({})", name, request.name,
      request.at, format_bytes(*r.frontier_bytes), format_count(*r.frontier_bytes), runs);
  if (r.low_bytes && *r.low_bytes < *r.frontier_bytes) {
    line += fmt::format("; from {} ({} B) where its convolutions give up refused workspaces",
                        format_bytes(*r.low_bytes), format_count(*r.low_bytes));
  }
  return line;
}

nlohmann::ordered_json answer_json(const SearchSubject& subject,
                                   const SeriesFrontierRequest& request, const SeriesFrontier& r,
                                   const std::string& answer) {
  BoundaryResult result;
  result.trials = r.trials;
  result.answer = r.frontier_bytes;
  result.predicted = r.frontier_bytes;
  result.prediction_note = r.note;
  nlohmann::ordered_json doc = frontier_json(subject, result, kDevicePageBytes, answer);
  for (std::size_t i = 0; i < r.trials.size() && i < doc["trials"].size(); ++i)
    doc["trials"][i]["value"] = r.trials[i].value;  // each run's value of the parameter
  doc["predicted"] = true;
  doc["at"] = {{"name", request.name}, {"value", request.at}};
  doc["outside_bytes"] = r.outside_bytes;
  if (r.low_bytes && (!r.frontier_bytes || *r.low_bytes < *r.frontier_bytes)) {
    doc["frontier_range_bytes"] = {*r.low_bytes, r.frontier_bytes
                                                     ? nlohmann::ordered_json(*r.frontier_bytes)
                                                     : nlohmann::ordered_json(nullptr)};
  }
  doc["made_from"] =
      r.fit ? made_from_json(request.name, request.from, *r.fit) : nlohmann::ordered_json(nullptr);
  return doc;
}

}  // namespace

int frontier_series_command(const ExecOptions& o, std::ostream& out, std::ostream& err) {
  Console console(err, false);
  ExecConfig config = exec_config_from(o);  // refuses a missing program first
  SeriesFrontierRequest request = request_from(o);
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  check_destination("--json", o.json);
  prepare_out_folder(o.out, o.force, "frontier.json");
  ExecSearchSession session(o, config, console);
  request.on_trial = [&](const Trial& t) {
    if (!o.quiet) err << value_trial_line(request.name, t) << '\n' << std::flush;
  };
  SeriesFrontier result;
  try {
    result = series_frontier(config, session.devices(), request);
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the runs stopped; the program's group was ended and every "
           "ballast freed\n";
    return kExitInterrupted;
  }
  session.close();
  SearchSubject subject{.scenario = "exec", .command = o.command, .allocator = "exec"};
  if (result.first) {
    subject.environment = result.first->environment;
    subject.device = result.first->device;
  }
  subject.kept_back_bytes = kept_back_bytes(subject.device ? &*subject.device : nullptr);
  const std::string answer = answer_line(o, request, result);
  std::ostream& said = words_stream(o.json, out, err);
  said << answer << '\n';
  const std::optional<std::uint64_t> best =
      result.frontier_bytes ? result.frontier_bytes : result.low_bytes;
  if (!o.quiet && best) {
    said << "note: " << result.note << '\n';
    said << cards_line(*best, subject.kept_back_bytes) << '\n';
  }
  write_search_json(o.json, o.out, "frontier.json",
                    answer_json(subject, request, result, answer).dump(2) + "\n", out);
  return best ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
