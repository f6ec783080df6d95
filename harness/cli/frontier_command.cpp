// `oomlab frontier`: the smallest budget at which a scenario completes.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "pytorch/model/torch_options.hpp"
#include "record/formats.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/searches/search_json.hpp"
#include "reports/writers/junit.hpp"
#include "run/frontier.hpp"

namespace oomlab::cli {

namespace {

std::string runs_text(std::size_t n) {
  return fmt::format("{} run{}", n, n == 1 ? "" : "s");
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

// backend=async's frontier is the model's reading, as whatif's row says: where PyTorch's own lies.
// A range whose two ends read the same is none: the figure is shown plainly.
std::optional<torch::FrontierRange> approximate_range(const FrontierResult& r) {
  if (r.allocator != "torch" || !r.answer) return std::nullopt;
  const auto range = torch::frontier_range(r.allocator_options, *r.answer);
  if (range && format_bytes(range->low_bytes) == format_bytes(range->high_bytes))
    return std::nullopt;
  return range;
}

// The answer in one line: the frontier, or why there is none.
std::string answer_line(const FrontierResult& result, const std::string& name,
                        const std::string& timeout) {
  if (result.timed_out) {
    const Trial& t = result.trials.back();
    return fmt::format(
        "{}: the trial at {} B ({}) passed --timeout {} s: the search stopped there ({})", name,
        format_count(t.budget_bytes), format_bytes(t.budget_bytes), timeout,
        runs_text(result.trials.size()));
  }
  if (result.answer) {
    const auto range = approximate_range(result);
    return fmt::format(
        "{}: completes at {}{} ({} B) and above, not at {} B (to {}; {}){}{}", name,
        range ? "~" : "", format_bytes(*result.answer), format_count(*result.answer),
        format_count(result.beyond.value_or(0)), format_bytes(kDevicePageBytes),
        runs_text(result.trials.size()),
        result.lower_bound
            ? fmt::format("; a lower bound for the whole job: {}",
                          result.lower_bound_why.empty() ? "the trace stops at the program's OOM"
                                                         : result.lower_bound_why)
            : "",
        range ? fmt::format("; approximate: backend=async is a model of the "
                            "driver's pool from measurements, and PyTorch's own "
                            "frontier lies in {}..{} (docs/torch.md)",
                            format_bytes(range->low_bytes), format_bytes(range->high_bytes))
              : "");
  }
  const Trial& t = result.trials.front();
  return fmt::format("{}: does not complete even at {} ({} B): {}{}", name,
                     format_bytes(result.upper_bytes()), format_count(result.upper_bytes()),
                     to_string(t.outcome),
                     t.cause ? fmt::format(" ({})", to_string(*t.cause)) : std::string());
}

void write_frontier_junit(const FrontierResult& result, const std::string& scenario,
                          const std::string& answer, const std::string& path, std::ostream& out) {
  double seconds = 0;
  for (const Trial& t : result.trials)
    seconds += t.seconds;
  JUnitCase c{.classname = "oomlab.frontier." + scenario,
              .name = result.allocator,
              .seconds = seconds,
              .details = answer};
  if (!result.answer) {
    c.result = result.timed_out ? JUnitCase::Result::error : JUnitCase::Result::failure;
    c.message = answer;
  }
  std::ostringstream xml;
  write_junit(xml, "oomlab frontier", std::span<const JUnitCase>(&c, 1));
  try {
    emit_output(path, xml.str(), out);
  } catch (const Error& e) {
    throw Error(ErrorKind::io, fmt::format("--junit: {}", e.what()));
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
  if (to_stdout(o.json) && to_stdout(o.junit))
    throw_usage("only one of --json and --junit can be '-' (stdout)");
  prepare_out_folder(o.out, o.force, "frontier.json");
  resolve_allocator(config, console);
  config.notice = [&](std::string_view text) { console.notice(text); };
  const StopOnSignal signals;
  config.stop = StopOnSignal::flag();
  FrontierResult result;
  try {
    result = find_frontier(config, kDevicePageBytes, [&](const Trial& t) {
      if (!o.quiet) err << budget_trial_line(t) << '\n' << std::flush;
    });
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every run freed what it took\n";
    return kExitInterrupted;
  }
  const std::string name =
      fmt::format("{} on {}{}{}", config.scenario, result.allocator,
                  result.simulated ? " (simulated)" : "", torch_settings_text(result));
  const std::string answer = answer_line(result, name, o.timeout);
  const SearchSubject subject{
      .scenario = config.scenario,
      .params = config.params,
      .seed = config.seed,
      .allocator = result.allocator,
      .backend = result.backend,
      .allocator_options = result.allocator_options,
      .simulated = result.simulated,
      .lower_bound = result.lower_bound,
      .kept_back_bytes = kept_back_bytes(result.device ? &*result.device : nullptr)};
  std::ostream& said = words_stream(to_stdout(o.junit) ? o.junit : o.json, out, err);
  said << answer << '\n';
  if (result.answer && !o.quiet)
    said << cards_line(*result.answer, subject.kept_back_bytes) << '\n';
  const std::string json = frontier_json(subject, result, kDevicePageBytes, answer).dump(2) + "\n";
  write_search_json(o.json, o.out, "frontier.json", json, out);
  if (!o.junit.empty()) write_frontier_junit(result, config.scenario, answer, o.junit, out);
  if (result.timed_out) return kExitCellFailed;
  return result.answer ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
