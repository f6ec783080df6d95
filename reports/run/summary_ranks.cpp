// summary.json's program.device_usage, ranks and failing_rank (exec on several devices or ranks)
// written and read back.
#include "reports/run/summary_ranks.hpp"

#include "reports/run/summary_fields.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab {

namespace {

using json = nlohmann::ordered_json;

std::optional<int> optional_int(const JsonFields& f, const std::string& key) {
  const std::optional<std::int64_t> value = f.optional_integer(key);
  if (value && (*value < INT32_MIN || *value > INT32_MAX)) f.fail(key, "a small whole number");
  return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
}

json device_usage_json(const DeviceRun& d) {
  return {{"device", d.index},
          {"uuid", d.uuid},
          {"budget_bytes", d.budget_bytes},
          {"ballast_bytes", d.ballast_bytes},
          {"peak_bytes", d.peak_bytes},
          {"peak_used_bytes", d.peak_used_bytes},
          {"first_bytes", d.first_bytes},
          {"full_at_ms", or_null(d.full_ms)},
          {"events", text_or_null(d.events_file)}};
}

DeviceRun read_device_usage(const JsonFields& d) {
  return {.index = optional_int(d, "device").value_or(0),
          .uuid = d.optional_text("uuid"),
          .budget_bytes = d.optional_count("budget_bytes").value_or(0),
          .ballast_bytes = d.optional_count("ballast_bytes").value_or(0),
          .peak_bytes = d.optional_count("peak_bytes").value_or(0),
          .peak_used_bytes = d.optional_count("peak_used_bytes").value_or(0),
          .first_bytes = d.optional_count("first_bytes").value_or(0),
          .full_ms = d.optional_number("full_at_ms"),
          .events_file = d.optional_text("events")};
}

json rank_json(const RankRun& r) {
  return {{"rank", r.rank},
          {"local_rank", or_null(r.local_rank)},
          {"device", or_null(r.device)},
          {"ran_out", r.ran_out},
          {"oom_at_ms", or_null(r.oom_ms)},
          {"memory_rose_after_oom", or_null(r.memory_rose_after_oom)},
          {"last_lines", r.last_lines}};
}

RankRun read_rank(const JsonFields& r) {
  return {.rank = optional_int(r, "rank").value_or(0),
          .local_rank = optional_int(r, "local_rank"),
          .device = optional_int(r, "device"),
          .ran_out = r.flag("ran_out"),
          .oom_ms = r.optional_number("oom_at_ms"),
          .last_lines = r.texts("last_lines"),
          .memory_rose_after_oom = r.optional_flag("memory_rose_after_oom")};
}

json failing_json(const FailingRank& f) {
  return {{"rank", f.rank},
          {"local_rank", or_null(f.local_rank)},
          {"device", or_null(f.device)},
          {"t_ms", or_null(f.t_ms)},
          {"waiting", f.waiting},
          {"evidence", f.evidence},
          {"verdict", f.verdict}};
}

FailingRank read_failing(const JsonFields& f) {
  FailingRank rank{.rank = optional_int(f, "rank").value_or(0),
                   .local_rank = optional_int(f, "local_rank"),
                   .device = optional_int(f, "device"),
                   .t_ms = f.optional_number("t_ms"),
                   .evidence = f.texts("evidence"),
                   .verdict = f.optional_text("verdict")};
  for (const std::int64_t r : f.integers("waiting"))
    rank.waiting.push_back(static_cast<int>(r));
  return rank;
}

}  // namespace

void add_program_ranks_json(json& program, const ProgramRun& p) {
  json devices = json::array();
  for (const DeviceRun& d : p.device_runs)
    devices.push_back(device_usage_json(d));
  json ranks = json::array();
  for (const RankRun& r : p.ranks)
    ranks.push_back(rank_json(r));
  program["device_usage"] = std::move(devices);
  program["ranks"] = std::move(ranks);
  program["failing_rank"] = p.failing_rank ? failing_json(*p.failing_rank) : json(nullptr);
  program["waiting_ended_after_s"] = or_null(p.waiting_ended_after_s);
}

void read_program_ranks(const JsonFields& program, ProgramRun& p) {
  if (program.has("device_usage")) {
    for (const JsonFields& d : program.objects("device_usage"))
      p.device_runs.push_back(read_device_usage(d));
  }
  if (program.has("ranks")) {
    for (const JsonFields& r : program.objects("ranks"))
      p.ranks.push_back(read_rank(r));
  }
  if (const std::optional<JsonFields> f = program.optional_object("failing_rank"))
    p.failing_rank = read_failing(*f);
  p.waiting_ended_after_s = program.optional_number("waiting_ended_after_s");
}

}  // namespace oomlab
