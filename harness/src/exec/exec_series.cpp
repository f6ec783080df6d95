#include "exec/exec_series.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "exec/exec_fit.hpp"
#include "exec/exec_frontier.hpp"
#include "exec/snapshot_folder.hpp"
#include "oomlab/error.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// One run of the program at `value` with a snapshot; its trace and what it held outside the
// allocator, or why there is none (`why` set).
struct SeriesRun {
  std::shared_ptr<const trace::Trace> trace;
  std::uint64_t outside_bytes = 0;
  const ProgramModelling* modelling = nullptr;  // the model of its snapshots
  std::string why;
};

SeriesRun run_at(ExecConfig& config, const ExecConfig& base, ExecDevices& devices,
                 const SeriesFrontierRequest& request, std::uint64_t value,
                 const std::filesystem::path& folder, SeriesFrontier& out) {
  const std::string& name = request.name;
  config.command = command_at(base.command, name, value);
  config.program_environment = base.program_environment;
  config.program_environment.emplace_back(fit_variable(name), std::to_string(value));
  config.snapshot.folder = folder;
  RunResult run = run_exec(config, devices);
  config.notice = nullptr;  // the first run's notices are enough
  Trial trial = program_trial(run);
  trial.value = value;
  out.trials.push_back(trial);
  if (request.on_trial) request.on_trial(trial);
  if (!out.first) {
    out.card_bytes = run.budget_bytes;
    out.first = run;
  }
  if (run.outcome != Outcome::completed) {
    return {.why = fmt::format("the run at {}={} did not complete ({}{}): run at smaller values",
                               name, value, to_string(run.outcome),
                               trial.message.empty() ? "" : ": " + trial.message)};
  }
  const ProgramModelling* modelling = program_modelling(run);
  if (modelling != nullptr) modelling->model(run, base.stop);
  if (run.models.empty()) {
    return {.why = fmt::format("the run at {}={} left no snapshot of {}'s allocator to read{}",
                               name, value, allocator_owner(modelling),
                               run.program ? unread_words(*run.program) : "")};
  }
  const auto most = std::max_element(run.models.begin(), run.models.end(),
                                     [](const ProgramModel& a, const ProgramModel& b) {
                                       return a.process_bytes < b.process_bytes;
                                     });
  return {.trace = std::make_shared<const trace::Trace>(trace::load(
              most->snapshot, {.device = 0, .completed = run.outcome == Outcome::completed})),
          .outside_bytes = most->outside_allocator_bytes,
          .modelling = modelling};
}

void answer_from(const trace::TraceSeries& series, const SeriesFrontierRequest& request,
                 const ProgramModelling& modelling, const std::atomic<bool>* stop,
                 SeriesFrontier& out) {
  using Rule = trace::TraceSeries::Rule;
  const std::uint64_t card =
      out.card_bytes > out.outside_bytes ? out.card_bytes - out.outside_bytes : 0;
  const auto frontier = [&](Rule rule) -> std::optional<std::uint64_t> {
    if (modelling.frontier_series == nullptr) return std::nullopt;
    return modelling.frontier_series(
        {.series = series,
         .range = {.name = request.name, .lo = request.at, .hi = request.at},
         .budget_bytes = card,
         .stop = stop,
         .rule = rule,
         .outside_bytes = out.outside_bytes});
  };
  const std::optional<std::uint64_t> lines = frontier(Rule::lines);
  const bool adapts = series.fit().transient > 0;
  const std::optional<std::uint64_t> low = adapts ? frontier(Rule::refusable) : lines;
  const std::string made = fmt::format(
      "the trace made at {}={} from the runs at {}={} ({:.1f}% of their requests aligned, {} "
      "scaling with {}), replayed on the model under the settings they ran with, plus {} the "
      "process held outside {}'s allocator",
      request.name, request.at, request.name, fmt::join(request.from, ","),
      100.0 * series.fit().aligned_share, format_count(series.fit().scaling), request.name,
      format_bytes(out.outside_bytes), allocator_owner(&modelling));
  if (lines) out.frontier_bytes = *lines + out.outside_bytes;
  if (low) out.low_bytes = *low + out.outside_bytes;
  if (!lines && !low) {
    out.note = fmt::format("{}: it does not complete even at the runs' budget, {}", made,
                           format_bytes(out.card_bytes));
    return;
  }
  out.note = made;
  if (adapts) {
    out.note += fmt::format(
        "; {} requests live inside one call and change with {} (cuDNN's workspaces): the "
        "frontier is {} with each on its line, {} with each given up when refused, as a capped "
        "program's convolutions do (one that falls back to a smaller workspace lies between)",
        format_count(series.fit().transient), request.name,
        lines ? format_bytes(*out.frontier_bytes)
              : "over the runs' budget (" + format_bytes(out.card_bytes) + ")",
        low ? format_bytes(*out.low_bytes)
            : "over the runs' budget (" + format_bytes(out.card_bytes) + ")");
  }
}

}  // namespace

SeriesFrontier series_frontier(const ExecConfig& base, ExecDevices& devices,
                               const SeriesFrontierRequest& request) {
  SeriesFrontier out;
  const SnapshotFolder scratch;
  if (!base.snapshot.enabled || scratch.path().empty()) {
    out.note = fmt::format(
        "no answer: the runs record no snapshot (--no-snapshot, or no temporary folder)");
    return out;
  }
  ExecConfig config = base;
  config.folder.clear();  // the runs keep no files; what matters is in the answer
  config.out_fd = -1;
  config.err_fd = -1;
  config.snapshot.python_stacks = true;  // frames align the runs' requests
  config.snapshot.predicting = true;
  std::vector<trace::SeriesPoint> points;
  const ProgramModelling* modelling = nullptr;
  for (std::size_t i = 0; i < request.from.size(); ++i) {
    const std::uint64_t value = request.from[i];
    SeriesRun run = run_at(config, base, devices, request, value,
                           scratch.path() / fmt::format("run-{}", i), out);
    if (!run.why.empty()) {
      out.note = "no answer: " + run.why;
      return out;
    }
    points.push_back({.value = value, .trace = std::move(run.trace)});
    modelling = run.modelling;
    out.outside_bytes = std::max(out.outside_bytes, run.outside_bytes);
  }
  try {
    const trace::TraceSeries series(request.name, points);
    out.fit = series.fit();
    if (const auto why = series.misaligned()) {
      out.note = fmt::format("no answer: {}: run the program at {}={} instead", *why, request.name,
                             request.at);
      return out;
    }
    if (modelling == nullptr) {
      out.note = "no answer: no framework models the runs' snapshots";
      return out;
    }
    answer_from(series, request, *modelling, base.stop, out);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::input) throw;
    out.note = fmt::format("no answer from the snapshots: {}", e.what());
  }
  return out;
}

}  // namespace oomlab
