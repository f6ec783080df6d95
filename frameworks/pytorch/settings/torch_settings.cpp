#include "pytorch/settings/torch_settings.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/model/torch_options.hpp"
#include "run/parallel_each.hpp"

namespace oomlab::torch {

Params torch_native_options(std::uint64_t card_bytes) {
  const ParamSpec& spec = backend_info(torch::torch_kind()).options;
  Params p(spec);
  for (const ParamDef& d : spec)
    p.set(d.name, d.default_value);
  p.set("upstream", std::string("sim"));
  p.set("total", Bytes{card_bytes});
  return p;
}

std::vector<TorchSetting> torch_settings(std::uint64_t card_bytes, BudgetQuestion question) {
  const Params native = torch_native_options(card_bytes);
  std::vector<TorchSetting> out;
  const auto add = [&](std::string name,
                       const std::vector<std::pair<std::string, ParamValue>>& changes,
                       bool fraction) {
    TorchSetting s{std::move(name), native, fraction || question == BudgetQuestion::fraction};
    for (const auto& [option, value] : changes)
      s.options.set(option, value);
    if (s.fraction) s.options.set("budget_by", std::string("fraction"));
    out.push_back(std::move(s));
  };
  add("native", {}, false);
  add("expandable_segments", {{"expandable_segments", true}}, false);
  add("max_split_size=128MiB", {{"max_split_size", Bytes{128_MiB}}}, false);
  add("max_split_size=512MiB", {{"max_split_size", Bytes{512_MiB}}}, false);
  // PyTorch collects cached blocks only under set_per_process_memory_fraction: on a card alone
  // this setting changes nothing, so it is asked under a fraction cap, and named so.
  add(question == BudgetQuestion::fraction ? "garbage_collection_threshold=0.8"
                                           : "garbage_collection_threshold=0.8 (fraction cap)",
      {{"garbage_collection_threshold", 0.8}}, true);
  add("backend=async", {{"backend", std::string("async")}}, false);
  return out;
}

namespace {

WhatIfAtBudget replay_at(RunConfig config, const Params& options, std::uint64_t budget_bytes) {
  config.allocator = torch::torch_kind();
  config.allocator_options = options;
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{budget_bytes}};
  const RunResult r = run_scenario(config);
  if (r.outcome == Outcome::interrupted) throw Interrupted();
  if (r.outcome == Outcome::error) {
    throw Error(ErrorKind::device, fmt::format("the replay at a budget of {} ended in error: {}",
                                               format_bytes(budget_bytes), r.error_message));
  }
  WhatIfAtBudget out{.outcome = r.outcome};
  if (r.oom) {
    out.first_failure_index = r.oom->trace_entry;  // the entry that ended the replay
    out.cause = r.oom->diagnosis.cause;
    out.request_bytes = r.oom->request_bytes;
  }
  return out;
}

}  // namespace

std::vector<WhatIfAtBudget> settings_at_budget(const RunConfig& base,
                                               std::span<const TorchSetting> settings,
                                               std::uint64_t budget_bytes, unsigned threads) {
  RunConfig config = base;
  config.probe = false;  // the cause of a model's OOM is its own arithmetic, not a probe's
  config.events_csv.clear();
  config.progress = nullptr;
  config.notice = nullptr;
  config.on_hung = nullptr;
  std::vector<WhatIfAtBudget> out(settings.size());
  parallel_each(settings.size(), threads, [&](std::size_t i) {
    out[i] = replay_at(config, settings[i].options, budget_bytes);
  });
  return out;
}

namespace {

// Whether the run replayed a trace on the model of PyTorch's allocator.
bool replayed_on_torch(const RunConfig& config, const RunResult& result) {
  return result.backend == torch::torch_kind() && result.oom && result.oom->trace_entry &&
         (config.trace || result.input_trace);
}

}  // namespace

void check_remedies(const RunConfig& config, RunResult& result) {
  if (!replayed_on_torch(config, result)) return;
  const BudgetQuestion question = result.allocator_options.choice("budget_by") == "fraction"
                                      ? BudgetQuestion::fraction
                                      : BudgetQuestion::card;
  const std::uint64_t card = std::max(result.allocator_options.bytes("total"), result.budget_bytes);
  std::vector<TorchSetting> settings = torch_settings(card, question);
  // A fraction cap is not a card: on a card's budget only the card's own settings are checked.
  std::erase_if(settings, [&](const TorchSetting& s) {
    return question == BudgetQuestion::card && s.fraction;
  });
  RunConfig again = config;
  if (!again.trace) again.trace = result.input_trace;  // the run's trace, read once
  const std::vector<WhatIfAtBudget> at =
      settings_at_budget(again, settings, result.budget_bytes, 0);
  OomRecord& oom = *result.oom;
  oom.remedies.clear();
  for (std::size_t i = 0; i < settings.size(); ++i) {
    SettingAnswer& answer = oom.remedies.emplace_back();
    answer.setting = settings[i].name;
    answer.settings = torch::alloc_conf(settings[i].options);
    answer.completes_at_budget = at[i].outcome == Outcome::completed;
    answer.first_failure_index = at[i].first_failure_index;
  }
  oom.diagnosis.advice = remedy_advice(oom.remedies, result.budget_bytes);
}

std::string remedy_advice(std::span<const SettingAnswer> checks, std::uint64_t budget_bytes) {
  std::vector<const SettingAnswer*> completing;
  for (const SettingAnswer& c : checks) {
    if (c.completes_at_budget) completing.push_back(&c);
  }
  if (completing.empty()) {
    return fmt::format(
        "no setting of PyTorch's allocator completes this trace at {} (oomlab replayed each of "
        "{}): "
        "lower the batch or sequence length, use mixed precision or activation checkpointing, "
        "or give the job more memory; `oomlab whatif --trace FILE` gives each setting's "
        "smallest card",
        format_bytes(budget_bytes), checks.size());
  }
  const SettingAnswer& first = *completing.front();
  std::string out = first.settings.empty()
                        ? fmt::format(
                              "the model says PyTorch's defaults complete at this budget "
                              "(unset PYTORCH_CUDA_ALLOC_CONF)")
                        : fmt::format(
                              "the model says {} completes at this budget: set "
                              "PYTORCH_CUDA_ALLOC_CONF={}",
                              first.settings, first.settings);
  std::vector<std::string> others;
  for (std::size_t i = 1; i < completing.size(); ++i) {
    others.push_back(completing[i]->settings.empty() ? "PyTorch's defaults"
                                                     : completing[i]->settings);
  }
  if (!others.empty()) out += fmt::format(" (so do {})", fmt::join(others, ", "));
  return out;
}

}  // namespace oomlab::torch
