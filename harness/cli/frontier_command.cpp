// `oomlab frontier`: the smallest budget at which a scenario completes.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "record/formats.hpp"
#include "reports/summary_json.hpp"
#include "run/frontier.hpp"

namespace oomlab::cli {

namespace {

std::string trial_text(const FrontierTrial& t) {
  return fmt::format("{:>12}  {}{}", format_bytes(t.budget_bytes), to_string(t.outcome),
                     t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
}

nlohmann::ordered_json frontier_json(const RunConfig& config, const FrontierResult& r) {
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  for (const FrontierTrial& t : r.trials) {
    trials.push_back({{"budget_bytes", t.budget_bytes},
                      {"outcome", to_string(t.outcome)},
                      {"cause", t.cause ? nlohmann::ordered_json(to_string(*t.cause))
                                        : nlohmann::ordered_json(nullptr)},
                      {"duration_ms", t.duration_ms}});
  }
  return {
      {"schema", kFrontierSchema},
      {"oomlab", version_json()},
      {"scenario",
       {{"name", config.scenario}, {"params", params_json(config.params)}, {"seed", config.seed}}},
      {"allocator", {{"name", r.allocator}, {"options", params_json(config.allocator_options)}}},
      {"simulated", r.simulated},
      {"upper_bytes", r.upper_bytes},
      {"frontier_bytes", r.frontier_bytes ? nlohmann::ordered_json(*r.frontier_bytes)
                                          : nlohmann::ordered_json(nullptr)},
      {"failing_bytes", r.failing_bytes},
      {"resolution_bytes", kDevicePageBytes},
      {"trials", trials}};
}

}  // namespace

int frontier_command(const RunOptions& o, std::ostream& out, std::ostream& err) {
  Console console(err, false);
  RunConfig config = config_from(o);
  resolve_allocator(config, console);
  config.notice = [&](std::string_view text) { console.notice(text); };
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  const bool to_stdout = o.json == "-";
  FrontierResult result;
  try {
    result = find_frontier(config, kDevicePageBytes, [&](const FrontierTrial& t) {
      if (!o.quiet) err << "  " << trial_text(t) << '\n' << std::flush;
    });
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every run freed what it took\n";
    return kExitInterrupted;
  }
  const std::string name = fmt::format("{} on {}{}", config.scenario, result.allocator,
                                       result.simulated ? " (simulated)" : "");
  std::string answer;
  if (result.frontier_bytes) {
    answer = fmt::format("{}: completes at {} ({} B) and above, not at {} B (to {}; {} runs)\n",
                         name, format_bytes(*result.frontier_bytes),
                         format_count(*result.frontier_bytes), format_count(result.failing_bytes),
                         format_bytes(kDevicePageBytes), result.trials.size());
  } else {
    const FrontierTrial& t = result.trials.front();
    answer = fmt::format("{}: does not complete even at {}: {}{}\n", name,
                         format_bytes(result.upper_bytes), to_string(t.outcome),
                         t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
  }
  (to_stdout ? err : out) << answer;
  if (!o.json.empty()) {
    const std::string json = frontier_json(config, result).dump(2) + "\n";
    if (to_stdout) {
      out << json;
    } else {
      write_output_file(o.json, json);
    }
  }
  return result.frontier_bytes ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
