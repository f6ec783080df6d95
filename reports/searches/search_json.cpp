#include "reports/searches/search_json.hpp"

#include <algorithm>

#include "allocators/backends.hpp"
#include "device/cards.hpp"
#include "exec/exec_run.hpp"
#include "record/formats.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/json_values.hpp"

namespace oomlab {

namespace {

using json = nlohmann::ordered_json;

json cause_json(const std::optional<Cause>& cause) {
  return cause ? json(to_string(*cause)) : json(nullptr);
}

bool is_program(const SearchSubject& s) {
  return !s.command.empty();
}

json scenario_json(const SearchSubject& s) {
  if (is_program(s)) return {{"name", "exec"}, {"params", {{"command", command_line(s.command)}}}};
  return {{"name", s.scenario}, {"params", params_json(s.params)}, {"seed", s.seed}};
}

json allocator_json(const SearchSubject& s) {
  return {{"name", s.allocator},
          {"options", is_program(s) ? json::object() : params_json(s.allocator_options)}};
}

// A budget search's trial: its budget first, a program's own figures after.
json frontier_trial_json(const Trial& t, bool program) {
  json out = {{"budget_bytes", t.budget_bytes},
              {"outcome", to_string(t.outcome)},
              {"cause", cause_json(t.cause)},
              {"duration_ms", t.seconds * 1e3}};
  if (program) {
    out["peak_bytes"] = t.peak_bytes;
    out["used_bytes"] = t.used_bytes;
    out["exit_code"] = t.exit_code;
    out["oom_line"] = t.message;
    out["confirm"] = t.role == TrialRole::confirm;
    if (!t.library.empty()) out["library"] = t.library;
  }
  out["role"] = to_string(t.role);
  out["verifies_prediction"] = t.verifies_prediction;
  return out;
}

json fit_trial_json(const Trial& t, bool program) {
  json out = {{"value", t.value},
              {"outcome", to_string(t.outcome)},
              {"peak", program ? t.peak_bytes : t.used_bytes},
              {"seconds", t.seconds},
              {"cause", cause_json(t.cause)},
              {"request_bytes", or_null(t.request_bytes)},
              {"budget_bytes", t.budget_bytes},
              {"role", to_string(t.role)},
              {"verifies_prediction", t.verifies_prediction}};
  if (program) {
    out["exit_code"] = t.exit_code;
    out["message"] = t.message;
    if (!t.library.empty()) out["library"] = t.library;
  } else if (!t.message.empty()) {
    out["message"] = t.message;
  }
  return out;
}

json not_monotonic_json(const BoundaryResult& r, bool program, bool fit) {
  if (!r.not_monotonic) return nullptr;
  const auto trial = [&](const Trial& t) {
    return fit ? fit_trial_json(t, program) : frontier_trial_json(t, program);
  };
  return {{"failed", trial(r.not_monotonic->first)}, {"completed", trial(r.not_monotonic->second)}};
}

// As whatif's rows: [low, high] where the real allocator's frontier lies when the backend's is
// approximate (BackendInfo::frontier_range), null when it is exact.
json frontier_range_json(const SearchSubject& s, const std::optional<std::uint64_t>& frontier) {
  const BackendInfo& backend = backend_info(s.backend);
  if (backend.frontier_range == nullptr || !frontier) return nullptr;
  const auto range = backend.frontier_range(s.allocator_options, *frontier);
  if (!range) return nullptr;
  return json::array({range->low_bytes, range->high_bytes});
}

}  // namespace

json made_from_json(const std::string& name, const std::vector<std::uint64_t>& values,
                    const trace::SeriesFit& f, const std::vector<std::filesystem::path>& files,
                    std::optional<trace::TraceSeries::Rule> rule) {
  json places = json::array();
  for (const auto& [where, count] : f.off_line_places)
    places.push_back({{"where", where}, {"requests", count}});
  json doc = {{"name", name},
              {"values", values},
              {"requests", f.requests},
              {"matched", f.matched},
              {"scaling", f.scaling},
              {"off_line", f.off_line},
              {"off_line_places", places},
              {"anchor_only", f.anchor_only},
              {"elsewhere_only", f.elsewhere_only},
              {"failures", f.failures},
              {"transient", f.transient},
              {"aligned_share", f.aligned_share}};
  if (!files.empty()) {
    json read = json::array();
    for (const std::filesystem::path& file : files)
      read.push_back(file.string());
    doc["files"] = read;
  }
  if (rule) doc["transients"] = trace::to_string(*rule);
  return doc;
}

std::vector<std::string> card_names_holding(std::uint64_t bytes, std::uint64_t kept_back) {
  std::vector<std::string> names;
  for (const Card* card : cards_holding(bytes, kept_back))
    names.emplace_back(card->name);
  return names;
}

json frontier_json(const SearchSubject& s, const BoundaryResult& r, std::uint64_t resolution,
                   const std::string& answer) {
  const bool program = is_program(s);
  json trials = json::array();
  for (const Trial& t : r.trials)
    trials.push_back(frontier_trial_json(t, program));
  json doc = {{"schema", kFrontierSchema},
              {"oomlab", version_json()},
              {"scenario", scenario_json(s)},
              {"allocator", allocator_json(s)},
              {"simulated", s.simulated}};
  if (!program) doc["lower_bound"] = s.lower_bound;
  doc["upper_bytes"] = r.trials.empty() ? 0 : r.trials.front().budget_bytes;
  doc["frontier_bytes"] = or_null(r.answer);
  doc["frontier_range_bytes"] = frontier_range_json(s, r.answer);
  doc["failing_bytes"] = r.beyond.value_or(0);
  doc["timed_out"] = r.timed_out;
  doc["resolution_bytes"] = resolution;
  doc["runs"] = r.runs();
  doc["predicted_bytes"] = or_null(r.predicted);
  doc["prediction"] = r.prediction_note;
  doc["cards"] = r.answer ? json(card_names_holding(*r.answer, s.kept_back_bytes)) : json::array();
  doc["not_monotonic"] = not_monotonic_json(r, program, false);
  doc["trials"] = trials;
  if (program && s.program != nullptr) {
    doc["program"] = {{"first_bytes", s.program->first_bytes},
                      {"peak_bytes", s.program->peak_bytes},
                      {"usage_source", s.program->usage_source}};
  }
  if (program) {
    doc["model"] =
        s.model != nullptr ? model_json(*s.model, s.model->snapshot.parent_path()) : json(nullptr);
  }
  if (r.confirmation.runs > 0) {
    doc["confirm"] = {{"runs", r.confirmation.runs},
                      {"frontier_completed", r.confirmation.answer_completed},
                      {"below_completed", r.confirmation.beyond_completed}};
  }
  if (program && s.environment)
    doc["environment"] = environment_json(*s.environment, s.device, false);
  doc["answer"] = answer;
  return doc;
}

json fit_json(const SearchSubject& s, const FitResult& r, const std::string& answer) {
  const bool program = is_program(s);
  json trials = json::array();
  for (const Trial& t : r.trials)
    trials.push_back(fit_trial_json(t, program));
  const Trial* at = r.at_answer();
  const Trial* next = r.at_beyond();
  json peak = nullptr;
  json headroom = nullptr;
  if (at != nullptr) {
    const std::uint64_t bytes = program ? at->peak_bytes : at->used_bytes;
    peak = bytes;
    headroom = r.headroom_at(bytes);
  }
  json doc = {{"schema", kFitSchema},
              {"oomlab", version_json()},
              {"scenario", scenario_json(s)},
              {"allocator", allocator_json(s)},
              {"simulated", s.simulated},
              {"range", {{"name", r.range.name}, {"lo", r.range.lo}, {"hi", r.range.hi}}},
              {"budget_bytes", r.budget_bytes},
              {"value", or_null(r.answer)},
              {"next_value", or_null(r.beyond)},
              {"runs", r.runs()},
              {"predicted", or_null(r.predicted)},
              {"prediction", r.prediction_note},
              {"peak_bytes", peak},
              {"headroom_bytes", headroom},
              {"next", next != nullptr ? fit_trial_json(*next, program) : json(nullptr)},
              {"not_monotonic", not_monotonic_json(r, program, true)},
              {"timed_out", r.timed_out},
              {"stopped", r.stopped.empty() ? json(nullptr) : json(r.stopped)},
              {"cards", r.answer ? json(card_names_holding(r.budget_bytes, s.kept_back_bytes))
                                 : json::array()}};
  if (!r.made_from.empty())
    doc["made_from"] =
        made_from_json(r.range.name, r.made_from, r.series_fit, r.made_files, r.made_rule);
  if (r.confirmation.runs > 0) {
    doc["confirm"] = {{"runs", r.confirmation.runs},
                      {"value_completed", r.confirmation.answer_completed},
                      {"next_completed", r.confirmation.beyond_completed}};
  }
  doc["trials"] = trials;
  if (s.environment) doc["environment"] = environment_json(*s.environment, s.device, s.simulated);
  doc["answer"] = answer;
  return doc;
}

}  // namespace oomlab
