#include "pytorch/settings/whatif.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

#include "allocators/backends.hpp"
#include "allocators/sim_allocator.hpp"
#include "device/device.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "pytorch/model/async_model.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/model/torch_options.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "run/frontier.hpp"
#include "run/parallel_each.hpp"
#include "run/run_plan.hpp"
#include "trace/trace.hpp"

namespace oomlab {

std::string_view to_string(WhatIfBudgetSource source) {
  switch (source) {
    case WhatIfBudgetSource::given:
      return "--budget";
    case WhatIfBudgetSource::snapshot:
      return "snapshot";
    case WhatIfBudgetSource::none:
      break;
  }
  return "none";
}

namespace {

constexpr std::string_view kAsRecorded = "as recorded";

torch::ResolvedTorch resolved(const Params& options, const trace::Trace& trace) {
  return torch::resolve_torch(options, trace::allocator_settings(trace));
}

// The torch model over the simulated card, nothing else chosen: the snapshot's settings fill in.
Params torch_on_card(std::uint64_t card_bytes) {
  Params p(backend_info(torch::torch_kind()).options);
  p.set("upstream", std::string("sim"));
  p.set("total", Bytes{card_bytes});
  return p;
}

// What the snapshot's settings change from PyTorch's defaults ("expandable_segments=on"); empty
// when nothing does.
std::vector<std::string> recorded_differences(const trace::Trace& trace, std::uint64_t card) {
  const torch::ResolvedTorch recorded = resolved(torch_on_card(card), trace);
  const torch::ResolvedTorch native = resolved(torch_native_options(card), trace);
  std::vector<std::string> out;
  for (const auto& [name, value] : recorded.effective.values()) {
    if (native.effective.values().at(name) != value)
      out.push_back(fmt::format("{}={}", name, format_param_value(value)));
  }
  // A table that differs per size is in the config only, not among the options.
  const bool table_listed = std::any_of(out.begin(), out.end(), [](const std::string& d) {
    return d.starts_with("roundup_power2_divisions");
  });
  if (recorded.config.roundup_power2_divisions != native.config.roundup_power2_divisions &&
      !table_listed) {
    out.emplace_back("roundup_power2_divisions (per size)");
  }
  return out;
}

std::vector<TorchSetting> settings(const WhatIfRequest& request, const trace::Trace& trace,
                                   std::uint64_t card, std::vector<std::string>& notes) {
  const bool fraction = request.question == BudgetQuestion::fraction;
  std::vector<TorchSetting> out;
  const auto asked = [&](Params options) {
    if (fraction) options.set("budget_by", std::string("fraction"));
    return options;
  };
  const std::vector<std::string> differences = recorded_differences(trace, card);
  if (!differences.empty()) {
    out.push_back({std::string(kAsRecorded), asked(torch_on_card(card)), fraction});
    notes.push_back(
        fmt::format("as recorded: the snapshot's allocator_settings, which differ from "
                    "PyTorch's defaults in {}",
                    fmt::join(differences, ", ")));
  }
  for (TorchSetting& s : torch_settings(card, request.question))
    out.push_back(std::move(s));
  if (request.own_options) {
    Params own = *request.own_options;
    own.set("upstream", std::string("sim"));
    own.set("total", Bytes{card});
    const bool own_fraction = fraction || own.choice("budget_by") == "fraction";
    out.push_back({request.own_name, asked(own), own_fraction});
  }
  notes.push_back(fmt::format(
      "backend=async (~): a model of the driver's pool from measurements, not byte-exact (how "
      "far the GPU runs behind the CPU decides when a free can be reused, and a snapshot does "
      "not record it): its frontier was from {:.1f}% below to {:.1f}% above PyTorch's measured "
      "one on every job checked (docs/torch.md, 'Checked against PyTorch'). The range beside its "
      "figure is where PyTorch's own frontier then lies: its low end if the model is as far "
      "above as it has been, its high end if as far below",
      100.0 * torch::kAsyncModelBelow, 100.0 * torch::kAsyncModelAbove));
  if (fraction) {
    notes.emplace_back(
        "every row is asked under torch.cuda.set_per_process_memory_fraction: its frontier is "
        "the smallest cap (fraction x the card) at which the replay completes, on the modelled "
        "card");
  } else {
    notes.emplace_back(
        "garbage_collection_threshold acts only under set_per_process_memory_fraction: its row "
        "is asked under a fraction cap on the modelled card, so its figures are caps, not "
        "cards (whatif --fraction asks every row that way)");
  }
  return out;
}

// The run every trial starts from: the replay of the trace on torch over the sim, no probes, no
// events written, no notices (the rows' settings are the table's to say).
RunConfig base_config(const WhatIfRequest& request,
                      const std::shared_ptr<const trace::Trace>& trace) {
  RunConfig config;
  const Registry::Entry* player = Registry::global().trace_player();
  if (player == nullptr) throw Error(ErrorKind::internal, "no scenario replays traces");
  config.trace = trace;  // read once, here: every trial adopts it
  config.params = Params(player->params);
  config.params.set("trace", request.trace.string());  // the record's: the file is not read again
  if (request.device) config.params.set("device", std::int64_t{*request.device});
  config.allocator = torch::torch_kind();
  config.probe = false;
  config.verify = VerifyMode::off;
  config.environment = probe_host_environment();
  config.stop = request.stop;
  return config;
}

WhatIfRow frontier_row(const TorchSetting& setting, const RunConfig& base,
                       const trace::Trace& trace, std::uint64_t upper_bytes) {
  RunConfig config = base;
  config.allocator_options = setting.options;
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{upper_bytes}};
  WhatIfRow row{.name = setting.name,
                .options = resolved(setting.options, trace).effective,
                .fraction = setting.fraction};
  row.alloc_conf = torch::alloc_conf(row.options);
  const FrontierResult f = find_frontier(config, kDevicePageBytes, nullptr);
  row.frontier_bytes = f.answer;
  row.failing_bytes = f.beyond.value_or(0);
  row.trials = f.trials.size();
  return row;
}

// Each row on its own (the runs share nothing but the parsed trace, read-only): its frontier,
// then every row at the budget.
std::vector<WhatIfRow> run_rows(const std::vector<TorchSetting>& settings, const RunConfig& base,
                                const trace::Trace& trace, std::uint64_t upper_bytes,
                                std::optional<std::uint64_t> budget_bytes, unsigned threads) {
  std::vector<WhatIfRow> rows(settings.size());
  parallel_each(settings.size(), threads, [&](std::size_t i) {
    rows[i] = frontier_row(settings[i], base, trace, upper_bytes);
  });
  if (budget_bytes) {
    const std::vector<WhatIfAtBudget> at =
        settings_at_budget(base, settings, *budget_bytes, threads);
    for (std::size_t i = 0; i < rows.size(); ++i)
      rows[i].at_budget = at[i];
  }
  return rows;
}

// --budget as run takes it: N% and all of the modelled card (80 GiB, or the snapshot's budget
// when larger), a size as given; past the largest card the sim models, clamped with run's notice.
std::uint64_t given_budget(const BudgetRequest& request, std::optional<std::uint64_t> recorded,
                           std::vector<std::string>& notes) {
  const std::uint64_t card = std::max(kWhatIfCardBytes, recorded.value_or(0));
  const bool sized = request.kind == BudgetRequest::Kind::bytes ||
                     request.kind == BudgetRequest::Kind::card;  // a named card is its own size
  ResolvedBudget budget =
      sized
          ? resolve_budget_request(request, card, SimAllocator::kMaxCapacityBytes,
                                   "of the largest card the model holds", kept_back_bytes(nullptr))
          : resolve_budget_request(request, card, card, "of the simulated card",
                                   kept_back_bytes(nullptr));
  if (!budget.card.empty()) notes.push_back(std::move(budget.card));
  if (!budget.clamped.empty()) notes.push_back(std::move(budget.clamped));
  return budget.bytes;
}

// Where the budget comes from, and the notes that say so.
void choose_budget(const WhatIfRequest& request, const trace::Trace& trace, WhatIfResult& result) {
  const auto recorded = trace::recorded_device_budget(trace);
  if (request.budget) {
    result.budget_bytes = given_budget(*request.budget, recorded, result.notes);
    result.budget_source = WhatIfBudgetSource::given;
    return;
  }
  const auto first_oom =
      std::find_if(trace.events.begin(), trace.events.end(),
                   [](const trace::Event& e) { return e.op == trace::Op::failed; });
  if (recorded) {
    result.budget_bytes = recorded;
    result.budget_source = WhatIfBudgetSource::snapshot;
    result.notes.push_back(fmt::format(
        "the budget, {}, is what the program had when its OOM (entry {}) found the device full: "
        "what its allocator had reserved then plus the device's free memory",
        format_bytes(*recorded), format_count((*first_oom).index)));
  } else if (first_oom != trace.events.end()) {
    result.notes.push_back(fmt::format(
        "no budget column: the snapshot's OOM (entry {}) left {} free on the device, so the "
        "program ran under set_per_process_memory_fraction, whose cap a snapshot does not record; "
        "only frontiers are shown (--budget SIZE adds the column)",
        format_count((*first_oom).index),
        format_bytes(trace.recorded
                         ? trace.recorded->device_free_at(first_oom.position()).value_or(0)
                         : 0)));
  } else {
    result.notes.emplace_back(
        "no budget column: the snapshot has no OOM to say what the program had; only frontiers "
        "are shown (--budget SIZE adds the column)");
  }
}

}  // namespace

// On a tie a named setting wins over "as recorded" (which is one of them, or several at once):
// the answer should name what to set. Asked for a card, a fraction cap's figure is no card's.
std::optional<std::size_t> smallest_frontier(const std::vector<WhatIfRow>& rows,
                                             BudgetQuestion question) {
  std::optional<std::size_t> best;
  const auto consider = [&](std::size_t i) {
    if (!rows[i].frontier_bytes) return;
    if (question == BudgetQuestion::card && rows[i].fraction) return;
    if (!best || *rows[i].frontier_bytes < *rows[*best].frontier_bytes) best = i;
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].name != kAsRecorded) consider(i);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].name == kAsRecorded) consider(i);
  }
  return best;
}

WhatIfResult what_if(const WhatIfRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const trace::Trace> trace =
      request.loaded ? request.loaded
                     : std::make_shared<const trace::Trace>(
                           trace::load(request.trace, {.device = request.device}));
  if (trace->format != trace::pytorch_format()) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not a PyTorch memory snapshot (it reads as {}): whatif replays "
                            "the snapshots torch.cuda.memory._dump_snapshot() writes",
                            request.trace.string(), trace::to_string(trace->format)));
  }
  WhatIfResult result{.trace = request.trace, .entries = trace->source_entries};
  result.notes = trace->notices;  // the device read, when the user named none
  choose_budget(request, *trace, result);
  result.question = request.question;
  result.upper_bytes = std::max(kWhatIfCardBytes, result.budget_bytes.value_or(0));
  result.lower_bound = trace::ends_at_failure(*trace);
  for (const std::string& caveat : trace::trace_caveats(*trace))
    result.notes.push_back(caveat);
  const std::vector<TorchSetting> rows =
      settings(request, *trace, result.upper_bytes, result.notes);
  result.rows = run_rows(rows, base_config(request, trace), *trace, result.upper_bytes,
                         result.budget_bytes, request.threads);
  result.best = smallest_frontier(result.rows, result.question);
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    if (result.rows[i].name == "native") result.native = i;
  }
  result.notes.push_back(fmt::format(
      "every row replays the snapshot's tensor requests through oomlab's model of PyTorch's "
      "caching allocator on a simulated {} card (torch:upstream=sim): no GPU was used; frontiers "
      "to {}",
      format_bytes(result.upper_bytes), format_bytes(kDevicePageBytes)));
  result.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace oomlab
