#include "exec/exec_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

#include "exec/exec_frontier.hpp"
#include "exec/snapshot_folder.hpp"
#include "oomlab/error.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/units.hpp"
#include "run/parallel_each.hpp"
#include "run/value_rounds.hpp"
#include "trace/trace_series.hpp"

namespace oomlab {

namespace {

namespace fs = std::filesystem;

// What the model said of each completed run (value, whole-process need), and what it could not.
class Needs {
 public:
  void add(std::uint64_t value, std::uint64_t need) { needs_.emplace_back(value, need); }
  void missing(std::string why) { missing_ = std::move(why); }
  [[nodiscard]] Prediction predict(std::uint64_t budget, const std::string& name) const {
    if (needs_.size() < 3) {
      if (!missing_.empty()) return {.note = "no prediction: " + missing_};
      return {.note = "no prediction: the model needs three runs that completed, on a line"};
    }
    const std::size_t n = needs_.size();
    if (auto off = off_the_line(needs_[n - 3], needs_[n - 2], needs_[n - 1], name))
      return {.note = "no prediction yet: " + *off};
    return predict_largest(needs_[n - 2], needs_[n - 1], budget, name);
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> needs_;
  std::string missing_;
};

}  // namespace

std::vector<std::string> command_at(const std::vector<std::string>& command,
                                    const std::string& name, std::uint64_t value) {
  const std::string placeholder = "{" + name + "}";
  const std::string text = std::to_string(value);
  std::vector<std::string> out = command;
  for (std::string& word : out) {
    for (std::size_t at = word.find(placeholder); at != std::string::npos;
         at = word.find(placeholder, at + text.size()))
      word.replace(at, placeholder.size(), text);
  }
  return out;
}

std::string fit_variable(const std::string& name) {
  std::string out = "OOMLAB_FIT_";
  for (const char c : name)
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::string> off_the_line(std::pair<std::uint64_t, std::uint64_t> a,
                                        std::pair<std::uint64_t, std::uint64_t> b,
                                        std::pair<std::uint64_t, std::uint64_t> c,
                                        const std::string& name) {
  const auto slope = [](std::pair<std::uint64_t, std::uint64_t> x,
                        std::pair<std::uint64_t, std::uint64_t> y) {
    return (static_cast<long double>(y.second) - static_cast<long double>(x.second)) /
           static_cast<long double>(y.first - x.first);
  };
  if (b.first <= a.first || c.first <= b.first) return "the runs' values do not increase";
  const long double first = slope(a, b);
  const long double second = slope(b, c);
  if (second > 0 && std::fabs(second - first) <= kLineTolerance * second) return std::nullopt;
  return fmt::format("the model's need grew {} for each 1 of {} from {}={} to {}, {} from {} to {}",
                     format_bytes(static_cast<std::uint64_t>(std::max<long double>(first, 0))),
                     name, name, a.first, b.first,
                     format_bytes(static_cast<std::uint64_t>(std::max<long double>(second, 0))),
                     b.first, c.first);
}

Prediction predict_largest(std::pair<std::uint64_t, std::uint64_t> smaller,
                           std::pair<std::uint64_t, std::uint64_t> larger, std::uint64_t budget,
                           const std::string& name) {
  const auto [v1, n1] = smaller;
  const auto [v2, n2] = larger;
  if (v2 <= v1 || n2 <= n1) {
    return {.note = fmt::format(
                "no prediction: the model's need at {}={} ({}) is no more than at {}={} ({})", name,
                v2, format_bytes(n2), name, v1, format_bytes(n1))};
  }
  const long double per = static_cast<long double>(n2 - n1) / static_cast<long double>(v2 - v1);
  const long double room = static_cast<long double>(budget) - static_cast<long double>(n1);
  const long double reach = static_cast<long double>(v1) + std::floor(room / per);
  const std::uint64_t value = reach <= 0 ? 0 : static_cast<std::uint64_t>(reach);
  return {.value = value,
          .note = fmt::format("predicted {}={}: the model's whole-process need is {} at {}={} and "
                              "{} at {}={}, {} more for each 1 of {}; a budget of {} holds {}={}",
                              name, value, format_bytes(n1), name, v1, format_bytes(n2), name, v2,
                              format_bytes(static_cast<std::uint64_t>(per)), name,
                              format_bytes(budget), name, value)};
}

namespace {

// Fresh runs of the program, one at each value asked; while the model still needs them, each
// records a snapshot of its own, read through the model and then removed.
class FitRuns {
 public:
  FitRuns(const ExecConfig& base, std::span<ExecDevices* const> gpus, const ExecFitSearch& search,
          FitResult& result)
      : base_(base), config_(base), gpus_(gpus), search_(search), result_(result) {
    config_.folder.clear();  // trials keep no files; the table holds what matters
    config_.out_fd = -1;
    config_.err_fd = -1;
  }

  [[nodiscard]] bool guided() const {
    return search_.need_of && base_.snapshot.enabled && !scratch_.path().empty();
  }

  // The runs at `values` at once, the i-th on the i-th GPU, each a fresh process with its own
  // ballast; what they found read in the order of the values, whichever ended first.
  std::vector<Trial> run_round(const std::vector<std::uint64_t>& values) {
    if (values.size() > gpus_.size())
      throw Error(ErrorKind::internal, "a round has more runs than GPUs");
    std::vector<ExecConfig> configs;
    configs.reserve(values.size());
    for (const std::uint64_t value : values) {
      configs.push_back(config_at(value));
      config_.notice = nullptr;  // the first run's notices are enough
    }
    std::vector<std::optional<RunResult>> runs(values.size());
    parallel_each(values.size(), static_cast<unsigned>(values.size()),
                  [&](std::size_t i) { runs[i] = run_exec(configs[i], *gpus_[i]); });
    std::vector<Trial> trials;
    for (std::size_t i = 0; i < values.size(); ++i)
      trials.push_back(absorb(values[i], *runs[i], configs[i]));
    return trials;
  }

  ExecConfig config_at(std::uint64_t value) {
    const std::string& name = search_.range.name;
    ExecConfig c = config_;
    c.command = command_at(base_.command, name, value);
    c.program_environment = base_.program_environment;
    c.program_environment.emplace_back(fit_variable(name), std::to_string(value));
    const bool snapshot = guided() && !predicted_;
    c.snapshot.enabled = snapshot;
    // Frames align the two runs' requests where a request is at one value only (a workspace).
    c.snapshot.python_stacks = snapshot || base_.snapshot.python_stacks;
    c.snapshot.folder = snapshot ? scratch_.path() / fmt::format("run-{}", ++runs_) : "";
    c.snapshot.predicting = snapshot && runs_ <= 2;  // the two the series is made from
    return c;
  }

  Trial absorb(std::uint64_t value, RunResult& run, const ExecConfig& config) {
    if (first_) {
      first_ = false;
      result_.budget_bytes = run.budget_bytes;
      result_.environment = run.environment;
      result_.device = run.device;
    }
    const bool snapshot = config.snapshot.enabled;
    if (snapshot && run.outcome == Outcome::completed) read_need(run, value);
    std::error_code ec;
    if (snapshot) fs::remove_all(config.snapshot.folder, ec);  // read: no longer needed
    Trial trial = program_trial(run);
    trial.value = value;
    return trial;
  }

  Prediction predict() {
    if (points_.size() == 1 && !led_ && gpus_.size() == 1) {  // rounds run the next values
      led_ = true;
      if (Prediction far = far_second_run(); far.next) return far;
    }
    if (!series_tried_ && points_.size() >= 2) {
      series_tried_ = true;
      Prediction p = series_prediction();
      if (p.value) {
        predicted_ = true;
        return p;
      }
      series_note_ = std::move(p.note);
    }
    Prediction p = needs_.predict(result_.budget_bytes, search_.range.name);
    if (!p.value && !series_note_.empty()) p.note = series_note_ + "; " + p.note;
    predicted_ = predicted_ || p.value.has_value();  // later runs record no snapshot
    return p;
  }

 private:
  // The first two completed runs' snapshots (of the process that held the most), kept for the
  // series, and the most any of them held outside the framework's allocator.
  void keep_snapshot(const RunResult& run, std::uint64_t value) {
    if (points_.size() >= 2 || run.models.empty()) return;
    const auto most = std::max_element(run.models.begin(), run.models.end(),
                                       [](const ProgramModel& a, const ProgramModel& b) {
                                         return a.process_bytes < b.process_bytes;
                                       });
    try {
      points_.push_back(
          {.value = value,
           .trace = std::make_shared<const trace::Trace>(trace::load(
               most->snapshot, {.device = 0, .completed = run.outcome == Outcome::completed}))});
      outside_ = std::max(outside_, most->outside_allocator_bytes);
      modelling_ = program_modelling(run);
    } catch (const Error& e) {
      series_note_ = fmt::format("no prediction from the snapshots: {}", e.what());
    }
  }

  // From the two runs' snapshots: the largest value whose trace, made from them, completes in
  // the model at the budget less what the process held outside the allocator. Where requests
  // live inside one call and change with the value (cuDNN's workspaces), a capped program gives
  // up those it is refused and asks for a smaller workspace: the prediction is the answer with
  // them refusable, the most it can fit, and the note gives the answer with them on their lines
  // too. A prediction one too high costs no run: the value under it is the next one tried.
  Prediction series_prediction() {
    const std::string& name = search_.range.name;
    try {
      const trace::TraceSeries series(name, points_);
      if (const auto why = series.misaligned())
        return {.note = "no prediction from the snapshots: " + *why};
      if (result_.budget_bytes <= outside_) return {.note = "no prediction: no room outside"};
      const std::uint64_t budget = result_.budget_bytes - outside_;
      const FitRange range{.name = name, .lo = points_.back().value, .hi = search_.range.hi};
      const bool adapts = series.fit().transient > 0;
      const ProgramModelling* modelling = modelling_;
      if (modelling == nullptr || modelling->fit_series == nullptr)
        return {.note = "no prediction: no model of the snapshots' allocator"};
      const FitResult f = modelling->fit_series(
          {.series = series,
           .range = range,
           .budget_bytes = budget,
           .stop = base_.stop,
           .rule = adapts ? trace::TraceSeries::Rule::refusable : trace::TraceSeries::Rule::lines,
           .outside_bytes = outside_});
      const std::string made = made_words(series, budget);
      if (!f.answer) return {.note = fmt::format("no prediction: {}: none completes", made)};
      std::string bounds;
      if (adapts) {
        const FitResult lines = modelling->fit_series({.series = series,
                                                       .range = range,
                                                       .budget_bytes = budget,
                                                       .stop = base_.stop,
                                                       .outside_bytes = outside_});
        bounds = fmt::format(
            "; {} requests live inside one call and change with {} (cuDNN's workspaces): "
            "{}={} with each given up when refused, as a capped program does, {} with each "
            "needed at its line's size",
            format_count(series.fit().transient), name, name, *f.answer,
            lines.answer ? fmt::format("{}={}", name, *lines.answer) : "none");
      }
      // The model's own word on its answer (where it may be over, say).
      if (!f.prediction_note.empty()) bounds += "; " + f.prediction_note;
      return {.value = *f.answer,
              .note = fmt::format("predicted {}={} from {}, in {} replays{}", name, *f.answer, made,
                                  f.trials.size(), bounds)};
    } catch (const Error& e) {
      return {.note = fmt::format("no prediction from the snapshots: {}", e.what())};
    }
  }

  // Where the model wants its second run (far_second_value), once.
  Prediction far_second_run() {
    if (modelling_ == nullptr || modelling_->far_second_run == 0 ||
        result_.budget_bytes <= outside_)
      return {};
    const std::string& name = search_.range.name;
    const trace::SeriesPoint& first = points_.front();
    try {
      const trace::TraceSeries grown = trace::TraceSeries::in_proportion(name, first);
      const std::optional<std::uint64_t> far = far_second_value(
          *modelling_, {.series = grown,
                        .range = {.name = name, .lo = first.value, .hi = search_.range.hi},
                        .budget_bytes = result_.budget_bytes - outside_,
                        .stop = base_.stop,
                        .outside_bytes = outside_});
      if (!far) return {};
      return {.note = fmt::format("the second run at {}={}, where the run at {}={} would fit the "
                                  "budget with each of its requests grown in proportion",
                                  name, *far, name, first.value),
              .next = *far};
    } catch (const Error&) {
      return {};  // the next value, as without: the series says its own error later
    }
  }

  [[nodiscard]] std::string made_words(const trace::TraceSeries& series,
                                       std::uint64_t budget) const {
    const std::string& name = search_.range.name;
    const std::string side =
        series.fit().side == 0
            ? ""
            : fmt::format("; {} of {}'s own beside them made at {}={}'s size, each refusable",
                          format_count(series.fit().side), modelling_->owner, name,
                          series.points().back().value);
    return fmt::format(
        "the snapshots at {}={},{} ({:.1f}% of their requests aligned, {} scaling with {}{}) made "
        "into a trace at each value and replayed on the model at {} ({} less {} the process "
        "held outside {}'s allocator)",
        name, points_[0].value, points_[1].value, 100.0 * series.fit().aligned_share,
        format_count(series.fit().scaling), name, side, format_bytes(budget),
        format_bytes(result_.budget_bytes), format_bytes(outside_), allocator_owner(modelling_));
  }

  void read_need(RunResult& run, std::uint64_t value) {
    if (const std::optional<std::uint64_t> need = search_.need_of(run)) {
      needs_.add(value, *need);
      keep_snapshot(run, value);
      return;
    }
    needs_.missing(fmt::format("the run at {}={} gave the model nothing to read{}",
                               search_.range.name, value,
                               run.program ? unread_words(*run.program) : ""));
  }

  const ExecConfig& base_;
  ExecConfig config_;
  std::span<ExecDevices* const> gpus_;  // a trial's devices each, one trial at a time on each
  const ExecFitSearch& search_;
  FitResult& result_;
  const SnapshotFolder scratch_;  // the trials' snapshots, a folder each
  Needs needs_;
  std::vector<trace::SeriesPoint> points_;
  std::uint64_t outside_ = 0;
  const ProgramModelling* modelling_ = nullptr;  // the model of the points' snapshots
  bool series_tried_ = false;
  bool led_ = false;  // far_second_run asked
  std::string series_note_;
  bool predicted_ = false;
  bool first_ = true;
  unsigned runs_ = 0;
};

}  // namespace

std::optional<std::uint64_t> far_second_value(const ProgramModelling& modelling,
                                              const SeriesQuestion& first) {
  if (modelling.fit_series == nullptr) return std::nullopt;
  const FitResult f = modelling.fit_series(first);
  if (!f.answer || *f.answer <= first.range.lo + 1 || *f.answer < modelling.far_second_run)
    return std::nullopt;
  return f.answer;
}

FitResult fit_exec(const ExecConfig& base, ExecDevices& devices, const ExecFitSearch& search) {
  ExecDevices* const one[] = {&devices};
  return fit_exec(base, one, search);
}

FitResult fit_exec(const ExecConfig& base, std::span<ExecDevices* const> gpus,
                   const ExecFitSearch& search) {
  FitResult result;
  result.range = search.range;
  result.allocator = "exec";
  FitRuns runs(base, gpus, search, result);
  ValueSearch values{.lo = search.range.lo,
                     .hi = search.range.hi,
                     .confirm = search.confirm,
                     .on_trial = search.on_trial,
                     .on_round = search.on_round};
  if (runs.guided()) values.predict = [&](const std::vector<Trial>&) { return runs.predict(); };
  static_cast<BoundaryResult&>(result) = search_values_in_rounds(
      values, static_cast<unsigned>(gpus.size()),
      [&](const std::vector<std::uint64_t>& at) { return runs.run_round(at); });
  return result;
}

}  // namespace oomlab
