#include "exec/exec_frontier.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "exec/program_model.hpp"
#include "exec/snapshot_folder.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "run/frontier_steps.hpp"

namespace oomlab {

std::string_view to_string(TrialRole role) {
  switch (role) {
    case TrialRole::top:
      return "top";
    case TrialRole::prediction:
      return "prediction";
    case TrialRole::probe:
      return "probe";
    case TrialRole::step:
      return "step";
    case TrialRole::bisection:
      return "bisection";
    case TrialRole::confirm:
      break;
  }
  return "confirm";
}

namespace {

namespace fs = std::filesystem;

class Trials {
 public:
  Trials(const ExecConfig& base, ExecDevices& devices,
         const std::function<void(const ExecTrial&)>& on_trial, const fs::path& snapshots)
      : config_(base), devices_(devices), on_trial_(on_trial) {
    config_.folder.clear();  // trials keep no files; the table holds what matters
    config_.out_fd = -1;
    config_.err_fd = -1;
    config_.snapshot.folder = snapshots;  // the top run's, for the model
    config_.snapshot.enabled = base.snapshot.enabled && !snapshots.empty();
  }

  // Whether the program exits 0 at `budget` (none: the base's own request).
  bool completes(std::optional<std::uint64_t> budget, ExecFrontier& result, TrialRole role,
                 bool verifies = false) {
    if (budget) config_.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    RunResult run = run_exec(config_, devices_);
    config_.notice = nullptr;          // the first run's notices are enough
    config_.snapshot.enabled = false;  // only the top run's snapshot is read
    if (run.outcome == Outcome::interrupted) throw Interrupted();
    ExecTrial trial{.budget_bytes = run.budget_bytes,
                    .outcome = run.outcome,
                    .peak_bytes = run.peak_live_bytes,
                    .used_bytes = run.peak_reserved_bytes,
                    .exit_code = run.program->exit_code,
                    .seconds = run.duration_ms / 1e3,
                    .role = role,
                    .verifies_prediction = verifies};
    if (run.oom) {
      trial.cause = run.oom->diagnosis.cause;
      if (run.oom->program) trial.oom_line = run.oom->program->line;
    } else if (run.outcome != Outcome::completed) {
      trial.oom_line = run.error_message;
    }
    result.trials.push_back(trial);
    if (on_trial_) on_trial_(trial);
    result.timed_out = result.timed_out || run.outcome == Outcome::timeout;
    if (!result.top) result.top = std::move(run);
    return trial.outcome == Outcome::completed;
  }

 private:
  ExecConfig config_;
  ExecDevices& devices_;
  const std::function<void(const ExecTrial&)>& on_trial_;
};

// How the prediction was made, from the model of the top run's snapshot when there is one.
std::string prediction_note(const RunResult& top, const std::optional<std::uint64_t>& predicted) {
  if (!predicted) {
    if (top.program && top.program->snapshots.empty()) {
      return fmt::format(
          "no prediction: the top run left no snapshot{}",
          top.program->snapshot_note.empty() ? "" : " (" + top.program->snapshot_note + ")");
    }
    return "no prediction: the model gave no frontier for the top run's snapshot";
  }
  if (top.models.empty()) return fmt::format("predicted {}", format_bytes(*predicted));
  const ProgramModel& m = top.models.front();
  const ModelRow* row = as_ran_row(m);
  return fmt::format(
      "predicted {} ({} B): the model's frontier for {} ({}) plus {} the process held outside "
      "PyTorch's allocator ({})",
      format_bytes(*predicted), format_count(*predicted), row->setting,
      format_bytes(row->model_frontier_bytes.value_or(0)), format_bytes(m.outside_allocator_bytes),
      m.outside_measured);
}

void confirm_frontier(Trials& trials, unsigned confirm, ExecFrontier& result) {
  result.confirm_runs = confirm;
  for (unsigned i = 0; i < confirm && !result.timed_out; ++i) {
    result.frontier_passed +=
        trials.completes(*result.frontier_bytes, result, TrialRole::confirm) ? 1 : 0;
    if (result.failing_bytes >= kDevicePageBytes) {
      result.below_passed +=
          trials.completes(result.failing_bytes, result, TrialRole::confirm) ? 1 : 0;
    }
  }
}

}  // namespace

std::optional<std::uint64_t> predict_from_snapshots(RunResult& top, const std::atomic<bool>* stop) {
  model_program(top, {.stop = stop});
  return predicted_frontier(top.models);
}

ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                const ExecSearch& search) {
  ExecFrontier result;
  const SnapshotFolder snapshots;
  Trials trials(base, devices, search.on_trial, snapshots.path());
  const std::uint64_t resolution = search.resolution_bytes;
  const bool top_completes = trials.completes(std::nullopt, result, TrialRole::top);
  result.upper_bytes = result.trials.front().budget_bytes;
  if (!top_completes) {
    result.failing_bytes = result.upper_bytes;
    return result;
  }
  result.predicted_bytes =
      search.predict ? search.predict(*result.top) : predict_from_snapshots(*result.top, base.stop);
  result.prediction_note = prediction_note(*result.top, result.predicted_bytes);
  if (search.on_prediction) search.on_prediction(result.prediction_note);
  // Units of the resolution: under one device page is never tried. Without a prediction the
  // first probe is what the top run took, plus the page the driver keeps back of what it calls
  // free: most programs need what they took.
  const UnitBracket known{.bad = ceil_div(kDevicePageBytes, resolution) - 1,
                          .good = ceil_div(result.upper_bytes, resolution)};
  const bool predicted = result.predicted_bytes.has_value();
  const std::uint64_t probe = ceil_div(
      predicted ? *result.predicted_bytes : result.trials.front().used_bytes + kDevicePageBytes,
      resolution);
  bool first_step = true;
  const auto bracket = search_from(probe, known, [&](std::uint64_t units, StepKind kind) {
    const bool verifies =
        predicted && (kind == StepKind::probe || (kind == StepKind::step && first_step));
    if (kind == StepKind::step) first_step = false;
    const TrialRole role = kind == StepKind::probe
                               ? (predicted ? TrialRole::prediction : TrialRole::probe)
                               : (kind == StepKind::step ? TrialRole::step : TrialRole::bisection);
    const bool fits =
        trials.completes(std::min(units * resolution, result.upper_bytes), result, role, verifies);
    return result.timed_out ? std::nullopt : std::optional<bool>(fits);
  });
  if (!bracket) return result;  // a trial timed out: that budget's answer is unknown
  result.frontier_bytes = std::min(bracket->good * resolution, result.upper_bytes);
  result.failing_bytes = bracket->bad * resolution;
  confirm_frontier(trials, search.confirm, result);
  return result;
}

}  // namespace oomlab
