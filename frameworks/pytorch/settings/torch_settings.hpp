// The settings of PyTorch's caching allocator that people reach for after an OOM, as options of
// the `torch` allocator over the sim, and each replayed at one budget. whatif's table and the
// advice of a torch replay's OOM are both drawn from these, so that both say the same of the
// same budget, and the advice names only a setting that the model shows completing there.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/oom_analysis.hpp"
#include "oomlab/params.hpp"
#include "run/runner.hpp"

namespace oomlab::torch {

// What the budget is: a card of that size (the device refuses), or a cap set by
// torch.cuda.set_per_process_memory_fraction on the modelled card (PyTorch refuses first).
enum class BudgetQuestion : std::uint8_t { card, fraction };

struct TorchSetting {
  std::string name;       // "native", "expandable_segments", "max_split_size=128MiB", ...
  Params options;         // every option set: nothing of a snapshot's own settings leaks in
  bool fraction = false;  // asked under a fraction cap whatever the question (a setting that
                          // acts only under one: garbage_collection_threshold)
};

// native, expandable_segments, max_split_size=128MiB and 512MiB, garbage_collection_threshold=0.8
// and backend=async, on a simulated card of `card_bytes`; under `fraction` every one is asked
// under a fraction cap.
[[nodiscard]] std::vector<TorchSetting> torch_settings(std::uint64_t card_bytes,
                                                       BudgetQuestion question);
// PyTorch's defaults, every option set, on that card.
[[nodiscard]] Params torch_native_options(std::uint64_t card_bytes);

// The replay at one budget under one setting.
struct WhatIfAtBudget {
  Outcome outcome = Outcome::completed;
  std::optional<std::uint64_t> first_failure_index;  // the trace entry of the run's OOM
  std::optional<Cause> cause;
  std::uint64_t request_bytes = 0;  // the failing request
};

// `base` (a replay on torch) at `budget_bytes` with each setting's options, in parallel (threads
// 0: one per core). Throws Interrupted on a stop, Error(device) for a replay that ended in error.
[[nodiscard]] std::vector<WhatIfAtBudget> settings_at_budget(const RunConfig& base,
                                                             std::span<const TorchSetting> settings,
                                                             std::uint64_t budget_bytes,
                                                             unsigned threads);

// A replay on torch that ran out of memory: the settings of its question replayed at its budget
// (OomRecord::remedies) and the OOM's advice drawn from them. Nothing for any other run.
void check_remedies(const RunConfig& config, RunResult& result);

// The advice that checks give: the settings that complete, with the exact
// PYTORCH_CUDA_ALLOC_CONF to set, or that none does.
[[nodiscard]] std::string remedy_advice(std::span<const SettingAnswer> checks,
                                        std::uint64_t budget_bytes);

}  // namespace oomlab::torch
