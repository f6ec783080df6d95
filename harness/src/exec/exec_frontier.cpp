#include "exec/exec_frontier.hpp"

#include "oomlab/units.hpp"

namespace oomlab {

Trial program_trial(const RunResult& run) {
  Trial trial{.value = run.budget_bytes,
              .budget_bytes = run.budget_bytes,
              .outcome = run.outcome,
              .peak_bytes = run.peak_live_bytes,
              .used_bytes = run.peak_reserved_bytes,
              .exit_code = run.program ? run.program->exit_code : -1,
              .seconds = run.duration_ms / 1e3};
  if (run.oom) {
    trial.cause = run.oom->diagnosis.cause;
    if (run.oom->request_bytes > 0) trial.request_bytes = run.oom->request_bytes;
    if (run.oom->program) trial.message = run.oom->program->line;
  } else if (run.outcome != Outcome::completed) {
    trial.message = run.error_message;
  }
  return trial;
}

ExecFrontier find_exec_frontier(const ExecConfig& base, ExecDevices& devices,
                                const ExecSearch& search) {
  ExecFrontier result;
  ExecConfig config = base;
  config.folder.clear();  // trials keep no files; the table holds what matters
  config.out_fd = -1;
  config.err_fd = -1;
  const TrialAt run_at = [&](std::optional<std::uint64_t> budget) {
    if (budget) config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{*budget}};
    RunResult run = run_exec(config, devices);
    config.notice = nullptr;  // the first run's notices are enough
    Trial trial = program_trial(run);
    if (!result.top) result.top = std::move(run);
    return trial;
  };
  BudgetSearch budgets{.resolution_bytes = search.resolution_bytes,
                       .confirm = search.confirm,
                       .probe_margin_bytes = kDevicePageBytes,
                       .on_trial = search.on_trial};
  if (search.predict) budgets.predict = [&](const Trial&) { return search.predict(*result.top); };
  static_cast<BoundaryResult&>(result) = search_budgets(budgets, run_at);
  return result;
}

}  // namespace oomlab
