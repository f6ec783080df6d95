// summary.json's "oom": the OOM record written and read back, with a framework's cache state, a
// replay's frames and largest blocks, a program's own message and the settings checked.
#include <fmt/format.h>

#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "reports/run/summary_fields.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

constexpr std::array kCauses = {Cause::capacity, Cause::fragmentation, Cause::leak,
                                Cause::external_pressure, Cause::transient};

json leak_json(const LeakFit& leak) {
  return {{"samples", leak.samples},
          {"bytes_per_step", leak.bytes_per_step},
          {"intercept_bytes", leak.intercept_bytes},
          {"r_squared", leak.r_squared},
          {"detected", leak.detected},
          {"predicted_oom_step", or_null(leak.predicted_oom_step)}};
}

LeakFit read_leak(const JsonFields& oom) {
  const std::optional<JsonFields> leak = oom.optional_object("leak");
  if (!leak) return {};
  return {.samples = leak->optional_count("samples").value_or(0),
          .bytes_per_step = leak->optional_number("bytes_per_step").value_or(0),
          .intercept_bytes = leak->optional_number("intercept_bytes").value_or(0),
          .r_squared = leak->optional_number("r_squared").value_or(0),
          .detected = leak->flag("detected"),
          .predicted_oom_step = leak->optional_number("predicted_oom_step")};
}

// A framework's own account of the failure (its out-of-memory error), where a model of its
// caching allocator kept one.
json cache_json(const OomRecord& oom) {
  const CacheState& c = *oom.cache;
  const CacheWords* words = Registry::global().cache_words(c.framework);
  const std::string backend = words == nullptr ? (c.pool ? "pool" : "cache")
                              : c.pool         ? words->pool_backend
                                               : words->cache_backend;
  return {{"allocated_bytes", c.allocated_bytes},
          {"reserved_bytes", c.reserved_bytes},
          {"reserved_unallocated_bytes",
           c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0},
          // What the framework says it tried: the device request that failed, else the program's.
          {"tried_to_allocate_bytes",
           c.failed_device_bytes != 0 ? c.failed_device_bytes : oom.request_bytes},
          {"allowed_bytes", c.allowed_bytes != 0 ? json(c.allowed_bytes) : json(nullptr)},
          {"backend", backend},
          {"message", cache_message(oom)},
          {"failed_device_bytes", c.failed_device_bytes},
          {"failed_request_bytes", c.failed_request_bytes}};
}

// Each framework that words a cache's state has its key in every record (null: not its cache).
void add_cache_json(json& out, const OomRecord& oom) {
  bool written = false;
  for (const Framework& f : Registry::global().frameworks()) {
    if (!f.cache_words) continue;
    const bool its = oom.cache && oom.cache->framework == f.cache_words->key;
    out[f.cache_words->key] = its ? cache_json(oom) : json(nullptr);
    written = written || its;
  }
  if (oom.cache && !written) out[oom.cache->framework] = cache_json(oom);
}

// The cache state back; a summary written before failed_device_bytes had its own field says it
// only through tried_to_allocate_bytes, which is the program's request when there was none.
std::optional<CacheState> read_cache(const JsonFields& oom, std::uint64_t request_bytes) {
  // Which framework's: the first whose key the record has an object under.
  std::string key;
  for (const Framework& f : Registry::global().frameworks()) {
    if (f.cache_words && oom.optional_object(f.cache_words->key)) {
      key = f.cache_words->key;
      break;
    }
  }
  if (key.empty()) return std::nullopt;
  const std::optional<JsonFields> p = oom.optional_object(key);
  const std::string backend = p->optional_text("backend");
  const CacheWords& words = *Registry::global().cache_words(key);
  if (!backend.empty() && backend != words.cache_backend && backend != words.pool_backend) {
    p->fail("backend",
            fmt::format("{} or {}, not '{}'", words.cache_backend, words.pool_backend, backend));
  }
  const std::uint64_t tried = p->optional_count("tried_to_allocate_bytes").value_or(0);
  return CacheState{
      .framework = key,
      .allocated_bytes = p->count("allocated_bytes"),
      .reserved_bytes = p->count("reserved_bytes"),
      .failed_device_bytes =
          p->optional_count("failed_device_bytes").value_or(tried != request_bytes ? tried : 0),
      .failed_request_bytes = p->optional_count("failed_request_bytes").value_or(0),
      .allowed_bytes = p->optional_count("allowed_bytes").value_or(0),
      .pool = backend == words.pool_backend};
}

json largest_live_json(const std::vector<ProgramBlock>& blocks) {
  json out = json::array();
  for (const ProgramBlock& b : blocks)
    out.push_back({{"bytes", b.bytes}, {"trace_index", b.trace_index}, {"frames", b.frames}});
  return out;
}

json holders_json(const std::vector<trace::MemoryHolder>& holders) {
  json out = json::array();
  for (const trace::MemoryHolder& h : holders)
    out.push_back({{"where", h.where}, {"bytes", h.bytes}, {"blocks", h.blocks}});
  return out;
}

std::vector<trace::MemoryHolder> read_holders(const JsonFields& oom) {
  std::vector<trace::MemoryHolder> holders;
  if (!oom.has("holders")) return holders;  // summaries written before it existed
  for (const JsonFields& h : oom.objects("holders")) {
    holders.push_back(
        {.where = h.text("where"), .bytes = h.count("bytes"), .blocks = h.count("blocks")});
  }
  return holders;
}

std::vector<ProgramBlock> read_largest_live(const JsonFields& oom) {
  std::vector<ProgramBlock> blocks;
  if (!oom.has("largest_live")) return blocks;  // summaries written before it existed
  for (const JsonFields& b : oom.objects("largest_live")) {
    blocks.push_back({.bytes = b.count("bytes"),
                      .trace_index = b.optional_count("trace_index").value_or(0),
                      .frames = b.texts("frames")});
  }
  return blocks;
}

// exec: the program's own OOM message and what it carried.
json program_message_json(const std::optional<ProgramMessage>& m) {
  if (!m) return nullptr;
  json out = {{"framework", m->framework},
              {"line", m->line},
              {"process_used_bytes", or_null(m->process_used_bytes)},
              {"framework_allocated_bytes", or_null(m->framework_allocated_bytes)},
              {"framework_cached_free_bytes", or_null(m->framework_cached_free_bytes)},
              {"device_free_bytes", or_null(m->device_free_bytes)},
              {"sizing_setting", text_or_null(m->sizing_setting)},
              {"lines_seen", m->lines_seen},
              {"library", m->library}};
  // A pool's own limit and largest free piece, only where the message gave them.
  if (m->framework_limit_bytes) out["framework_limit_bytes"] = *m->framework_limit_bytes;
  if (m->framework_largest_free_bytes)
    out["framework_largest_free_bytes"] = *m->framework_largest_free_bytes;
  return out;
}

std::optional<ProgramMessage> read_program_message(const JsonFields& oom) {
  const std::optional<JsonFields> m = oom.optional_object("program");
  if (!m) return std::nullopt;
  return ProgramMessage{
      .framework = m->optional_text("framework"),
      .line = m->optional_text("line"),
      .process_used_bytes = m->optional_count("process_used_bytes"),
      .framework_allocated_bytes = m->optional_count("framework_allocated_bytes"),
      .framework_cached_free_bytes = m->optional_count("framework_cached_free_bytes"),
      .framework_limit_bytes = m->optional_count("framework_limit_bytes"),
      .framework_largest_free_bytes = m->optional_count("framework_largest_free_bytes"),
      .device_free_bytes = m->optional_count("device_free_bytes"),
      .sizing_setting = m->optional_text("sizing_setting"),
      .lines_seen = m->optional_count("lines_seen").value_or(0),
      .library = m->flag("library")};
}

// Each setting of PyTorch's allocator replayed at the run's budget; null when none was.
json remedies_json(const std::vector<SettingAnswer>& checks) {
  if (checks.empty()) return nullptr;
  json out = json::array();
  for (const SettingAnswer& c : checks) {
    out.push_back({{"setting", c.setting},
                   {"alloc_conf", c.settings},
                   {"completes_at_budget", c.completes_at_budget},
                   {"first_failure_index", or_null(c.first_failure_index)}});
  }
  return out;
}

std::vector<SettingAnswer> read_remedies(const JsonFields& oom) {
  std::vector<SettingAnswer> checks;
  if (!oom.has("remedies")) return checks;
  for (const JsonFields& c : oom.objects("remedies")) {
    SettingAnswer& answer = checks.emplace_back();
    answer.setting = c.text("setting");
    answer.settings = c.optional_text("alloc_conf");
    answer.completes_at_budget = c.flag("completes_at_budget");
    answer.first_failure_index = c.optional_count("first_failure_index");
  }
  return checks;
}

Diagnosis read_diagnosis(const JsonFields& oom) {
  return {.cause = named(oom, "cause", kCauses),
          .free_bytes = oom.optional_count("free_bytes").value_or(0),
          .fragmentation = oom.optional_number("fragmentation"),
          .external_bytes = oom.optional_count("external_bytes").value_or(0),
          .footprint_bytes = oom.optional_count("footprint_bytes"),
          .evidence = oom.optional_text("evidence"),
          .advice = oom.optional_text("advice")};
}

}  // namespace

std::string cache_message(const OomRecord& oom) {
  if (!oom.cache) return "";
  const CacheWords* words = Registry::global().cache_words(oom.cache->framework);
  if (words == nullptr || words->message == nullptr) return "";
  return words->message(*oom.cache, oom.request_bytes, oom.device_free_bytes,
                        oom.device_total_bytes);
}

std::string oom_where(const OomRecord& oom) {
  return oom.trace_entry ? fmt::format("trace entry {}", format_count(*oom.trace_entry))
                         : fmt::format("event {}", format_count(oom.event));
}

json oom_json(const OomRecord& oom) {
  const Diagnosis& d = oom.diagnosis;
  json out = {{"event", oom.event},
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
              {"footprint_bytes", or_null(d.footprint_bytes)},
              {"evidence", d.evidence},
              {"leak", leak_json(oom.leak)}};
  add_cache_json(out, oom);
  // A backend that takes memory in pieces other than the device's page says so (the largest
  // free block's resolution); the page is said by its absence, as records before it had it.
  if (oom.granularity_bytes != kDevicePageBytes) out["granularity_bytes"] = oom.granularity_bytes;
  const json replayed = {{"trace_entry", or_null(oom.trace_entry)},
                         {"trace_line", or_null(oom.trace_line)},
                         {"frames", oom.frames},
                         {"frames_from", text_or_null(oom.frames_from)},
                         {"user_frame", text_or_null(oom.user_frame)},
                         {"user_line", text_or_null(oom.user_line)},
                         {"largest_live", largest_live_json(oom.largest_live)},
                         {"holders", holders_json(oom.holders)},
                         {"program", program_message_json(oom.program)},
                         {"remedies", remedies_json(oom.remedies)}};
  for (const auto& [key, value] : replayed.items())
    out[key] = value;
  return out;
}

OomRecord read_oom(const JsonFields& oom) {
  OomRecord o;
  o.event = oom.count("event");
  o.step = oom.optional_count("step").value_or(0);
  o.phase = oom.optional_text("phase");
  o.t_ms = oom.optional_number("t_ms").value_or(0);
  o.request_bytes = oom.count("request_bytes");
  o.request_label = oom.optional_text("request_label");
  o.live_bytes = oom.count("live_bytes");
  o.live_count = oom.optional_count("live_count").value_or(0);
  o.reserved_bytes = oom.count("reserved_bytes");
  o.allocator_used_bytes = oom.optional_count("allocator_used_bytes").value_or(0);
  o.device_free_bytes = oom.optional_count("device_free_bytes").value_or(0);
  o.device_total_bytes = oom.optional_count("device_total_bytes").value_or(0);
  o.largest_free_bytes = oom.optional_count("largest_free_bytes");
  o.granularity_bytes = oom.optional_count("granularity_bytes").value_or(kDevicePageBytes);
  if (o.granularity_bytes == 0) oom.fail("granularity_bytes", "a size of at least one byte");
  o.diagnosis = read_diagnosis(oom);
  o.cache = read_cache(oom, o.request_bytes);
  o.trace_entry = oom.optional_count("trace_entry");
  o.trace_line = oom.optional_count("trace_line");
  o.frames = oom.texts("frames");
  o.frames_from = oom.optional_text("frames_from");
  o.user_frame = oom.optional_text("user_frame");
  o.user_line = oom.optional_text("user_line");
  o.largest_live = read_largest_live(oom);
  o.holders = read_holders(oom);
  o.program = read_program_message(oom);
  o.remedies = read_remedies(oom);
  o.source = oom.optional_text("source");
  if (oom.has("error")) o.error = oom.text("error");
  o.leak = read_leak(oom);
  return o;
}

}  // namespace oomlab
