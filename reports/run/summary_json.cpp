// summary.json's top level written and read back: the run's kind, scenario and allocator, its
// outcome, peaks, counts, integrity, metrics, notices, last events, trials and cleanup (the
// OOM record, the program and the model are summary_oom.cpp's and summary_program.cpp's).
#include "reports/run/summary_json.hpp"

#include <cmath>
#include <limits>

#include "reports/run/summary_fields.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

namespace {

constexpr std::array kVerifyModes = {VerifyMode::off, VerifyMode::sample, VerifyMode::all};
constexpr std::array kKinds = {RunKind::scenario, RunKind::program};

// By name (JSON objects are read in their keys' order); null is a metric without a value.
std::vector<std::pair<std::string, double>> read_metrics(const JsonFields& summary) {
  std::vector<std::pair<std::string, double>> metrics;
  if (!summary.has("metrics")) return metrics;
  const JsonFields object = summary.object("metrics");
  for (const auto& [name, value] : object.raw().items()) {
    metrics.emplace_back(name, value.is_null() ? std::numeric_limits<double>::quiet_NaN()
                                               : *object.optional_number(name));
  }
  return metrics;
}

json last_events_json(const std::vector<RunResult::RecentEvent>& last_events) {
  json events = json::array();
  for (const RunResult::RecentEvent& e : last_events) {
    events.push_back({{"seq", e.seq},
                      {"op", e.op},
                      {"bytes", e.bytes},
                      {"status", e.status},
                      {"phase", e.phase},
                      {"step", e.step},
                      {"live_bytes", e.live_bytes}});
  }
  return events;
}

std::vector<RunResult::RecentEvent> read_last_events(const JsonFields& summary) {
  std::vector<RunResult::RecentEvent> events;
  if (!summary.has("last_events")) return events;
  for (const JsonFields& e : summary.objects("last_events")) {
    events.push_back({.seq = e.count("seq"),
                      .op = e.optional_text("op"),
                      .bytes = e.optional_count("bytes").value_or(0),
                      .status = e.optional_text("status"),
                      .phase = e.optional_text("phase"),
                      .step = e.optional_count("step").value_or(0),
                      .live_bytes = e.optional_count("live_bytes").value_or(0)});
  }
  return events;
}

json trials_json(const std::vector<TrialSpan>& trials) {
  json out = json::array();
  for (const TrialSpan& t : trials) {
    out.push_back({{"label", t.label},
                   {"first_event", t.first_event},
                   {"last_event", t.last_event},
                   {"fitted", t.fitted}});
  }
  return out;
}

std::vector<TrialSpan> read_trials(const JsonFields& summary) {
  std::vector<TrialSpan> trials;
  if (!summary.has("trials")) return trials;
  for (const JsonFields& t : summary.objects("trials")) {
    trials.push_back({.label = t.text("label"),
                      .first_event = t.count("first_event"),
                      .last_event = t.count("last_event"),
                      .fitted = t.flag("fitted")});
  }
  return trials;
}

json cleanup_json(const std::optional<Cleanup>& c) {
  if (!c) return nullptr;
  return {{"device_free_before", c->device_free_before},
          {"device_free_after", c->device_free_after},
          {"difference_bytes", c->difference()},
          {"other_processes", c->other_processes},
          {"not_counted", text_or_null(c->not_counted)}};
}

std::optional<Cleanup> read_cleanup(const JsonFields& summary) {
  const std::optional<JsonFields> c = summary.optional_object("cleanup");
  if (!c) return std::nullopt;
  return Cleanup{
      .device_free_before = c->count("device_free_before"),
      .device_free_after = c->count("device_free_after"),
      .other_processes = static_cast<unsigned>(c->optional_count("other_processes").value_or(0)),
      .not_counted = c->optional_text("not_counted")};
}

// What a run adds beyond the v1 minimum when it has it: its last events (an error or a
// timeout), its trials (a search), and the device memory before and after.
void add_run_details(json& doc, const RunResult& r) {
  if (!r.last_events.empty()) doc["last_events"] = last_events_json(r.last_events);
  if (!r.trials.empty()) doc["trials"] = trials_json(r.trials);
  doc["cleanup"] = cleanup_json(r.cleanup);
}

// exec: the program, the model of its first snapshot, and the others'.
void add_program(json& doc, const RunResult& r, const std::filesystem::path& folder) {
  doc["program"] = program_json(*r.program, folder);
  add_run_details(doc, r);
  doc["model"] = r.models.empty() ? json(nullptr) : model_json(r.models.front(), folder);
  if (r.models.size() > 1) {
    json others = json::array();
    for (std::size_t i = 1; i < r.models.size(); ++i)
      others.push_back(model_json(r.models[i], folder));
    doc["other_models"] = std::move(others);
  }
}

void read_program_run(const JsonFields& summary, const std::filesystem::path& folder,
                      RunResult& r) {
  r.program =
      summary.has("program") ? read_program(summary.object("program"), folder) : ProgramRun{};
  if (const std::optional<JsonFields> model = summary.optional_object("model"))
    r.models.push_back(read_model(*model, folder));
  if (summary.has("other_models")) {
    for (const JsonFields& model : summary.objects("other_models"))
      r.models.push_back(read_model(model, folder));
  }
  // Written before a program run had its own fields: its peaks in "peak".
  if (const std::optional<JsonFields> peak = summary.optional_object("peak");
      peak && !summary.raw().contains("kind")) {
    r.program->peak_used_bytes = peak->optional_count("reserved_bytes").value_or(0);
  }
}

// The environment's fields summary.json holds (its device and whether it was simulated too).
void read_environment_into(const JsonFields& summary, RunResult& r) {
  const JsonFields env = summary.object("environment");
  if (env.has("driver")) r.environment.driver_version = env.text("driver");
  r.environment.cuda_driver_api =
      static_cast<int>(env.optional_integer("cuda_driver_api").value_or(0));
  r.environment.cuda_runtime = static_cast<int>(env.optional_integer("cuda_runtime").value_or(0));
  r.environment.host = env.optional_text("host");
  r.simulated = env.flag("simulated");
  if (const std::optional<JsonFields> device = env.optional_object("device"))
    r.device = read_device(*device);
}

void read_integrity(const JsonFields& summary, RunResult& r) {
  const std::optional<JsonFields> integrity = summary.optional_object("integrity");
  if (!integrity) return;
  r.integrity_checked = integrity->optional_count("checked").value_or(0);
  r.integrity_corrupted = integrity->optional_count("corrupted").value_or(0);
  r.integrity_corrupted_words = integrity->optional_count("corrupted_words").value_or(0);
  const std::string mode = integrity->optional_text("mode");
  // On the sim the mode is a sentence: nothing was checked.
  if (!mode.empty() && !r.simulated) r.verify = named(*integrity, "mode", kVerifyModes);
}

// The top level's counts and figures.
void read_figures(const JsonFields& summary, RunResult& r) {
  r.budget_bytes = summary.count("budget_bytes");
  r.ballast_bytes = summary.optional_count("ballast_bytes").value_or(0);
  r.cap_bytes = summary.optional_count("cap_bytes");
  if (const std::optional<JsonFields> peak = summary.optional_object("peak"); peak && !r.program) {
    r.peak_live_bytes = peak->optional_count("live_bytes").value_or(0);
    r.peak_reserved_bytes = peak->optional_count("reserved_bytes").value_or(0);
  }
  if (const std::optional<JsonFields> counts = summary.optional_object("counts")) {
    r.allocations = counts->optional_count("allocations").value_or(0);
    r.frees = counts->optional_count("frees").value_or(0);
    r.failed = counts->optional_count("failed").value_or(0);
  }
  r.events = summary.optional_count("events").value_or(0);
  r.duration_ms = summary.optional_number("duration_ms").value_or(0);
  r.metrics = read_metrics(summary);
}

}  // namespace

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

std::string_view to_string(RunKind kind) {
  return kind == RunKind::program ? "program" : "scenario";
}

json summary_json(const RunResult& r, const Invocation& invocation) {
  json oomlab = version_json();
  oomlab["argv"] = invocation.argv;
  const bool program = r.is_program();
  json scenario = {{"name", r.scenario}, {"params", params_json(r.params)}, {"seed", r.seed}};
  if (!invocation.files.empty()) scenario["files"] = invocation.files;
  json doc = {
      {"schema", kRunSchema},
      {"kind", to_string(program ? RunKind::program : RunKind::scenario)},
      {"oomlab", oomlab},
      {"environment", environment_json(r.environment, r.device, r.simulated)},
      {"scenario", program ? json(nullptr) : scenario},
      {"allocator",
       program ? json(nullptr)
               : json{{"name", r.allocator}, {"options", params_json(r.allocator_options)}}},
      {"budget_bytes", r.budget_bytes},
      {"outcome", to_string(r.outcome)},
      {"oom", r.oom ? oom_json(*r.oom) : json(nullptr)},
      {"peak", program ? json(nullptr)
                       : json{{"live_bytes", r.peak_live_bytes},
                              {"reserved_bytes", r.peak_reserved_bytes}}},
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
      {"error", text_or_null(r.error_message)},
      {"events_error", text_or_null(r.events_error)},
      {"notices", r.notices},
      {"notes", r.notes},
  };
  if (program) {
    add_program(doc, r, invocation.folder);
  } else {
    add_run_details(doc, r);
  }
  return doc;
}

RunKind read_run_kind(const JsonFields& summary) {
  if (summary.raw().contains("kind")) return named(summary, "kind", kKinds);
  // Before "kind": an exec claimed scenario "exec" on allocator "exec".
  const std::optional<JsonFields> scenario = summary.optional_object("scenario");
  return scenario && scenario->optional_text("name") == "exec" && summary.has("program")
             ? RunKind::program
             : RunKind::scenario;
}

SummaryParams summary_params(const JsonFields& summary) {
  SummaryParams params;
  if (read_run_kind(summary) == RunKind::program) return params;
  const JsonFields scenario = summary.object("scenario");
  if (scenario.has("params")) params.scenario = scenario.object("params").raw();
  const JsonFields allocator = summary.object("allocator");
  if (allocator.has("options")) params.allocator = allocator.object("options").raw();
  return params;
}

RunResult read_summary(const JsonFields& summary, const std::filesystem::path& folder) {
  if (summary.optional_text("schema") != kRunSchema) {
    summary.fail("schema", fmt::format("\"{}\" (a run's summary.json)", kRunSchema));
  }
  RunResult r;
  read_environment_into(summary, r);
  if (read_run_kind(summary) == RunKind::program) {
    read_program_run(summary, folder, r);
  } else {
    const JsonFields scenario = summary.object("scenario");
    r.scenario = scenario.text("name");
    r.seed = scenario.optional_count("seed").value_or(0);
    r.allocator = summary.object("allocator").text("name");
  }
  r.outcome = named(summary, "outcome", kSummaryOutcomes);
  if (const std::optional<JsonFields> oom = summary.optional_object("oom")) r.oom = read_oom(*oom);
  read_figures(summary, r);
  read_integrity(summary, r);
  r.error_message = summary.optional_text("error");
  r.events_error = summary.optional_text("events_error");
  r.notices = summary.texts("notices");
  r.notes = summary.texts("notes");
  r.last_events = read_last_events(summary);
  r.trials = read_trials(summary);
  r.cleanup = read_cleanup(summary);
  return r;
}

}  // namespace oomlab
