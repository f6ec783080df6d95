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

namespace oomlab::torch {

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
  WhatIfRow row;
  row.setting = setting.name;
  row.fraction_cap = setting.fraction;
  row.options = resolved(setting.options, trace).effective;
  row.settings = torch::alloc_conf(row.options);
  const FrontierResult f = find_frontier(config, kDevicePageBytes, nullptr);
  row.frontier_bytes = f.answer;
  row.failing_bytes = f.beyond.value_or(0);
  row.trials = f.trials.size();
  return row;
}

// A row's frontier checked against its run at the budget: the model need not be monotonic in the
// budget (garbage_collection_threshold frees its cache sooner under a smaller cap), so a row that
// completes below its frontier has its frontier searched again under the budget, and a row that
// runs out at or above its frontier is marked. Either way the row says it is not monotonic.
void check_at_budget(WhatIfRow& row, const TorchSetting& setting, const RunConfig& base,
                     std::uint64_t budget) {
  if (!row.at_budget || !row.frontier_bytes) return;
  const bool fits = row.at_budget->outcome == Outcome::completed;
  if (!fits && row.at_budget->outcome != Outcome::oom) return;
  if (fits && budget < *row.frontier_bytes) {
    RunConfig config = base;
    config.allocator_options = setting.options;
    config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{budget}};
    const FrontierResult below = find_frontier(config, kDevicePageBytes, nullptr);
    row.not_monotonic = WhatIfRow::NotMonotonic{.fails_bytes = row.failing_bytes,
                                                .completes_again_bytes = *row.frontier_bytes};
    row.frontier_bytes = below.answer.value_or(budget);
    row.failing_bytes = below.beyond.value_or(0);
    row.trials += below.trials.size();
  } else if (!fits && budget >= *row.frontier_bytes) {
    row.not_monotonic = WhatIfRow::NotMonotonic{.fails_bytes = budget};
  }
}

std::string not_monotonic_note(const WhatIfRow& row, std::uint64_t budget) {
  const WhatIfRow::NotMonotonic& n = *row.not_monotonic;
  if (n.completes_again_bytes) {
    return fmt::format(
        "{}: not monotonic in the budget: it completes at {} (its frontier) and at the budget, "
        "{}, runs out at {} B and completes again from {} B ({}): a card of the frontier's size "
        "holds the job, but not every larger one does",
        row.setting, format_bytes(*row.frontier_bytes), format_bytes(budget),
        format_count(n.fails_bytes), format_count(*n.completes_again_bytes),
        format_bytes(*n.completes_again_bytes));
  }
  return fmt::format(
      "{}: not monotonic in the budget: it completes at {} (its frontier) and runs out at the "
      "budget, {}: a card of the frontier's size holds the job, but not every larger one does",
      row.setting, format_bytes(*row.frontier_bytes), format_bytes(n.fails_bytes));
}

// Each row on its own (the runs share nothing but the parsed trace, read-only): its frontier,
// then every row at the budget, each checked against its frontier.
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
    parallel_each(settings.size(), threads, [&](std::size_t i) {
      check_at_budget(rows[i], settings[i], base, *budget_bytes);
    });
  }
  return rows;
}

// --budget as run takes it: N% and all of the modelled card (80 GiB, or the snapshot's budget
// when larger), a size as given; past the largest card the sim models no card could be: refused.
std::uint64_t given_budget(const BudgetRequest& request, std::optional<std::uint64_t> recorded,
                           std::vector<std::string>& notes) {
  const std::uint64_t card = std::max(kWhatIfCardBytes, recorded.value_or(0));
  const bool sized = request.kind == BudgetRequest::Kind::bytes ||
                     request.kind == BudgetRequest::Kind::card;  // a named card is its own size
  if (request.kind == BudgetRequest::Kind::bytes &&
      request.bytes.value > SimAllocator::kMaxCapacityBytes) {
    throw Error(ErrorKind::usage, fmt::format("--budget: no card holds {}: the model goes up to {}",
                                              format_bytes(request.bytes.value),
                                              format_bytes(SimAllocator::kMaxCapacityBytes)));
  }
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

namespace {

// The model's own range for a row whose figure is approximate (backend=async: a model of the
// driver's pool from measurements, torch::frontier_range); none where the model is byte-exact.
// A range made from a series (made_range) is left out: every row of such a table was made by the
// same rule, so it sets no row apart from another.
std::optional<torch::FrontierRange> model_range(const WhatIfRow& row) {
  if (!row.frontier_bytes) return std::nullopt;
  return torch::frontier_range(row.options, *row.frontier_bytes);
}

// The row with the smallest frontier among those `take` accepts, or none. On a tie a named
// setting wins over "as recorded" (which is one of them, or several at once): the answer should
// name what to set. Asked for a card, a fraction cap's figure is no card's.
template <typename Take>
std::optional<std::size_t> smallest(const std::vector<WhatIfRow>& rows, BudgetQuestion question,
                                    const Take& take) {
  std::optional<std::size_t> best;
  const auto consider = [&](std::size_t i) {
    if (!rows[i].frontier_bytes || !take(rows[i])) return;
    if (question == BudgetQuestion::card && rows[i].fraction_cap) return;
    if (!best || *rows[i].frontier_bytes < *rows[*best].frontier_bytes) best = i;
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].setting != kAsRecorded) consider(i);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].setting == kAsRecorded) consider(i);
  }
  return best;
}

// Why an exact row leads where an approximate one shows the smaller figure; "" where none does.
std::string exact_row_leads_note(const std::vector<WhatIfRow>& rows,
                                 const std::optional<std::size_t>& best, BudgetQuestion question) {
  if (!best || model_range(rows[*best])) return "";
  const std::uint64_t exact = *rows[*best].frontier_bytes;
  const auto smaller = smallest(rows, question, [&](const WhatIfRow& row) {
    return model_range(row) && *row.frontier_bytes < exact;
  });
  if (!smaller) return "";
  const WhatIfRow& approximate = rows[*smaller];
  return fmt::format(
      "{} leads, not {}: {}'s frontier, ~{}, is the smaller, but the model of it is approximate "
      "(from measurements, not byte-exact) and PyTorch's own may be as much as {}, more than "
      "{}'s {}; such a row leads only where even the top of its range is below the best frontier "
      "of the rows the model gives exactly",
      rows[*best].setting, approximate.setting, approximate.setting,
      format_bytes(*approximate.frontier_bytes), format_bytes(model_range(approximate)->high_bytes),
      rows[*best].setting, format_bytes(exact));
}

}  // namespace

// An approximate row's figure is the model's reading, not PyTorch's: it leads only where even the
// top of its range is below the best exact row's frontier, else the exact row, whose figure is
// PyTorch's to the byte, is the safer answer. Without an exact row, the smallest figure leads.
std::optional<std::size_t> smallest_frontier(const std::vector<WhatIfRow>& rows,
                                             BudgetQuestion question) {
  const auto exact =
      smallest(rows, question, [](const WhatIfRow& row) { return !model_range(row); });
  const auto surely_smaller = smallest(rows, question, [&](const WhatIfRow& row) {
    const auto range = model_range(row);
    return range && (!exact || range->high_bytes < *rows[*exact].frontier_bytes);
  });
  return surely_smaller ? surely_smaller : exact;
}

WhatIfResult what_if(const WhatIfRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const trace::Trace> trace =
      request.loaded ? request.loaded
                     : std::make_shared<const trace::Trace>(
                           trace::load(request.trace, {.device = request.device}));
  if (trace->format != torch::pytorch_format()) {
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
  result.lower_bound = trace::stops_short(*trace);
  // The trace's own OOM is said in whatif's words; a run record's, in the trace's.
  if (!trace::ends_at_failure(*trace)) result.lower_bound_why = trace::stops_short_words(*trace);
  for (const std::string& caveat : trace::trace_caveats(*trace))
    result.notes.push_back(caveat);
  const std::vector<TorchSetting> rows =
      settings(request, *trace, result.upper_bytes, result.notes);
  result.rows = run_rows(rows, base_config(request, trace), *trace, result.upper_bytes,
                         result.budget_bytes, request.threads);
  for (const WhatIfRow& row : result.rows) {
    if (row.not_monotonic) result.notes.push_back(not_monotonic_note(row, *result.budget_bytes));
  }
  result.best = smallest_frontier(result.rows, result.question);
  if (std::string why = exact_row_leads_note(result.rows, result.best, result.question);
      !why.empty())
    result.notes.push_back(std::move(why));
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    if (result.rows[i].setting == "native") result.native = i;
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

}  // namespace oomlab::torch
