// summary.json's "program" (how a program run by `exec` ended and what its memory did) and
// "model" (what the model of PyTorch's allocator said of its snapshot), written and read back.
#include "reports/run/summary_fields.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/run/summary_ranks.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

int small_int(const JsonFields& f, const std::string& key, int fallback) {
  const std::optional<std::int64_t> value = f.optional_integer(key);
  if (value && (*value < INT32_MIN || *value > INT32_MAX)) f.fail(key, "a small whole number");
  return value ? static_cast<int>(*value) : fallback;
}

json model_row_json(const ModelRow& r) {
  return {{"setting", r.setting},
          {"alloc_conf", r.settings},
          {"as_ran", r.as_ran},
          {"fraction_cap", r.fraction_cap},
          {"approximate", r.approximate},
          {"completes_at_budget", r.completes_at_budget},
          {"first_failure_index", or_null(r.first_failure_index)},
          {"model_frontier_bytes", or_null(r.model_frontier_bytes)},
          {"frontier_bytes", or_null(r.frontier_bytes)}};
}

ModelRow read_model_row(const JsonFields& r) {
  ModelRow row;
  row.setting = r.text("setting");
  row.settings = r.optional_text("alloc_conf");
  row.fraction_cap = r.flag("fraction_cap");
  row.approximate = r.flag("approximate");
  row.completes_at_budget = r.flag("completes_at_budget");
  row.first_failure_index = r.optional_count("first_failure_index");
  row.as_ran = r.flag("as_ran");
  row.model_frontier_bytes = r.optional_count("model_frontier_bytes");
  row.frontier_bytes = r.optional_count("frontier_bytes");
  return row;
}

json remedy_check_json(const std::optional<RemedyCheck>& c) {
  if (!c) return nullptr;
  return {{"setting", c->setting},
          {"alloc_conf", c->settings},
          {"replaced", text_or_null(c->replaced)},
          {"outcome", to_string(c->outcome)},
          {"held", c->held},
          {"line", c->line},
          {"allocator_cap_bytes", or_null(c->allocator_cap_bytes)},
          {"memory_fraction", c->allocator_cap_bytes ? json(c->memory_fraction) : json(nullptr)},
          {"duration_ms", c->duration_ms},
          {"summary", c->summary}};
}

RemedyCheck read_remedy_check(const JsonFields& c) {
  return {.setting = c.optional_text("setting"),
          .settings = c.optional_text("alloc_conf"),
          .replaced = c.optional_text("replaced"),
          .allocator_cap_bytes = c.optional_count("allocator_cap_bytes"),
          .memory_fraction = c.optional_number("memory_fraction").value_or(0),
          .outcome = named(c, "outcome", kSummaryOutcomes),
          .held = c.flag("held"),
          .line = c.optional_text("line"),
          .duration_ms = c.optional_number("duration_ms").value_or(0),
          .summary = c.optional_text("summary")};
}

json library_oom_json(const std::optional<LibraryOom>& l) {
  if (!l) return nullptr;
  return {{"library", l->library},
          {"entry", l->entry},
          {"allocated_bytes", l->allocated_bytes},
          {"cached_free_bytes", l->cached_free_bytes}};
}

LibraryOom read_library_oom(const JsonFields& l) {
  return {.library = l.optional_text("library"),
          .entry = l.count("entry"),
          .allocated_bytes = l.count("allocated_bytes"),
          .cached_free_bytes = l.count("cached_free_bytes")};
}

json frameworks_json(const std::vector<FrameworkSeen>& frameworks) {
  json out = json::array();
  for (const FrameworkSeen& f : frameworks) {
    out.push_back(
        {{"name", f.name}, {"version", f.version}, {"allocator_settings", f.allocator_settings}});
  }
  return out;
}

}  // namespace

std::vector<FrameworkSeen> read_frameworks(const JsonFields& program) {
  std::vector<FrameworkSeen> frameworks;
  if (!program.has("frameworks")) return frameworks;
  for (const JsonFields& f : program.objects("frameworks")) {
    frameworks.push_back({.name = f.text("name"),
                          .version = f.optional_text("version"),
                          .allocator_settings = f.optional_text("allocator_settings")});
  }
  return frameworks;
}

json program_json(const ProgramRun& p, const std::filesystem::path& folder) {
  json snapshots = json::array();
  for (const std::filesystem::path& file : p.snapshots)
    snapshots.push_back(run_file(file, folder));
  json program = {{"command", p.command},
                  {"devices", p.devices},
                  {"exit_code", p.exit_code},
                  {"signal", p.signal},
                  {"killed", p.killed},
                  {"leftovers_ended", p.leftovers_ended},
                  {"peak_bytes", p.peak_bytes},
                  {"peak_used_bytes", p.peak_used_bytes},
                  {"first_bytes", p.first_bytes},
                  {"usage_source", p.usage_source},
                  {"samples", p.samples},
                  {"interval_ms", p.interval_ms},
                  {"oom_lines", p.oom_lines},
                  {"last_lines", p.last_lines},
                  {"stdout", text_or_null(p.stdout_file)},
                  {"stderr", text_or_null(p.stderr_file)},
                  {"snapshots", snapshots},
                  {"snapshot_note", text_or_null(p.snapshot_note)},
                  {"model_notes", p.model_notes},
                  {"frameworks", frameworks_json(p.frameworks)}};
  add_program_ranks_json(program, p);
  return program;
}

ProgramRun read_program(const JsonFields& program, const std::filesystem::path& folder) {
  ProgramRun p;
  p.command = program.texts("command");
  for (const std::int64_t d : program.integers("devices"))
    p.devices.push_back(static_cast<int>(d));
  p.exit_code = small_int(program, "exit_code", -1);
  p.signal = small_int(program, "signal", 0);
  p.killed = program.flag("killed");
  p.leftovers_ended = static_cast<unsigned>(program.optional_count("leftovers_ended").value_or(0));
  p.peak_bytes = program.optional_count("peak_bytes").value_or(0);
  p.peak_used_bytes = program.optional_count("peak_used_bytes").value_or(0);
  p.first_bytes = program.optional_count("first_bytes").value_or(0);
  p.usage_source = program.optional_text("usage_source");
  p.samples = program.optional_count("samples").value_or(0);
  p.interval_ms = program.optional_number("interval_ms").value_or(0);
  p.last_lines = program.texts("last_lines");
  p.oom_lines = program.optional_count("oom_lines").value_or(0);
  p.stdout_file = program.optional_text("stdout");
  p.stderr_file = program.optional_text("stderr");
  for (const std::string& name : program.texts("snapshots"))
    p.snapshots.push_back(from_run_file(name, folder));
  p.snapshot_note = program.optional_text("snapshot_note");
  p.model_notes = program.texts("model_notes");
  p.frameworks = read_frameworks(program);
  read_program_ranks(program, p);
  return p;
}

json model_json(const ProgramModel& m, const std::filesystem::path& folder) {
  json rows = json::array();
  for (const ModelRow& r : m.whatif)
    rows.push_back(model_row_json(r));
  return {{"snapshot", run_file(m.snapshot, folder)},
          {"device", or_null(m.device)},
          {"program_entry", or_null(m.program_entry)},
          {"reproduced_entry", or_null(m.reproduced_entry)},
          {"reproduced", m.reproduced()},
          {"library_oom", library_oom_json(m.library_oom)},
          {"reproduction", m.reproduction},
          {"outside_allocator_bytes", m.outside_allocator_bytes},
          {"outside_measured", m.outside_measured},
          {"owner", text_or_null(m.owner)},
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

ProgramModel read_model(const JsonFields& model, const std::filesystem::path& folder) {
  ProgramModel m;
  m.snapshot = from_run_file(model.optional_text("snapshot"), folder);
  if (model.has("device")) m.device = small_int(model, "device", 0);
  m.program_entry = model.optional_count("program_entry");
  m.reproduced_entry = model.optional_count("reproduced_entry");
  if (const std::optional<JsonFields> library = model.optional_object("library_oom"))
    m.library_oom = read_library_oom(*library);
  m.reproduction = model.optional_text("reproduction");
  m.outside_allocator_bytes = model.count("outside_allocator_bytes");
  m.outside_measured = model.optional_text("outside_measured");
  m.owner = model.optional_text("owner");
  m.process_bytes = model.optional_count("process_bytes").value_or(0);
  m.allocator_reserved_bytes = model.optional_count("allocator_reserved_bytes").value_or(0);
  m.budget_bytes = model.optional_count("budget_bytes").value_or(0);
  m.lower_bound = model.flag("lower_bound");
  if (model.has("whatif")) {
    for (const JsonFields& r : model.objects("whatif"))
      m.whatif.push_back(read_model_row(r));
  }
  m.advice = model.optional_text("advice");
  const std::string advised = model.optional_text("advised_setting");
  for (std::size_t i = 0; i < m.whatif.size() && !advised.empty() && !m.advised; ++i) {
    if (m.whatif[i].setting == advised) m.advised = i;
  }
  if (!advised.empty() && !m.advised)
    model.fail("advised_setting", fmt::format("a setting of 'whatif', not '{}'", advised));
  m.caveats = model.texts("caveats");
  m.notes = model.texts("notes");
  if (const std::optional<JsonFields> check = model.optional_object("remedy_check"))
    m.remedy_check = read_remedy_check(*check);
  m.duration_ms = model.optional_number("duration_ms").value_or(0);
  return m;
}

}  // namespace oomlab
