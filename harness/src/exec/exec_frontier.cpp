#include "exec/exec_frontier.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "exec/snapshot_folder.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "run/parallel_each.hpp"
#include "run/speculative_rounds.hpp"
#include "trace/trace.hpp"

namespace oomlab {

namespace {

// How the prediction was made, from the model of the top run's snapshot when there is one.
std::string prediction_note(const RunResult& top, const std::optional<std::uint64_t>& predicted) {
  if (!predicted) {
    if (top.program && top.program->snapshots.empty()) {
      return fmt::format(
          "no prediction: the top run left no snapshot{}",
          top.program->snapshot_note.empty() ? "" : " (" + top.program->snapshot_note + ")");
    }
    return "no prediction: the model gave no frontier for the top run's snapshot" +
           (top.program ? unread_words(*top.program) : std::string());
  }
  if (top.models.empty()) return fmt::format("predicted {}", format_bytes(*predicted));
  const ProgramModel& m = top.models.front();
  const ModelRow* row = as_ran_row(m);
  return fmt::format(
      "predicted {} ({} B): the model's frontier for {} ({}) plus {} the process held outside "
      "{}'s allocator ({})",
      format_bytes(*predicted), format_count(*predicted), row->setting,
      format_bytes(row->model_frontier_bytes.value_or(0)), format_bytes(m.outside_allocator_bytes),
      allocator_owner(program_modelling(top)), m.outside_measured);
}

}  // namespace

Trial program_trial(const RunResult& run) {
  Trial trial{.value = run.budget_bytes,
              .budget_bytes = run.budget_bytes,
              .outcome = run.outcome,
              .peak_bytes = run.program ? run.program->peak_bytes : 0,
              .used_bytes = run.program ? run.program->peak_used_bytes : 0,
              .exit_code = run.program ? run.program->exit_code : -1,
              .seconds = run.duration_ms / 1e3};
  // On several devices the budget is each one's: the probe starts from the fullest device.
  if (run.program && run.program->device_runs.size() > 1) {
    trial.peak_bytes = 0;
    trial.used_bytes = 0;
    for (const DeviceRun& d : run.program->device_runs) {
      trial.peak_bytes = std::max(trial.peak_bytes, d.peak_bytes);
      trial.used_bytes = std::max(trial.used_bytes, d.peak_used_bytes);
    }
  }
  if (run.program && run.program->failing_rank) {
    trial.message = run.program->failing_rank->verdict;
  }
  if (run.oom) {
    trial.cause = run.oom->diagnosis.cause;
    if (run.oom->request_bytes > 0) trial.request_bytes = run.oom->request_bytes;
    if (run.oom->program) {
      if (trial.message.empty()) trial.message = run.oom->program->line;
      trial.free_bytes = run.oom->program->device_free_bytes;
      if (run.oom->program->library) trial.library = run.oom->program->framework;
    }
  } else if (run.outcome != Outcome::completed) {
    trial.message = run.error_message;
  }
  return trial;
}

std::string allocator_owner(const ProgramModelling* modelling) {
  return modelling != nullptr && !modelling->owner.empty() ? modelling->owner : "the framework";
}

const ProgramModelling* program_modelling(const RunResult& run) {
  // A run already modelled (its snapshots read, perhaps gone with a temporary folder): its model's.
  if (!run.models.empty() && !run.models.front().owner.empty()) {
    for (const Framework& f : Registry::global().frameworks()) {
      if (f.program_modelling && f.program_modelling->owner == run.models.front().owner)
        return &*f.program_modelling;
    }
  }
  const ProgramModelling* first = nullptr;
  const std::string format = run.program && !run.program->snapshots.empty()
                                 ? trace::file_format(run.program->snapshots.front())
                                 : std::string();
  for (const Framework& f : Registry::global().frameworks()) {
    if (!f.program_modelling || f.program_modelling->model == nullptr) continue;
    if (!format.empty() && f.program_modelling->format == format) return &*f.program_modelling;
    if (first == nullptr && f.models_snapshots) first = &*f.program_modelling;
  }
  return first;
}

const ModelRow* as_ran_row(const ProgramModel& model) {
  for (const ModelRow& r : model.whatif) {
    if (r.as_ran) return &r;
  }
  return nullptr;
}

std::optional<std::uint64_t> predicted_frontier(const std::vector<ProgramModel>& models) {
  std::optional<std::uint64_t> most;
  for (const ProgramModel& m : models) {
    const ModelRow* row = as_ran_row(m);
    if (row == nullptr || !row->frontier_bytes) return std::nullopt;
    most = std::max(most.value_or(0), *row->frontier_bytes);
  }
  return most;
}

std::optional<std::uint64_t> predict_from_snapshots(RunResult& run, const std::atomic<bool>* stop) {
  const ProgramModelling* modelling = program_modelling(run);
  if (modelling == nullptr) return std::nullopt;
  modelling->model(run, stop);
  return predicted_frontier(run.models);
}

namespace {

// The trials' config: no files of their own; the top run's snapshot in `snapshots`.
ExecConfig trial_config(const ExecConfig& base, const SnapshotFolder& snapshots) {
  ExecConfig config = base;
  config.folder.clear();  // trials keep no files; the table holds what matters
  config.out_fd = -1;
  config.err_fd = -1;
  config.snapshot.folder = snapshots.path();
  config.snapshot.enabled = base.snapshot.enabled && !snapshots.path().empty();
  config.snapshot.predicting = true;  // the top run's snapshot is what the model predicts from
  return config;
}

// The prediction from the top run, made once (a search in rounds is replayed many times).
Prediction predict_once(ExecFrontier& result, const ExecConfig& base, const ExecSearch& search) {
  RunResult& top = *result.top;
  const std::optional<std::uint64_t> predicted =
      search.predict ? search.predict(top) : predict_from_snapshots(top, base.stop);
  Prediction p{.value = predicted, .note = prediction_note(top, predicted)};
  if (search.on_prediction) search.on_prediction(p.note);
  return p;
}

}  // namespace

ExecFrontier find_exec_frontier(const ExecConfig& base, std::span<ExecDevices* const> gpus,
                                const ExecSearch& search) {
  if (gpus.size() == 1) return find_exec_frontier(base, *gpus.front(), search);
  ExecFrontier result;
  const SnapshotFolder snapshots;
  ExecConfig config = trial_config(base, snapshots);
  std::optional<Prediction> prediction;
  BudgetSearch budgets{.resolution_bytes = search.resolution_bytes,
                       .confirm = search.confirm,
                       .probe_margin_bytes = kDevicePageBytes};
  budgets.predict = [&](const Trial&) {
    if (!prediction) prediction = predict_once(result, base, search);
    return *prediction;
  };
  const SpeculativeRound run_round = [&](const std::vector<std::optional<std::uint64_t>>& at) {
    std::vector<ExecConfig> configs;
    for (const std::optional<std::uint64_t>& budget : at) {
      configs.push_back(config);
      if (budget)
        configs.back().budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    }
    config.notice = nullptr;          // the first run's notices are enough
    config.snapshot.enabled = false;  // only the top run's snapshot is read
    std::vector<std::optional<RunResult>> runs(at.size());
    parallel_each(at.size(), static_cast<unsigned>(at.size()),
                  [&](std::size_t i) { runs[i] = run_exec(configs[i], *gpus[i]); });
    std::vector<Trial> trials;
    for (std::optional<RunResult>& run : runs) {
      trials.push_back(program_trial(*run));
      if (!result.top) result.top = std::move(*run);
    }
    return trials;
  };
  SpeculativeResult found =
      search_speculatively([&](const TrialAt& run_at) { return search_budgets(budgets, run_at); },
                           static_cast<unsigned>(gpus.size()), run_round, search.on_trial);
  static_cast<BoundaryResult&>(result) = std::move(found.result);
  result.spare = std::move(found.spare);
  result.rounds = found.rounds;
  return result;
}

ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                const ExecSearch& search) {
  ExecFrontier result;
  const SnapshotFolder snapshots;  // the top run's, for the model
  ExecConfig config = trial_config(base, snapshots);
  const TrialAt run_at = [&](std::optional<std::uint64_t> budget) {
    if (budget) config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    RunResult run = run_exec(config, devices);
    config.notice = nullptr;          // the first run's notices are enough
    config.snapshot.enabled = false;  // only the top run's snapshot is read
    Trial trial = program_trial(run);
    if (!result.top) result.top = std::move(run);
    return trial;
  };
  BudgetSearch budgets{.resolution_bytes = search.resolution_bytes,
                       .confirm = search.confirm,
                       .probe_margin_bytes = kDevicePageBytes,
                       .on_trial = search.on_trial};
  budgets.predict = [&](const Trial&) { return predict_once(result, base, search); };
  static_cast<BoundaryResult&>(result) = search_budgets(budgets, run_at);
  return result;
}

}  // namespace oomlab
