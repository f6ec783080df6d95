#include "reports/frontier_exec_json.hpp"

#include "record/formats.hpp"
#include "reports/summary_json.hpp"

namespace oomlab {

using json = nlohmann::ordered_json;

json frontier_exec_json(const std::vector<std::string>& command, std::uint64_t resolution,
                        const ExecFrontier& r) {
  json trials = json::array();
  for (const ExecTrial& t : r.trials) {
    trials.push_back({{"budget_bytes", t.budget_bytes},
                      {"outcome", to_string(t.outcome)},
                      {"cause", t.cause ? json(to_string(*t.cause)) : json(nullptr)},
                      {"duration_ms", t.seconds * 1e3},
                      {"peak_bytes", t.peak_bytes},
                      {"used_bytes", t.used_bytes},
                      {"exit_code", t.exit_code},
                      {"oom_line", t.oom_line},
                      {"confirm", t.role == TrialRole::confirm},
                      {"role", to_string(t.role)},
                      {"verifies_prediction", t.verifies_prediction}});
  }
  json doc = {{"schema", kFrontierSchema},
              {"oomlab", version_json()},
              {"scenario", {{"name", "exec"}, {"params", {{"command", command_line(command)}}}}},
              {"allocator", {{"name", "exec"}, {"options", json::object()}}},
              {"simulated", false},
              {"upper_bytes", r.upper_bytes},
              {"frontier_bytes", r.frontier_bytes ? json(*r.frontier_bytes) : json(nullptr)},
              {"failing_bytes", r.failing_bytes},
              {"timed_out", r.timed_out},
              {"resolution_bytes", resolution},
              {"runs", r.trials.size()},
              {"predicted_bytes", r.predicted_bytes ? json(*r.predicted_bytes) : json(nullptr)},
              {"prediction", r.prediction_note},
              {"trials", trials}};
  if (r.top && r.top->program) {
    doc["program"] = {{"first_bytes", r.top->program->first_bytes},
                      {"peak_bytes", r.top->program->peak_bytes},
                      {"usage_source", r.top->program->usage_source}};
  }
  doc["model"] =
      r.top && !r.top->models.empty()
          ? model_json(r.top->models.front(), r.top->models.front().snapshot.parent_path())
          : json(nullptr);
  if (r.confirm_runs > 0) {
    doc["confirm"] = {{"runs", r.confirm_runs},
                      {"frontier_completed", r.frontier_passed},
                      {"below_completed", r.below_passed}};
  }
  if (r.top) doc["environment"] = environment_json(r.top->environment, r.top->device, false);
  return doc;
}

}  // namespace oomlab
