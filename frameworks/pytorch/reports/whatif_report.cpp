#include "pytorch/reports/whatif_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "oomlab/units.hpp"
#include "pytorch/model/torch_options.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/searches/search_json.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab::torch {

using json = nlohmann::ordered_json;

namespace {

// A frontier this much smaller than native's is not worth a change of settings: the model's
// own error against PyTorch is about 1% (tests/torch_replay_test.cpp).
constexpr double kNegligiblePercent = 1.0;

// "26%", "0.4%", "-0.02%" (never "-0.0%": a difference too small for one decimal gets two).
std::string percent_text(double percent) {
  if (std::fabs(percent) >= 10.0) return fmt::format("{:.0f}%", percent);
  if (std::fabs(percent) >= 0.05 || percent == 0.0) return fmt::format("{:.1f}%", percent);
  return fmt::format("{:.2f}%", percent);
}

double percent_change(std::uint64_t value, std::uint64_t base) {
  return 100.0 * (static_cast<double>(value) - static_cast<double>(base)) /
         static_cast<double>(base);
}

// backend=async's figures carry the model's measured error against PyTorch (docs/torch.md: "What
// the model does not cover"): its frontier is a reading, not a byte-exact answer.
std::optional<torch::FrontierRange> range_of(const WhatIfRow& row) {
  if (!row.frontier_bytes) return std::nullopt;
  std::optional<torch::FrontierRange> range =
      torch::frontier_range(row.options, *row.frontier_bytes);
  if (!row.made_range) return range;
  const auto [low, high] = *row.made_range;
  if (!range) return torch::FrontierRange{.low_bytes = low, .high_bytes = high};
  range->low_bytes = std::min(range->low_bytes, low);
  range->high_bytes = std::max(range->high_bytes, high);
  return range;
}

// A budget within an approximate row's range: PyTorch's own frontier may lie on either side of
// it, so the model's verdict there is no answer.
bool uncertain_at_budget(const WhatIfResult& r, const WhatIfRow& row) {
  const auto range = range_of(row);
  return range && r.budget_bytes && range->low_bytes <= *r.budget_bytes &&
         *r.budget_bytes < range->high_bytes;
}

std::string at_budget_text(const WhatIfResult& r, const WhatIfRow& row) {
  const WhatIfAtBudget& at = *row.at_budget;
  const bool uncertain = uncertain_at_budget(r, row);
  if (at.outcome == Outcome::completed) return uncertain ? "may fit" : "fits";
  if (at.outcome != Outcome::oom) return std::string(to_string(at.outcome));
  const std::string oom =
      at.first_failure_index ? fmt::format("OOM at entry {}", format_count(*at.first_failure_index))
                             : std::string("OOM");
  return uncertain ? "may " + oom : oom;
}

bool fits_at_budget(const WhatIfResult& r, const WhatIfRow& row) {
  return row.at_budget && row.at_budget->outcome == Outcome::completed &&
         !uncertain_at_budget(r, row);
}

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// What to set for a row: the exact variable, and the fraction where the row needs one.
std::string to_set(const WhatIfRow& row) {
  const std::string conf = row.settings.empty()
                               ? std::string("PYTORCH_CUDA_ALLOC_CONF unset")
                               : fmt::format("PYTORCH_CUDA_ALLOC_CONF={}", row.settings);
  return row.fraction_cap ? conf + " with torch.cuda.set_per_process_memory_fraction" : conf;
}

std::string frontier_text(const WhatIfResult& r, const WhatIfRow& row) {
  if (!row.frontier_bytes) return fmt::format("over {}", format_bytes(r.upper_bytes));
  const auto range = range_of(row);
  if (row.not_monotonic) return format_bytes(*row.frontier_bytes) + " (not monotonic)";
  // A range whose two ends read the same ("7.52 GiB..7.52 GiB") says nothing the figure does not:
  // it is shown plainly, as an exact row's.
  if (!range || format_bytes(range->low_bytes) == format_bytes(range->high_bytes))
    return format_bytes(*row.frontier_bytes);
  return fmt::format("~{} ({}..{})", format_bytes(*row.frontier_bytes),
                     format_bytes(range->low_bytes), format_bytes(range->high_bytes));
}

// The frontiers: the best setting against native, or that none does better.
std::string frontier_answer(const WhatIfResult& r) {
  const std::string card = format_bytes(r.upper_bytes);
  if (!r.best) return fmt::format("no setting completes even on a {} card", card);
  const WhatIfRow& best = r.rows[*r.best];
  const WhatIfRow* native = r.native ? &r.rows[*r.native] : nullptr;
  if (native == nullptr || !native->frontier_bytes) {
    return fmt::format("{} fits in {}; native does not complete even on a {} card", best.setting,
                       format_bytes(*best.frontier_bytes), card);
  }
  const std::uint64_t n = *native->frontier_bytes;
  if (*best.frontier_bytes >= n) {
    return fmt::format(
        "no setting fits in less than native ({}): PyTorch's defaults are as good "
        "as any of these for this program",
        format_bytes(n));
  }
  const double saving = -percent_change(*best.frontier_bytes, n);
  if (saving < kNegligiblePercent) {
    return fmt::format(
        "no setting needs much less than native ({}): the best, {}, saves {} "
        "({}), so PyTorch's defaults are about as good as any of these here",
        format_bytes(n), best.setting, format_bytes(n - *best.frontier_bytes),
        percent_text(saving));
  }
  return fmt::format("{} fits in {}, {} less than native ({}): {}", best.setting,
                     frontier_text(r, best), percent_text(-percent_change(*best.frontier_bytes, n)),
                     format_bytes(n), to_set(best));
}

// At the budget: what native does and, when it runs out of memory, which settings fit.
std::string budget_answer(const WhatIfResult& r) {
  std::string out = fmt::format("at the budget of {}", format_bytes(*r.budget_bytes));
  if (!r.native) return out;
  const WhatIfRow& native = r.rows[*r.native];
  const WhatIfAtBudget& at = *native.at_budget;
  if (at.outcome == Outcome::completed) return out + ": native fits";
  out += fmt::format(": native runs out of memory{}{}",
                     at.first_failure_index
                         ? fmt::format(" at entry {}", format_count(*at.first_failure_index))
                         : std::string(),
                     at.cause ? fmt::format(" ({})", to_string(*at.cause)) : std::string());
  std::vector<std::string> fitting;
  std::vector<std::string> maybe;
  for (const WhatIfRow& row : r.rows) {
    if (&row != &native && fits_at_budget(r, row))
      fitting.push_back(fmt::format("{} ({})", row.setting, to_set(row)));
    if (&row != &native && uncertain_at_budget(r, row)) maybe.push_back(row.setting);
  }
  const std::string may_fit =
      maybe.empty() ? std::string()
                    : fmt::format(" ({} may fit: the budget is within the range of {} frontier)",
                                  listed(maybe), maybe.size() == 1 ? "its" : "their");
  if (!fitting.empty()) {
    return out +
           fmt::format(", {} fit{}{}", listed(fitting), fitting.size() == 1 ? "s" : "", may_fit);
  }
  out += may_fit;
  out += "; none of these settings fits in it";
  if (r.best && *r.rows[*r.best].frontier_bytes > *r.budget_bytes) {
    const WhatIfRow& best = r.rows[*r.best];
    out += fmt::format(
        ": the smallest frontier, {} ({}), is {} more (a smaller batch or shorter "
        "sequences, not an allocator setting, would have to make up the rest)",
        format_bytes(*best.frontier_bytes), best.setting,
        format_bytes(*best.frontier_bytes - *r.budget_bytes));
  }
  return out;
}

std::string cause_text(const WhatIfRow& row) {
  if (!row.at_budget || !row.at_budget->cause) return "-";
  return std::string(to_string(*row.at_budget->cause));
}

std::string vs_native_text(const WhatIfResult& r, const WhatIfRow& row) {
  if (!r.native) return "-";
  if (&row == &r.rows[*r.native]) return "base";
  const auto& native = r.rows[*r.native].frontier_bytes;
  if (!native || !row.frontier_bytes) return "-";
  if (*row.frontier_bytes == *native) return "same";
  const double change = percent_change(*row.frontier_bytes, *native);
  return (change > 0 ? "+" : "-") + percent_text(std::fabs(change));
}

json at_budget_json(const WhatIfResult& r, const WhatIfRow& row) {
  const std::optional<WhatIfAtBudget>& at = row.at_budget;
  if (!at) return nullptr;
  return {{"outcome", to_string(at->outcome)},
          {"first_failure_index", or_null(at->first_failure_index)},
          {"cause", at->cause ? json(to_string(*at->cause)) : json(nullptr)},
          {"request_bytes", at->outcome == Outcome::oom ? json(at->request_bytes) : json(nullptr)},
          {"uncertain", uncertain_at_budget(r, row)}};
}

}  // namespace

// Why a what-if's figures are lower bounds, for a snapshot that stops at its program's own OOM.
constexpr std::string_view kStopsAtOom = "the snapshot stops at the program's OOM";

std::string whatif_answer(const WhatIfResult& r) {
  std::string out =
      r.made ? fmt::format(
                   "predicted for {}={} from the snapshots at {}={} (not "
                   "run): ",
                   r.made->name, r.made->at, r.made->name, fmt::join(r.made->values, ","))
             : std::string();
  out += frontier_answer(r);
  if (r.budget_bytes) out += "; " + budget_answer(r);
  if (r.lower_bound && r.best) {
    out += fmt::format(" (lower bounds: {}, and what the job needed after it is not in it)",
                       r.lower_bound_why.empty() ? kStopsAtOom : r.lower_bound_why);
  }
  return out;
}

std::string whatif_subject(const WhatIfResult& r) {
  std::string name = r.trace.filename().string();
  if (!r.made) return name;
  return fmt::format("{} at {}={} (made from {}={}; predicted, not run)", name, r.made->name,
                     r.made->at, r.made->name, fmt::join(r.made->values, ","));
}

std::string whatif_heading(const WhatIfResult& r) {
  std::string budget = "no budget known";
  if (r.budget_bytes) {
    budget = fmt::format(
        "budget {} ({})", format_bytes(*r.budget_bytes),
        r.budget_source == WhatIfBudgetSource::given ? "--budget" : "from the snapshot");
  }
  return fmt::format(
      "what if {} ({} trace entries) had run with other allocator settings? {} · simulated {} "
      "card{}",
      whatif_subject(r), format_count(r.entries), budget, format_bytes(r.upper_bytes),
      r.question == BudgetQuestion::fraction ? " · every budget a fraction cap" : "");
}

WhatIfTable whatif_table(const WhatIfResult& r) {
  WhatIfTable table{.header = {"setting", "frontier", "vs native"}};
  if (r.budget_bytes) {
    table.header.push_back(fmt::format("at {}", format_bytes(*r.budget_bytes)));
    table.header.emplace_back("cause");
  }
  for (const WhatIfRow& row : r.rows) {
    std::vector<std::string> cells = {row.setting, frontier_text(r, row), vs_native_text(r, row)};
    if (r.budget_bytes) {
      cells.push_back(row.at_budget ? at_budget_text(r, row) : "-");
      cells.push_back(cause_text(row));
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

std::string whatif_text(const WhatIfResult& r) {
  const WhatIfTable table = whatif_table(r);
  std::vector<std::size_t> widths(table.header.size(), 0);
  for (std::size_t c = 0; c < widths.size(); ++c) {
    widths[c] = table.header[c].size();
    for (const auto& row : table.rows)
      widths[c] = std::max(widths[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // Sizes and percentages read best right-aligned; words left-aligned.
      const bool right = c == 1 || c == 2;
      out += c + 1 == cells.size() ? cells[c]
             : right               ? fmt::format("{:>{}}  ", cells[c], widths[c])
                                   : fmt::format("{:<{}}  ", cells[c], widths[c]);
    }
    return out + "\n";
  };
  std::string out = whatif_answer(r) + "\n\n" + whatif_heading(r) + "\n" + line(table.header);
  for (const auto& row : table.rows)
    out += line(row);
  for (const std::string& note : r.notes)
    out += "note: " + note + "\n";
  return out;
}

// An approximate row's range, where PyTorch's measured frontier was on every job checked.
json range_json(const WhatIfRow& row) {
  const auto range = range_of(row);
  if (!range) return nullptr;
  return json::array({range->low_bytes, range->high_bytes});
}

json whatif_json(const WhatIfResult& r) {
  json rows = json::array();
  for (const WhatIfRow& row : r.rows) {
    rows.push_back({{"name", row.setting},
                    {"options", params_json(row.options)},
                    {"alloc_conf", row.settings},
                    {"budget_by", row.fraction_cap ? "fraction" : "device"},
                    {"frontier_bytes", or_null(row.frontier_bytes)},
                    {"frontier_range_bytes", range_json(row)},
                    {"failing_bytes", row.failing_bytes},
                    {"trials", row.trials},
                    {"at_budget", at_budget_json(r, row)}});
    if (row.not_monotonic) {
      rows.back()["not_monotonic"] = {
          {"fails_at_bytes", row.not_monotonic->fails_bytes},
          {"completes_again_bytes", or_null(row.not_monotonic->completes_again_bytes)}};
    }
  }
  json doc = {{"schema", kWhatIfSchema},
              {"oomlab", version_json()},
              {"trace", {{"path", r.trace.string()}, {"entries", r.entries}}},
              {"allocator", "torch"},
              {"simulated", true},
              {"card_bytes", r.upper_bytes},
              {"resolution_bytes", kDevicePageBytes},
              {"budget_bytes", or_null(r.budget_bytes)},
              {"question", r.question == BudgetQuestion::fraction ? "fraction" : "card"},
              {"budget_source", r.budget_source == WhatIfBudgetSource::none
                                    ? json(nullptr)
                                    : json(to_string(r.budget_source))},
              {"answer", whatif_answer(r)},
              {"notes", r.notes},
              {"rows", rows},
              {"best", r.best ? json(r.rows[*r.best].setting) : json(nullptr)},
              {"lower_bound", r.lower_bound},
              {"duration_ms", r.duration_ms}};
  // Why, where it is not the trace's own OOM (a run record's word): older readers need not know.
  if (r.lower_bound && !r.lower_bound_why.empty() && r.lower_bound_why != kStopsAtOom)
    doc["lower_bound_why"] = r.lower_bound_why;
  if (r.made) {  // a trace made at a value not run: every figure is predicted
    doc["predicted"] = true;
    doc["made_from"] = made_from_json(r.made->name, r.made->values, r.made->fit, r.made->files,
                                      trace::TraceSeries::Rule::lines);
    doc["made_from"]["at"] = r.made->at;
    if (r.made->held) doc["made_from"]["range_from"] = trace::to_string(*r.made->held);
  }
  return doc;
}

}  // namespace oomlab::torch
