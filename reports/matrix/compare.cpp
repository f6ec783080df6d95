// Verdicts: which cells match, how far their OOM points moved, and what that means.
#include "reports/matrix/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "oomlab/units.hpp"
#include "reports/matrix/table_text.hpp"

namespace oomlab {

using plain_json = nlohmann::json;  // unordered: its keys sorted

namespace {

bool failed(const std::string& outcome) {
  return outcome != "oom" && outcome != "completed";
}

double relative_change(std::uint64_t baseline, std::uint64_t current) {
  if (baseline == 0) return current == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (static_cast<double>(current) - static_cast<double>(baseline)) /
         static_cast<double>(baseline);
}

double widened(double tolerance, const std::optional<Spread>& a, const std::optional<Spread>& b) {
  return std::max({tolerance, a ? a->relative() : 0.0, b ? b->relative() : 0.0});
}

Movement movement(std::uint64_t baseline, std::uint64_t current, double tolerance) {
  return {.baseline = baseline,
          .current = current,
          .change = relative_change(baseline, current),
          .tolerance = tolerance};
}

std::string moved(std::string_view what, const Movement& m) {
  return fmt::format("{} {} (tolerance {:.1f}%)", what, change_percent(m.change),
                     100.0 * m.tolerance);
}

// Both sides ran out of memory: compare the points.
void judge_points(CellVerdict& v, double tolerance) {
  const CompareCell& b = *v.baseline;
  const CompareCell& c = *v.current;
  v.step_is_event = b.oom->step == 0 && c.oom->step == 0;
  v.live_bytes = movement(b.oom->live_bytes, c.oom->live_bytes,
                          widened(tolerance, b.live_bytes_spread, c.live_bytes_spread));
  v.step =
      v.step_is_event
          ? movement(b.oom->event, c.oom->event, widened(tolerance, b.event_spread, c.event_spread))
          : movement(b.oom->step, c.oom->step, widened(tolerance, b.step_spread, c.step_spread));
  const char* step_name = v.step_is_event ? "event" : "step";
  std::vector<std::string> earlier;
  std::vector<std::string> later;
  for (const auto& [what, m] : {std::pair{"live bytes", &*v.live_bytes}, {step_name, &*v.step}}) {
    if (m->earlier()) earlier.push_back(moved(what, *m));
    if (m->later()) later.push_back(moved(what, *m));
  }
  if (!earlier.empty()) {
    v.verdict = Verdict::earlier_oom;
    v.reason = fmt::format("OOM came earlier: {}", fmt::join(earlier, ", "));
  } else if (!later.empty()) {
    v.verdict = Verdict::later_oom;
    v.reason = fmt::format("OOM came later: {}", fmt::join(later, ", "));
  } else {
    v.verdict = Verdict::same;
    v.reason = fmt::format("OOM point within tolerance: {}, {}", moved("live bytes", *v.live_bytes),
                           moved(step_name, *v.step));
  }
}

std::string failure_reason(const CompareCell& c, std::string_view what) {
  return c.why.empty() ? std::string(what) : fmt::format("{} ({})", what, c.why);
}

void judge(CellVerdict& v, double tolerance) {
  const CompareCell& b = *v.baseline;
  const CompareCell& c = *v.current;
  if (c.outcome == "crash") {
    v.verdict = Verdict::crash;
    v.reason = failure_reason(c, "the current cell crashed");
  } else if (c.outcome == "timeout") {
    v.verdict = Verdict::timeout;
    v.reason = failure_reason(c, "the current cell timed out");
  } else if (c.outcome == "error" || c.outcome == "interrupted") {
    // An interrupted cell measured nothing either: it cannot stand for the current state.
    v.verdict = Verdict::error;
    v.reason = failure_reason(c, c.outcome == "error" ? "the current cell ended in error"
                                                      : "the current cell was interrupted");
  } else if (c.outcome == "completed") {
    v.verdict = b.outcome == "completed" ? Verdict::same : Verdict::fixed;
    v.reason = b.outcome == "completed"
                   ? "both completed"
                   : fmt::format("baseline ended '{}', current completed", b.outcome);
  } else if (b.outcome == "completed") {
    v.verdict = Verdict::new_oom;
    v.reason = fmt::format("baseline completed, current ran out of memory with {} live",
                           format_bytes(c.oom->live_bytes));
  } else if (failed(b.outcome)) {
    // The current cell reached the OOM its scenario provokes: the failure is gone.
    v.verdict = Verdict::fixed;
    v.reason = fmt::format("baseline ended '{}', current ran to its OOM", b.outcome);
  } else {
    judge_points(v, tolerance);
  }
}

std::string device_name(const plain_json& env) {
  const auto device = env.find("device");
  if (device == env.end() || !device->is_object()) {
    return env.value("simulated", false) ? "none (simulated)" : "none";
  }
  return device->value("name", std::string("?"));
}

std::string text_of(const plain_json& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || it->is_null()) return "unknown";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return it->dump();
}

// 13000 -> "13.0 (13000)", as CUDA spells its versions.
std::string cuda_version(const plain_json& env, const char* name) {
  const auto it = env.find(name);
  if (it == env.end() || !it->is_number_integer()) return text_of(env, name);
  const auto v = it->get<std::int64_t>();
  if (v <= 0) return "none";
  return fmt::format("{}.{} ({})", v / 1000, v % 1000 / 10, v);
}

std::string device_memory(const plain_json& env) {
  const auto device = env.find("device");
  if (device == env.end() || !device->is_object()) return "-";
  const auto total = device->find("total_bytes");
  return total != device->end() && total->is_number_unsigned()
             ? format_bytes(total->get<std::uint64_t>())
             : "?";
}

std::string version_text(const plain_json& oomlab) {
  if (!oomlab.is_object()) return "unknown";
  return fmt::format("{} ({})", oomlab.value("version", std::string("?")),
                     oomlab.value("git", std::string("?")));
}

std::vector<EnvironmentRow> environment_rows(const CompareInput& b, const CompareInput& c) {
  std::vector<EnvironmentRow> rows;
  const auto add = [&](std::string what, std::string baseline, std::string current, bool warns) {
    const bool differs = baseline != current;
    rows.push_back(
        {std::move(what), std::move(baseline), std::move(current), differs, warns && differs});
  };
  const plain_json& be = b.environment;
  const plain_json& ce = c.environment;
  add("device", device_name(be), device_name(ce), true);
  add("memory", device_memory(be), device_memory(ce), false);
  add("driver", text_of(be, "driver"), text_of(ce, "driver"), true);
  add("CUDA runtime", cuda_version(be, "cuda_runtime"), cuda_version(ce, "cuda_runtime"), true);
  add("CUDA driver API", cuda_version(be, "cuda_driver_api"), cuda_version(ce, "cuda_driver_api"),
      false);
  add("simulated", text_of(be, "simulated"), text_of(ce, "simulated"), false);
  add("host", text_of(be, "host"), text_of(ce, "host"), false);
  add("oomlab", version_text(b.oomlab), version_text(c.oomlab), false);
  return rows;
}

}  // namespace

plain_json matching_key(const plain_json& key) {
  const auto files = key.find("files");
  if (files == key.end() || !files->is_object()) return key;
  plain_json out = key;
  out.erase("files");
  if (!out.contains("params") || !out["params"].is_object()) out["params"] = plain_json::object();
  for (const auto& [name, digest] : files->items())
    out["params"][name] = digest;
  return out;
}

double Spread::relative() const {
  return median > 0 ? (max - min) / median : 0.0;
}

std::string_view to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::same:
      return "same";
    case Verdict::earlier_oom:
      return "earlier-oom";
    case Verdict::later_oom:
      return "later-oom";
    case Verdict::new_oom:
      return "new-oom";
    case Verdict::fixed:
      return "fixed";
    case Verdict::crash:
      return "crash";
    case Verdict::timeout:
      return "timeout";
    case Verdict::error:
      return "error";
    case Verdict::new_failure:
      return "new-failure";
    case Verdict::missing:
      return "missing";
    case Verdict::added:
      return "added";
  }
  return "?";
}

bool is_regression(Verdict verdict) {
  switch (verdict) {
    case Verdict::earlier_oom:
    case Verdict::new_oom:
    case Verdict::crash:
    case Verdict::timeout:
    case Verdict::error:
    case Verdict::new_failure:
      return true;
    default:
      return false;
  }
}

std::size_t Comparison::count(Verdict verdict) const {
  return static_cast<std::size_t>(std::count_if(
      cells.begin(), cells.end(), [&](const CellVerdict& v) { return v.verdict == verdict; }));
}

std::size_t Comparison::regressions() const {
  return static_cast<std::size_t>(std::count_if(
      cells.begin(), cells.end(), [](const CellVerdict& v) { return is_regression(v.verdict); }));
}

bool Comparison::environments_differ() const {
  return std::any_of(environment.begin(), environment.end(),
                     [](const EnvironmentRow& r) { return r.warns; });
}

CellVerdict judge_cells(const CompareCell& baseline, const CompareCell& current, double tolerance) {
  CellVerdict v;
  v.baseline = baseline;
  v.current = current;
  judge(v, tolerance);
  return v;
}

CellVerdict unmatched_cell(const CompareCell& current) {
  CellVerdict v;
  v.current = current;
  if (failed(current.outcome)) {
    // No baseline to excuse it: a program cell that cannot start fails the night it first runs.
    v.verdict = Verdict::new_failure;
    v.reason = failure_reason(
        current,
        fmt::format("new failure: in the current only, where it ended '{}'", current.outcome));
  } else {
    v.verdict = Verdict::added;
    v.reason = "in the current only";
  }
  return v;
}

Comparison compare(CompareInput baseline, CompareInput current, double tolerance) {
  Comparison out;
  out.tolerance = tolerance;
  out.environment = environment_rows(baseline, current);
  std::vector<bool> matched(current.cells.size(), false);
  std::vector<plain_json> current_keys;
  for (const CompareCell& c : current.cells)
    current_keys.push_back(matching_key(c.key));
  for (const CompareCell& b : baseline.cells) {
    CellVerdict v;
    v.baseline = b;
    const plain_json key = matching_key(b.key);
    for (std::size_t i = 0; i < current.cells.size(); ++i) {
      if (!matched[i] && current_keys[i] == key) {
        matched[i] = true;
        v.current = current.cells[i];
        break;
      }
    }
    if (v.current) {
      judge(v, tolerance);
    } else {
      v.verdict = Verdict::missing;
      v.reason = "in the baseline, not in the current";
    }
    out.cells.push_back(std::move(v));
  }
  for (std::size_t i = 0; i < current.cells.size(); ++i) {
    if (!matched[i]) out.cells.push_back(unmatched_cell(current.cells[i]));
  }
  pair_option_differences(out.cells);
  out.baseline = std::move(baseline);
  out.current = std::move(current);
  return out;
}

std::string driver_change(const Comparison& comparison) {
  const plain_json& b = comparison.baseline.environment;
  const plain_json& c = comparison.current.environment;
  const std::string before = text_of(b, "driver");
  const std::string after = text_of(c, "driver");
  if (device_name(b) != device_name(c) || before == after) return "";
  return fmt::format("driver {} → {}", before, after);
}

std::string environment_warning(const Comparison& comparison) {
  std::vector<std::string> parts;
  for (const EnvironmentRow& row : comparison.environment) {
    if (row.warns) parts.push_back(fmt::format("{} {} vs {}", row.what, row.baseline, row.current));
  }
  if (parts.empty()) return "";
  return fmt::format(
      "comparing different environments: {} (OOM points may move for that reason alone)",
      fmt::join(parts, "; "));
}

std::string incomplete_reason(const Comparison& comparison) {
  const std::size_t missing = comparison.count(Verdict::missing);
  const std::size_t matched = comparison.cells.size() - missing - comparison.count(Verdict::added) -
                              comparison.count(Verdict::new_failure);
  if (matched == 0) return "incomplete: no cell matched";
  if (missing == 0) return "";
  std::vector<std::string> names;
  for (const CellVerdict& v : comparison.cells) {
    if (v.verdict != Verdict::missing) continue;
    if (names.size() == 3) {
      names.emplace_back("...");
      break;
    }
    names.push_back(fmt::format("{}/{}", v.cell().scenario, v.allocator_label()));
  }
  return fmt::format("incomplete: {} of {} baseline cells missing from the current ({})", missing,
                     comparison.baseline.cells.size(), fmt::join(names, ", "));
}

std::string no_match_warning(const Comparison& comparison) {
  const std::size_t unmatched = comparison.count(Verdict::missing) +
                                comparison.count(Verdict::added) +
                                comparison.count(Verdict::new_failure);
  if (comparison.baseline.cells.empty() || comparison.current.cells.empty() ||
      unmatched != comparison.cells.size())
    return "";
  return "no baseline cell is in the current: cells match by scenario, allocator, options, params "
         "(a file by its content) and budget, so compare runs made with the same settings";
}

std::string verdict_counts(const Comparison& comparison) {
  std::vector<std::string> parts;
  for (const Verdict verdict : kVerdicts) {
    if (const std::size_t n = comparison.count(verdict); n > 0)
      parts.push_back(fmt::format("{} {}", n, to_string(verdict)));
  }
  return parts.empty() ? "no cells" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string conclusion(const Comparison& comparison) {
  const std::size_t cells = comparison.cells.size();
  const std::size_t missing = comparison.count(Verdict::missing);
  const std::string missing_note =
      missing == 0 ? ""
                   : fmt::format("; {} baseline cell{} missing from the current", missing,
                                 missing == 1 ? "" : "s");
  const std::size_t regressions = comparison.regressions();
  if (regressions == 0)
    return fmt::format("no regression in {} cell{}{}", cells, cells == 1 ? "" : "s", missing_note);
  std::vector<std::string> parts;
  for (const Verdict verdict : kVerdicts) {
    if (const std::size_t n = comparison.count(verdict); n > 0 && is_regression(verdict))
      parts.push_back(fmt::format("{} {}", n, to_string(verdict)));
  }
  return fmt::format("REGRESSION: {} of {} cell{} ({}){}", regressions, cells,
                     cells == 1 ? "" : "s", fmt::join(parts, ", "), missing_note);
}

}  // namespace oomlab
