// `oomlab frontier`: the smallest budget at which a scenario completes.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "allocators/torch/torch_options.hpp"
#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/parse.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "record/formats.hpp"
#include "reports/junit.hpp"
#include "reports/summary_json.hpp"
#include "run/frontier.hpp"

namespace oomlab::cli {

namespace {

namespace fs = std::filesystem;

// "  25,769,803,776 B (24.0 GiB)  oom (capacity)": the budget exact, then as people read it.
std::string trial_text(const FrontierTrial& t) {
  return fmt::format("{:>17} B  {:<11} {}{}", format_count(t.budget_bytes),
                     "(" + format_bytes(t.budget_bytes) + ")", to_string(t.outcome),
                     t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
}

std::string runs_text(std::size_t n) {
  return fmt::format("{} run{}", n, n == 1 ? "" : "s");
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
      {"allocator", {{"name", r.allocator}, {"options", params_json(r.allocator_options)}}},
      {"simulated", r.simulated},
      {"lower_bound", r.lower_bound},
      {"upper_bytes", r.upper_bytes},
      {"frontier_bytes", r.frontier_bytes ? nlohmann::ordered_json(*r.frontier_bytes)
                                          : nlohmann::ordered_json(nullptr)},
      {"failing_bytes", r.failing_bytes},
      {"timed_out", r.timed_out},
      {"resolution_bytes", kDevicePageBytes},
      {"trials", trials}};
}

// What a torch frontier was asked under: PyTorch's settings, and a fraction cap when it was one
// (a cap on the modelled card, not a card).
std::string torch_settings_text(const FrontierResult& r) {
  if (r.allocator != "torch") return {};
  const std::string conf = torch::alloc_conf(r.allocator_options);
  std::string out = conf.empty() ? " with PyTorch's defaults"
                                 : fmt::format(" with PYTORCH_CUDA_ALLOC_CONF={}", conf);
  if (r.allocator_options.choice("budget_by") == "fraction") {
    out += " under torch.cuda.set_per_process_memory_fraction (the budget is its cap)";
  }
  return out;
}

// The answer in one line: the frontier, or why there is none.
std::string answer_line(const FrontierResult& result, const std::string& name,
                        const std::string& timeout) {
  if (result.timed_out) {
    const FrontierTrial& t = result.trials.back();
    return fmt::format(
        "{}: the trial at {} B ({}) passed --timeout {} s: the search stopped there ({})", name,
        format_count(t.budget_bytes), format_bytes(t.budget_bytes), timeout,
        runs_text(result.trials.size()));
  }
  if (result.frontier_bytes) {
    return fmt::format("{}: completes at {} ({} B) and above, not at {} B (to {}; {}){}", name,
                       format_bytes(*result.frontier_bytes), format_count(*result.frontier_bytes),
                       format_count(result.failing_bytes), format_bytes(kDevicePageBytes),
                       runs_text(result.trials.size()),
                       result.lower_bound ? "; a lower bound for the whole job: the trace stops at "
                                            "the program's OOM"
                                          : "");
  }
  const FrontierTrial& t = result.trials.front();
  return fmt::format("{}: does not complete even at {} ({} B): {}{}", name,
                     format_bytes(result.upper_bytes), format_count(result.upper_bytes),
                     to_string(t.outcome),
                     t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
}

void write_json_file(const std::string& flag, const fs::path& path, const std::string& json) {
  try {
    write_output_file(path, json);
  } catch (const Error& e) {
    throw Error(ErrorKind::io, fmt::format("{}: {}", flag, e.what()));
  }
}

void write_frontier_junit(const FrontierResult& result, const std::string& scenario,
                          const std::string& answer, const std::string& path) {
  double seconds = 0;
  for (const FrontierTrial& t : result.trials)
    seconds += t.duration_ms / 1e3;
  JUnitCase c{.classname = "oomlab.frontier." + scenario,
              .name = result.allocator,
              .seconds = seconds,
              .details = answer};
  if (!result.frontier_bytes) {
    c.result = result.timed_out ? JUnitCase::Result::error : JUnitCase::Result::failure;
    c.message = answer;
  }
  std::ostringstream xml;
  write_junit(xml, "oomlab frontier", std::span<const JUnitCase>(&c, 1));
  write_json_file("--junit", path, xml.str());
}

// --out: the folder made (or refused) before the first trial.
void prepare_out(const std::string& out) {
  if (out.empty()) return;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    throw_usage(fmt::format("--out: cannot create folder {}: {}", out,
                            ec ? ec.message() : "a file of that name exists"));
  }
}

}  // namespace

int frontier_command(const RunOptions& o, std::ostream& out, std::ostream& err) {
  Console console(err, false);
  if (o.scenario.empty()) {
    throw_usage(
        "frontier: give a scenario (oomlab frontier replay --trace FILE) or a program (oomlab "
        "frontier exec -- CMD)");
  }
  RunConfig config = config_from(o);
  for (const std::string& note : read_budget(o.budget).notes)
    console.notice(note);
  check_destination("--json", o.json);
  check_destination("--junit", o.junit);
  prepare_out(o.out);
  resolve_allocator(config, console);
  config.notice = [&](std::string_view text) { console.notice(text); };
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  FrontierResult result;
  try {
    result = find_frontier(config, kDevicePageBytes, [&](const FrontierTrial& t) {
      if (!o.quiet) err << "  " << trial_text(t) << '\n' << std::flush;
    });
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every run freed what it took\n";
    return kExitInterrupted;
  }
  const std::string name =
      fmt::format("{} on {}{}{}", config.scenario, result.allocator,
                  result.simulated ? " (simulated)" : "", torch_settings_text(result));
  const std::string answer = answer_line(result, name, o.timeout);
  (o.json == "-" ? err : out) << answer << '\n';
  nlohmann::ordered_json doc = frontier_json(config, result);
  doc["answer"] = answer;  // what `oomlab report` of the folder leads with
  const std::string json = doc.dump(2) + "\n";
  if (o.json == "-") out << json;
  if (!o.json.empty() && o.json != "-") write_json_file("--json", o.json, json);
  if (!o.out.empty()) write_json_file("--out", fs::path(o.out) / "frontier.json", json);
  if (!o.junit.empty()) write_frontier_junit(result, config.scenario, answer, o.junit);
  if (result.timed_out) return kExitCellFailed;
  return result.frontier_bytes ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
