#include "run/whatif.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "allocators/backends.hpp"
#include "allocators/torch/torch_options.hpp"
#include "device/device.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "run/frontier.hpp"
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

struct Setting {
  std::string name;
  Params options;  // what the row asks for; the snapshot's settings fill what it leaves alone
};

// The torch model over the simulated card, nothing else chosen.
Params torch_on_card(std::uint64_t card_bytes) {
  Params p(find_backend("torch")->options);
  p.set("upstream", std::string("sim"));
  p.set("total", Bytes{card_bytes});
  return p;
}

// PyTorch's defaults, every one set, so that none of the snapshot's own settings leaks in.
Params native_options(std::uint64_t card_bytes) {
  Params p = torch_on_card(card_bytes);
  for (const ParamDef& d : find_backend("torch")->options) {
    if (d.name != "upstream" && d.name != "total") p.set(d.name, d.default_value);
  }
  return p;
}

torch::ResolvedTorch resolved(const Params& options, const trace::Trace& trace) {
  return torch::resolve_torch(options,
                              trace.allocator_settings ? &*trace.allocator_settings : nullptr);
}

// What the snapshot's settings change from PyTorch's defaults ("budget_by=fraction"); empty
// when nothing does.
std::vector<std::string> recorded_differences(const trace::Trace& trace, std::uint64_t card) {
  const torch::ResolvedTorch recorded = resolved(torch_on_card(card), trace);
  const torch::ResolvedTorch native = resolved(native_options(card), trace);
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

std::vector<Setting> settings(const trace::Trace& trace, std::uint64_t card,
                              std::vector<std::string>& notes) {
  std::vector<Setting> out;
  const std::vector<std::string> differences = recorded_differences(trace, card);
  if (!differences.empty()) {
    out.push_back({std::string(kAsRecorded), torch_on_card(card)});
    notes.push_back(
        fmt::format("as recorded: the snapshot's allocator_settings, which differ from "
                    "PyTorch's defaults in {}",
                    fmt::join(differences, ", ")));
  }
  const Params native = native_options(card);
  out.push_back({"native", native});
  const auto with = [&](std::string name,
                        const std::vector<std::pair<std::string, ParamValue>>& changes) {
    Setting s{std::move(name), native};
    for (const auto& [option, value] : changes)
      s.options.set(option, value);
    out.push_back(std::move(s));
  };
  with("expandable_segments", {{"expandable_segments", true}});
  with("max_split_size=128MiB", {{"max_split_size", Bytes{128_MiB}}});
  with("max_split_size=512MiB", {{"max_split_size", Bytes{512_MiB}}});
  with("garbage_collection_threshold=0.8",
       {{"garbage_collection_threshold", 0.8}, {"budget_by", std::string("fraction")}});
  with("backend=async", {{"backend", std::string("async")}});
  notes.push_back(
      "garbage_collection_threshold=0.8 runs with budget_by=fraction: PyTorch collects cached "
      "blocks only under set_per_process_memory_fraction, so that row's budget is a fraction cap "
      "on the modelled card, not a smaller card");
  return out;
}

// The run every trial starts from: the replay of the trace on torch over the sim, no probes, no
// events written, no notices (the rows' settings are the table's to say).
RunConfig base_config(const WhatIfRequest& request) {
  RunConfig config;
  config.scenario = "replay";
  config.params = Params(Registry::global().find("replay")->params);
  config.params.set("trace", request.trace.string());
  config.params.set("device", std::int64_t{request.device});
  config.allocator = BackendKind::torch;
  config.probe = false;
  config.verify = VerifyMode::off;
  config.environment = probe_host_environment();
  config.stop = request.stop;
  return config;
}

BudgetRequest bytes_budget(std::uint64_t bytes) {
  return {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{bytes}};
}

WhatIfAtBudget at_budget(RunConfig config, std::uint64_t budget_bytes) {
  config.budget = bytes_budget(budget_bytes);
  config.probe = true;  // the reported record: its cause is decided on the probed evidence
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

WhatIfRow run_row(const Setting& setting, const RunConfig& base, const trace::Trace& trace,
                  std::uint64_t upper_bytes, std::optional<std::uint64_t> budget_bytes) {
  RunConfig config = base;
  config.allocator_options = setting.options;
  config.budget = bytes_budget(upper_bytes);
  WhatIfRow row{.name = setting.name, .options = resolved(setting.options, trace).effective};
  const FrontierResult f = find_frontier(config, kDevicePageBytes, nullptr);
  row.frontier_bytes = f.frontier_bytes;
  row.failing_bytes = f.failing_bytes;
  row.trials = f.trials.size();
  if (budget_bytes) row.at_budget = at_budget(config, *budget_bytes);
  return row;
}

// Each row on its own: the runs share nothing but the parsed trace, read-only.
std::vector<WhatIfRow> run_rows(const std::vector<Setting>& settings, const RunConfig& base,
                                const trace::Trace& trace, std::uint64_t upper_bytes,
                                std::optional<std::uint64_t> budget_bytes, unsigned threads) {
  std::vector<WhatIfRow> rows(settings.size());
  std::vector<std::exception_ptr> errors(settings.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < settings.size(); i = next++) {
      try {
        rows[i] = run_row(settings[i], base, trace, upper_bytes, budget_bytes);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(settings.size()));
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  pool.clear();  // joins
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return rows;
}

// Where the budget comes from, and the notes that say so.
void choose_budget(const WhatIfRequest& request, const trace::Trace& trace, WhatIfResult& result) {
  if (request.budget_bytes) {
    result.budget_bytes = request.budget_bytes;
    result.budget_source = WhatIfBudgetSource::given;
    return;
  }
  const auto first_oom =
      std::find_if(trace.events.begin(), trace.events.end(),
                   [](const trace::Event& e) { return e.op == trace::Op::failed; });
  if (const auto recorded = trace::recorded_device_budget(trace)) {
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
        format_count((*first_oom).index), format_bytes((*first_oom).address)));
  } else {
    result.notes.push_back(
        "no budget column: the snapshot has no OOM to say what the program had; only frontiers "
        "are shown (--budget SIZE adds the column)");
  }
}

// On a tie a named setting wins over "as recorded" (which is one of them, or several at once):
// the answer should name what to set.
std::optional<std::size_t> smallest_frontier(const std::vector<WhatIfRow>& rows) {
  std::optional<std::size_t> best;
  const auto consider = [&](std::size_t i) {
    if (!rows[i].frontier_bytes) return;
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

}  // namespace

WhatIfResult what_if(const WhatIfRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const trace::Trace> trace =
      trace::load_shared(request.trace, {.device = request.device});
  if (trace->format != trace::Format::pytorch) {
    throw Error(ErrorKind::input,
                fmt::format("{}: not a PyTorch memory snapshot (it reads as {}): whatif replays "
                            "the snapshots torch.cuda.memory._dump_snapshot() writes",
                            request.trace.string(), trace::to_string(trace->format)));
  }
  WhatIfResult result{.trace = request.trace,
                      .entries = trace->events.size() - trace->initial_events};
  choose_budget(request, *trace, result);
  result.upper_bytes = std::max(kWhatIfCardBytes, result.budget_bytes.value_or(0));
  const std::vector<Setting> rows = settings(*trace, result.upper_bytes, result.notes);
  result.rows = run_rows(rows, base_config(request), *trace, result.upper_bytes,
                         result.budget_bytes, request.threads);
  result.best = smallest_frontier(result.rows);
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
