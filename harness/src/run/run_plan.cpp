#include "run/run_plan.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

ResolvedAllocator resolve_automatic(BackendKind kind, const Params& options,
                                    const Environment& environment) {
  if (kind != BackendKind::automatic) return {.kind = kind, .options = options};
  // async where a device is usable, otherwise sim, saying why.
  const bool device = !environment.devices.empty();
  ResolvedAllocator choice{.kind = device ? BackendKind::async : BackendKind::sim};
  choice.options = Params(backend_info(choice.kind).options);
  if (!device) {
    choice.notice =
        fmt::format("{}: using the simulated allocator 'sim'", environment.cuda_problem);
  }
  return choice;
}

ResolvedAllocator model_of_recorded_allocator(std::string_view name) {
  for (const BackendInfo& b : backend_catalog()) {
    if (b.auto_notice.empty() || (!name.empty() && b.name != name)) continue;
    return {.kind = b.kind, .options = Params(b.options), .notice = b.auto_notice};
  }
  throw Error(ErrorKind::internal,
              fmt::format("no backend models a recorded allocator{}",
                          name.empty() ? "" : fmt::format(" named '{}'", name)));
}

RunPlan plan_allocator(const RunConfig& config, const Environment& environment,
                       RunResult& /*result*/) {
  ResolvedAllocator choice =
      resolve_automatic(config.allocator, config.allocator_options, environment);
  return {.kind = choice.kind,
          .allocator_options = std::move(choice.options),
          .automatic = config.allocator == BackendKind::automatic,
          .pending_notice = choice.notice.empty() ? config.allocator_notice : choice.notice};
}

void settle_plan(const RunConfig& config, const Scenario& scenario, RunPlan& plan,
                 RunResult& result) {
  const auto recorded = scenario.recorded_allocator_settings();
  if (plan.automatic && recorded) {
    ResolvedAllocator model = model_of_recorded_allocator(recorded->backend);
    plan.kind = model.kind;
    plan.allocator_options = std::move(model.options);
    notify(config, result, std::move(model.notice));
  } else if (!plan.pending_notice.empty()) {
    notify(config, result, std::move(plan.pending_notice));
  }
  plan.recorded = recorded;
  if (const BackendInfo& info = backend_info(plan.kind); info.settle != nullptr) {
    for (std::string& note : info.settle(plan.allocator_options, recorded ? &*recorded : nullptr))
      notify(config, result, std::move(note));
  }
  plan.simulated = !uses_device(plan.kind, plan.allocator_options);
}

void notify(const RunConfig& config, RunResult& result, std::string text) {
  notify(config.notice, result, std::move(text));
}

void notify(const NoticeSink& notice, RunResult& result, std::string text) {
  if (notice) notice(text);
  result.notices.push_back(std::move(text));
}

void record_failure(RunResult& result, std::string_view what, std::string_view why) {
  result.outcome = Outcome::error;
  if (!result.error_message.empty()) result.error_message += "; ";
  result.error_message += fmt::format("{}: {}", what, why);
}

ResolvedBudget resolve_budget_request(const BudgetRequest& request, std::uint64_t total,
                                      std::uint64_t available, std::string_view available_what,
                                      std::uint64_t kept_back) {
  ResolvedBudget budget{.bytes = request.bytes.value};
  if (request.kind == BudgetRequest::Kind::percent) {
    budget.bytes =
        static_cast<std::uint64_t>(static_cast<double>(total) * request.percent.value / 100.0);
  } else if (request.kind == BudgetRequest::Kind::all) {
    budget.bytes = available;
  } else if (request.kind == BudgetRequest::Kind::card && request.card != nullptr) {
    budget.bytes = card_budget_bytes(*request.card, kept_back);
    budget.card = fmt::format(
        "budget {}: {} ({} B), its {} less the {} the driver keeps back here when idle; this "
        "approximates the card (its kernels, CUDA context and driver differ)",
        request.card->name, format_bytes(budget.bytes), format_count(budget.bytes),
        format_bytes(request.card->total_bytes), format_bytes(kept_back));
  }
  if (budget.bytes > available) {
    budget.clamped =
        fmt::format("budget {} is more than the {} {}: clamped to {}", format_bytes(budget.bytes),
                    format_bytes(available), available_what, format_bytes(available));
    budget.bytes = available;
  }
  if (budget.bytes < kDevicePageBytes) {
    throw_usage(
        fmt::format("the budget resolves to {} ({} bytes), less than one {} page of device "
                    "memory: nothing could be allocated",
                    format_bytes(budget.bytes), budget.bytes, format_bytes(kDevicePageBytes)));
  }
  return budget;
}

std::uint64_t resolve_budget(const BudgetRequest& request, const NoticeSink& notice,
                             RunResult& result, std::uint64_t total, std::uint64_t available,
                             std::string_view available_what, std::uint64_t kept_back) {
  ResolvedBudget budget =
      resolve_budget_request(request, total, available, available_what, kept_back);
  if (!budget.card.empty()) notify(notice, result, std::move(budget.card));
  if (!budget.clamped.empty()) notify(notice, result, std::move(budget.clamped));
  return budget.bytes;
}

}  // namespace oomlab
