#include "reports/run/run_extras.hpp"

#include <fmt/format.h>

#include <cmath>

#include "reports/run/soak_report.hpp"

namespace oomlab {

ReportSoak read_soak(const std::filesystem::path& path) {
  const nlohmann::json doc = read_json_file(path);
  const JsonFields soak(doc, path);
  if (soak.optional_text("schema") != kSoakSchema) {
    soak.fail("schema", fmt::format("\"{}\" (the soak.json of run --repeat)", kSoakSchema));
  }
  ReportSoak r;
  r.cycles = soak.count("cycles");
  r.cycles_asked = soak.optional_count("cycles_asked").value_or(r.cycles);
  r.ooms = soak.optional_count("ooms").value_or(0);
  const auto passed = doc.find("passed");
  if (passed == doc.end() || !passed->is_boolean()) soak.fail("passed", "true or false");
  r.passed = passed->get<bool>();
  const auto stopped = doc.find("stopped_early");
  r.stopped_early = stopped != doc.end() && stopped->is_boolean() && stopped->get<bool>();
  r.problems = soak.texts("problems");
  if (const auto live = soak.optional_object("oom_live_bytes")) {
    r.oom_live_min = live->optional_count("min").value_or(0);
    r.oom_live_median = live->optional_count("median").value_or(0);
    r.oom_live_max = live->optional_count("max").value_or(0);
  }
  r.rss_before_bytes = soak.optional_count("rss_before_bytes").value_or(0);
  r.rss_after_last_bytes = soak.optional_count("rss_after_last_bytes").value_or(0);
  r.rss_growth_bytes = soak.optional_integer("rss_growth_bytes").value_or(0);
  if (soak.has("per_cycle")) {
    for (const JsonFields& cycle : soak.objects("per_cycle"))
      r.device_measured = r.device_measured || cycle.has("device_free_before");
  }
  r.worst_device_shortfall_bytes =
      soak.optional_integer("worst_device_shortfall_bytes").value_or(0);
  r.unbalanced_cycles = soak.optional_count("unbalanced_cycles").value_or(0);
  return r;
}

std::optional<double> run_metric(const RunReport& run, const std::string& name) {
  for (const auto& [metric, value] : run.metrics) {
    if (metric == name) return std::isnan(value) ? std::nullopt : std::optional(value);
  }
  return std::nullopt;
}

std::optional<TimelineQuery> program_failure_query(const RunReport& run) {
  const auto failures = run_metric(run, "trace_failures");
  const auto entry = run_metric(run, "trace_first_failure_index");
  const auto bytes = run_metric(run, "trace_first_failure_bytes");
  if (!failures || *failures < 1 || !entry || !bytes)  // a replay's metrics
    return std::nullopt;
  return TimelineQuery{.entry = static_cast<std::uint64_t>(*entry),
                       .bytes = static_cast<std::uint64_t>(*bytes)};
}

}  // namespace oomlab
