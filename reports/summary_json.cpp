#include "reports/summary_json.hpp"

#include <cmath>

#include "exec/remedy_check.hpp"
#include "oomlab/version.hpp"
#include "reports/json_values.hpp"
#include "reports/program_ranks.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

struct ParamToJson {
  json operator()(Bytes b) const { return b.value; }
  json operator()(std::int64_t i) const { return i; }
  json operator()(double d) const { return d; }
  json operator()(Fraction f) const { return format_fraction(f); }
  json operator()(bool b) const { return b; }
  json operator()(const std::string& s) const { return s; }
  json operator()(const ChoiceList& list) const { return list; }
};

json leak_json(const LeakFit& leak) {
  return {{"samples", leak.samples},
          {"bytes_per_step", leak.bytes_per_step},
          {"r_squared", leak.r_squared},
          {"detected", leak.detected},
          {"predicted_oom_step", or_null(leak.predicted_oom_step)}};
}

// PyTorch's own account of the failure (its OutOfMemoryError), where a caching allocator kept one.
json pytorch_json(const OomRecord& oom) {
  if (!oom.cache) return nullptr;
  const CacheState& c = *oom.cache;
  return {{"allocated_bytes", c.allocated_bytes},
          {"reserved_bytes", c.reserved_bytes},
          {"reserved_unallocated_bytes",
           c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0},
          // What PyTorch says it tried: the device request that failed, else the program's.
          {"tried_to_allocate_bytes",
           c.failed_device_bytes != 0 ? c.failed_device_bytes : oom.request_bytes},
          {"allowed_bytes", c.allowed_bytes != 0 ? json(c.allowed_bytes) : json(nullptr)},
          {"backend", c.async_backend ? "async" : "native"},
          {"message", pytorch_oom_message(c, oom.request_bytes, oom.device_free_bytes,
                                          oom.device_total_bytes)}};
}

json largest_live_json(const std::vector<ProgramBlock>& blocks) {
  json out = json::array();
  for (const ProgramBlock& b : blocks)
    out.push_back({{"bytes", b.bytes}, {"trace_index", b.trace_index}, {"frames", b.frames}});
  return out;
}

// exec: the program's own OOM message and what it carried.
json program_message_json(const std::optional<ProgramMessage>& m) {
  if (!m) return nullptr;
  return {{"framework", m->framework},
          {"line", m->line},
          {"process_used_bytes", or_null(m->process_used_bytes)},
          {"framework_allocated_bytes", or_null(m->framework_allocated_bytes)},
          {"framework_cached_free_bytes", or_null(m->framework_cached_free_bytes)},
          {"device_free_bytes", or_null(m->device_free_bytes)},
          {"sizing_setting", m->sizing_setting.empty() ? json(nullptr) : json(m->sizing_setting)},
          {"lines_seen", m->lines_seen}};
}

// A file the run wrote: relative to the run folder when it is in it, else as it is.
std::string run_file(const std::filesystem::path& file, const std::filesystem::path& folder) {
  if (!folder.empty()) {
    std::error_code ec;
    const std::filesystem::path relative = std::filesystem::relative(file, folder, ec);
    if (!ec && !relative.empty() && *relative.begin() != "..") return relative.string();
  }
  return file.string();
}

// exec: how the program ended and what its memory did.
json program_json(const ProgramRun& p, const std::filesystem::path& folder) {
  json snapshots = json::array();
  for (const std::filesystem::path& file : p.snapshots)
    snapshots.push_back(run_file(file, folder));
  json program = {
      {"command", p.command},
      {"devices", p.devices},
      {"exit_code", p.exit_code},
      {"signal", p.signal},
      {"killed", p.killed},
      {"leftovers_ended", p.leftovers_ended},
      {"peak_bytes", p.peak_bytes},
      {"first_bytes", p.first_bytes},
      {"usage_source", p.usage_source},
      {"samples", p.samples},
      {"interval_ms", p.interval_ms},
      {"oom_lines", p.oom_lines},
      {"last_lines", p.last_lines},
      {"stdout", p.stdout_file.empty() ? json(nullptr) : json(p.stdout_file)},
      {"stderr", p.stderr_file.empty() ? json(nullptr) : json(p.stderr_file)},
      {"snapshots", snapshots},
      {"snapshot_note", p.snapshot_note.empty() ? json(nullptr) : json(p.snapshot_note)}};
  add_program_ranks_json(program, p);
  return program;
}

// Each setting of PyTorch's allocator replayed at the run's budget; null when none was.
json remedies_json(const std::vector<SettingCheck>& checks) {
  if (checks.empty()) return nullptr;
  json out = json::array();
  for (const SettingCheck& c : checks) {
    out.push_back({{"setting", c.setting},
                   {"alloc_conf", c.alloc_conf},
                   {"completes_at_budget", c.completes_at_budget},
                   {"first_failure_index", or_null(c.first_failure_index)}});
  }
  return out;
}

json oom_json(const OomRecord& oom) {
  const Diagnosis& d = oom.diagnosis;
  return {{"event", oom.event},
          {"step", oom.step},
          {"phase", oom.phase},
          {"t_ms", oom.t_ms},
          {"request_bytes", oom.request_bytes},
          {"live_bytes", oom.live_bytes},
          {"live_count", oom.live_count},
          {"reserved_bytes", oom.reserved_bytes},
          {"device_free_bytes", oom.device_free_bytes},
          {"device_total_bytes", oom.device_total_bytes},
          {"largest_free_bytes", or_null(oom.largest_free_bytes)},
          {"fragmentation", or_null(d.fragmentation)},
          {"cause", to_string(d.cause)},
          {"source", oom.source},
          {"error", or_null(oom.error)},
          {"advice", d.advice},
          // Beyond the v1 minimum:
          {"request_label", oom.request_label},
          {"allocator_used_bytes", oom.allocator_used_bytes},
          {"free_bytes", d.free_bytes},
          {"external_bytes", d.external_bytes},
          {"evidence", d.evidence},
          {"leak", leak_json(oom.leak)},
          {"pytorch", pytorch_json(oom)},
          {"trace_entry", or_null(oom.trace_entry)},
          {"trace_line", or_null(oom.trace_line)},
          {"frames", oom.frames},
          {"largest_live", largest_live_json(oom.largest_live)},
          {"program", program_message_json(oom.program)},
          {"remedies", remedies_json(oom.remedies)}};
}

json metrics_json(const std::vector<std::pair<std::string, double>>& metrics) {
  json out = json::object();
  for (const auto& [name, value] : metrics) {
    if (std::isnan(value)) {  // no value: a replay's first_failure_line for a binary trace
      out[name] = nullptr;
      continue;
    }
    // Counts and sizes are integers in JSON (docs/outputs.md: "Sizes are integers in bytes").
    const bool integral = value == std::floor(value) && std::fabs(value) < 9.0e15;
    out[name] = integral ? json(static_cast<std::int64_t>(value)) : json(value);
  }
  return out;
}

json model_row_json(const ModelRow& r) {
  return {{"setting", r.setting},
          {"alloc_conf", r.alloc_conf},
          {"as_ran", r.as_ran},
          {"fraction_cap", r.fraction_cap},
          {"approximate", r.approximate},
          {"completes_at_budget", r.completes_at_budget},
          {"first_failure_index", or_null(r.first_failure_index)},
          {"model_frontier_bytes", or_null(r.model_frontier_bytes)},
          {"frontier_bytes", or_null(r.frontier_bytes)}};
}

json remedy_check_json(const std::optional<RemedyCheck>& c) {
  if (!c) return nullptr;
  return {{"setting", c->setting},
          {"alloc_conf", c->alloc_conf},
          {"replaced", c->replaced.empty() ? json(nullptr) : json(c->replaced)},
          {"outcome", to_string(c->outcome)},
          {"held", c->held},
          {"line", c->line},
          {"duration_ms", c->duration_ms},
          {"summary", remedy_check_line(*c)}};
}

}  // namespace

json model_json(const ProgramModel& m, const std::filesystem::path& folder) {
  json rows = json::array();
  for (const ModelRow& r : m.whatif)
    rows.push_back(model_row_json(r));
  return {{"snapshot", run_file(m.snapshot, folder)},
          {"device", or_null(m.device)},
          {"program_entry", or_null(m.program_entry)},
          {"reproduced_entry", or_null(m.reproduced_entry)},
          {"reproduced", m.reproduced()},
          {"reproduction", m.reproduction},
          {"outside_allocator_bytes", m.outside_allocator_bytes},
          {"outside_measured", m.outside_measured},
          {"process_bytes", m.process_bytes},
          {"allocator_reserved_bytes", m.allocator_reserved_bytes},
          {"budget_bytes", m.budget_bytes},
          {"lower_bound", m.lower_bound},
          {"whatif", rows},
          {"advice", m.advice},
          {"advised_setting", m.advised ? json(m.whatif[*m.advised].setting) : json(nullptr)},
          {"caveats", m.caveats},
          {"notes", m.notes},
          {"remedy_check", remedy_check_json(m.remedy_check)},
          {"duration_ms", m.duration_ms}};
}

json params_json(const Params& params) {
  json out = json::object();
  for (const auto& [name, value] : params.values())
    out[name] = std::visit(ParamToJson{}, value);
  return out;
}

json version_json() {
  return {{"version", OOMLAB_VERSION}, {"git", OOMLAB_GIT_SHA}, {"git_dirty", OOMLAB_GIT_DIRTY}};
}

json device_json(const DeviceFacts& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"uuid", d.uuid},
          {"cc", d.compute_capability},
          {"total_bytes", d.total_bytes},
          {"free_bytes", or_null(d.free_bytes)},
          {"nvml_total_bytes", or_null(d.nvml_total_bytes)},
          {"pci_bus_id", d.pci_bus_id},
          {"multiprocessors", d.multiprocessors},
          {"memory_pools", d.memory_pools},
          {"managed_memory", d.managed_memory},
          {"concurrent_managed_access", d.concurrent_managed_access},
          {"vmm_granularity_bytes", d.vmm_granularity}};
}

json environment_json(const Environment& env, const std::optional<DeviceFacts>& device,
                      bool simulated) {
  return {{"device", device ? device_json(*device) : json(nullptr)},
          {"driver", or_null(env.driver_version)},
          {"cuda_driver_api", env.cuda_driver_api},
          {"cuda_runtime", env.cuda_runtime},
          {"simulated", simulated},
          {"host", env.host}};
}

namespace {

// What a run adds beyond the v1 minimum when it has it: its last events (an error or a
// timeout), its trials (a search), and the device memory before and after.
void add_run_details(json& doc, const RunResult& r) {
  if (!r.last_events.empty()) {
    json events = json::array();
    for (const RunResult::RecentEvent& e : r.last_events) {
      events.push_back({{"seq", e.seq},
                        {"op", e.op},
                        {"bytes", e.bytes},
                        {"status", e.status},
                        {"phase", e.phase},
                        {"step", e.step},
                        {"live_bytes", e.live_bytes}});
    }
    doc["last_events"] = std::move(events);
  }
  if (!r.trials.empty()) {
    json trials = json::array();
    for (const TrialSpan& t : r.trials) {
      trials.push_back({{"label", t.label},
                        {"first_event", t.first_event},
                        {"last_event", t.last_event},
                        {"fitted", t.fitted}});
    }
    doc["trials"] = std::move(trials);
  }
  if (r.cleanup) {
    doc["cleanup"] = {
        {"device_free_before", r.cleanup->device_free_before},
        {"device_free_after", r.cleanup->device_free_after},
        {"difference_bytes", r.cleanup->difference()},
        {"other_processes", r.cleanup->other_processes},
        {"not_counted",
         r.cleanup->not_counted.empty() ? json(nullptr) : json(r.cleanup->not_counted)}};
  } else {
    doc["cleanup"] = nullptr;
  }
}

}  // namespace

json summary_json(const RunResult& r, const Invocation& invocation) {
  json oomlab = version_json();
  oomlab["argv"] = invocation.argv;
  json doc = {
      {"schema", kRunSchema},
      {"oomlab", oomlab},
      {"environment", environment_json(r.environment, r.device, r.simulated)},
      {"scenario", {{"name", r.scenario}, {"params", params_json(r.params)}, {"seed", r.seed}}},
      {"allocator", {{"name", r.allocator}, {"options", params_json(r.allocator_options)}}},
      {"budget_bytes", r.budget_bytes},
      {"outcome", to_string(r.outcome)},
      {"oom", r.oom ? oom_json(*r.oom) : json(nullptr)},
      {"peak", {{"live_bytes", r.peak_live_bytes}, {"reserved_bytes", r.peak_reserved_bytes}}},
      {"counts", {{"allocations", r.allocations}, {"frees", r.frees}, {"failed", r.failed}}},
      {"integrity",
       {{"checked", r.integrity_checked},
        {"corrupted", r.integrity_corrupted},
        {"corrupted_words", r.integrity_corrupted_words},
        {"mode", r.simulated ? "not checked: the simulated allocator has no memory"
                             : std::string(to_string(r.verify))}}},
      {"metrics", metrics_json(r.metrics)},
      {"duration_ms", r.duration_ms},
      // Beyond the v1 minimum:
      {"events", r.events},
      {"ballast_bytes", r.ballast_bytes},
      {"cap_bytes", or_null(r.cap_bytes)},
      {"error", r.error_message.empty() ? json(nullptr) : json(r.error_message)},
      {"notices", r.notices},
      {"notes", r.notes},
  };
  if (!invocation.files.empty()) doc["scenario"]["files"] = invocation.files;
  if (r.program) doc["program"] = program_json(*r.program, invocation.folder);
  add_run_details(doc, r);
  if (r.program) {
    doc["model"] =
        r.models.empty() ? json(nullptr) : model_json(r.models.front(), invocation.folder);
    if (r.models.size() > 1) {
      json others = json::array();
      for (std::size_t i = 1; i < r.models.size(); ++i)
        others.push_back(model_json(r.models[i], invocation.folder));
      doc["other_models"] = std::move(others);
    }
  }
  return doc;
}

}  // namespace oomlab
