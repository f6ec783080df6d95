// `oomlab frontier`: the smallest budget at which a scenario completes.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "allocators/backends.hpp"
#include "cli/commands.hpp"
#include "cli/console.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/search_output.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
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

// What the frontier was asked under, in the words of the framework whose allocator the backend
// models ("" for the others).
std::string settings_text(const FrontierResult& r) {
  const BackendInfo& info = backend_info(r.backend);
  return info.settings_words != nullptr ? info.settings_words(r.allocator_options) : "";
}

// An approximate backend's frontier is the model's reading: where the real one lies. A range
// whose two ends read the same is none: the figure is shown plainly.
std::optional<ByteRange> approximate_range(const FrontierResult& r) {
  const BackendInfo& info = backend_info(r.backend);
  if (info.frontier_range == nullptr || !r.answer) return std::nullopt;
  const auto range = info.frontier_range(r.allocator_options, *r.answer);
  if (range && format_bytes(range->low_bytes) == format_bytes(range->high_bytes))
    return std::nullopt;
  return range;
}

std::string approximate_text(const FrontierResult& r, ByteRange range) {
  const BackendInfo& info = backend_info(r.backend);
  return info.approximate_words != nullptr
             ? info.approximate_words(r.allocator_options, range)
             : fmt::format("the real allocator's lies in {}..{}", format_bytes(range.low_bytes),
                           format_bytes(range.high_bytes));
}

// The answer in one line: the frontier, or why there is none.
std::string answer_line(const FrontierResult& result, const std::string& name,
                        const std::string& timeout, std::uint64_t resolution) {
  if (result.timed_out) {
    const Trial& t = result.trials.back();
    return fmt::format(
        "{}: the trial at {} B ({}) passed --timeout {} s: the search stopped there ({})", name,
        format_count(t.budget_bytes), format_bytes(t.budget_bytes), timeout,
        runs_text(result.trials.size()));
  }
  if (result.answer) {
    const auto range = approximate_range(result);
    return fmt::format("{}: completes at {}{} ({} B) and above, not at {} B (to {}; {}){}{}", name,
                       range ? "~" : "", format_bytes(*result.answer), format_count(*result.answer),
                       format_count(result.beyond.value_or(0)), format_bytes(resolution),
                       runs_text(result.trials.size()),
                       result.lower_bound ? fmt::format("; a lower bound for the whole job: {}",
                                                        result.lower_bound_why.empty()
                                                            ? "the trace stops at the program's OOM"
                                                            : result.lower_bound_why)
                                          : "",
                       range ? "; approximate: " + approximate_text(result, *range) : "");
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
  // To the backend's own granularity (its memory source's): no finer answer means anything.
  const std::uint64_t resolution =
      backend_info(memory_source(config.allocator, config.allocator_options)).granularity_bytes;
  FrontierResult result;
  try {
    result = find_frontier(config, resolution, [&](const Trial& t) {
      if (!o.quiet) err << budget_trial_line(t) << '\n' << std::flush;
    });
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the search stopped; every run freed what it took\n";
    return kExitInterrupted;
  }
  const std::string name =
      fmt::format("{} on {}{}{}", config.scenario, result.allocator,
                  result.simulated ? " (simulated)" : "", settings_text(result));
  const std::string answer = answer_line(result, name, o.timeout, resolution);
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
  const std::string json = frontier_json(subject, result, resolution, answer).dump(2) + "\n";
  write_search_json(o.json, o.out, "frontier.json", json, out);
  if (!o.junit.empty()) write_frontier_junit(result, config.scenario, answer, o.junit, out);
  if (result.timed_out) return kExitCellFailed;
  return result.answer ? kExitOk : kExitCheckFailed;
}

}  // namespace oomlab::cli
