#include "cli/remodel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "cli/parse.hpp"
#include "exec/exec_frontier.hpp"
#include "exec/output_rescan.hpp"
#include "io/file_digest.hpp"
#include "oomlab/error.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"
#include "reports/run/report_input.hpp"
#include "reports/run/verdict_changes.hpp"
#include "run/runner.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;

namespace {

// One recorded parameter as the command line would have given it.
std::string assignment(const std::string& name, const nlohmann::json& value) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_boolean()) {
    text = value.get<bool>() ? "on" : "off";
  } else if (value.is_number_unsigned() &&
             value.get<std::uint64_t>() == std::numeric_limits<std::uint64_t>::max()) {
    text = "max";
  } else if (value.is_array()) {
    std::vector<std::string> items;
    for (const nlohmann::json& item : value)
      items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    text = fmt::format("{}", fmt::join(items, ","));
  } else {
    text = value.dump();
  }
  return name + "=" + text;
}

Params recorded_params(const ParamSpec& spec, const nlohmann::json& values,
                       std::string_view owner) {
  std::vector<std::string> assignments;
  for (const auto& [name, value] : values.items()) {
    if (!value.is_null()) assignments.push_back(assignment(name, value));
  }
  return parse_params(spec, assignments, owner, "the record's");
}

// The files the run's parameters named, as they were then: each must still hold what it held.
std::string changed_inputs(const RunConfig& config, const fs::path& summary) {
  const nlohmann::json doc = read_json_file(summary);
  const auto scenario = doc.find("scenario");
  if (scenario == doc.end() || !scenario->contains("files")) return {};
  const Registry::Entry* entry = Registry::global().find(config.scenario);
  for (const auto& [name, then] : file_digests(entry->params, config.params)) {
    const auto recorded = (*scenario)["files"].find(name);
    if (recorded != (*scenario)["files"].end() && recorded->is_string() && *recorded != then)
      return fmt::format("{} {} no longer holds what the run read", name, config.params.text(name));
  }
  return {};
}

// The run made again from its record: what it ran, with which allocator, at which budget.
RunConfig recorded_config(const RunReport& stored) {
  const Registry::Entry* entry = Registry::global().find(stored.scenario);
  if (entry == nullptr) {
    throw Error(ErrorKind::input, fmt::format("this oomlab has no scenario '{}'", stored.scenario));
  }
  const BackendInfo* backend = find_backend(stored.allocator);
  if (backend == nullptr) {
    throw Error(ErrorKind::input,
                fmt::format("this oomlab has no allocator '{}'", stored.allocator));
  }
  RunConfig config;
  config.scenario = stored.scenario;
  config.params = recorded_params(entry->params, stored.scenario_params,
                                  fmt::format("scenario '{}'", stored.scenario));
  config.allocator = backend->kind;
  config.allocator_options = recorded_params(backend->options, stored.allocator_options,
                                             fmt::format("allocator '{}'", stored.allocator));
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{stored.budget_bytes}};
  config.seed = stored.seed;
  config.probe = !stored.oom || stored.oom->largest_free_bytes.has_value();
  config.environment = probe_host_environment();
  return config;
}

// A simulated run is deterministic: made again, it gives this oomlab's verdict.
std::string rerun_scenario(const RunReport& stored, RunReport& now) {
  if (!stored.simulated) {
    return fmt::format(
        "a run on a GPU is not made again: its verdict stands as oomlab {} wrote it (run it "
        "again to have this oomlab's)",
        written_by(stored.platform));
  }
  RunConfig config;
  try {
    config = recorded_config(stored);
    if (std::string changed = changed_inputs(config, stored.dir / "summary.json");
        !changed.empty()) {
      return fmt::format("not made again: {}; its verdict stands as oomlab {} wrote it", changed,
                         written_by(stored.platform));
    }
  } catch (const Error& e) {
    return fmt::format("not made again: {}; its verdict stands as oomlab {} wrote it", e.what(),
                       written_by(stored.platform));
  }
  RunResult result;
  try {
    result = run_scenario(config);
  } catch (const Error& e) {  // its input gone (a trace named relative to where it ran), say
    return fmt::format("not made again: {}; its verdict stands as oomlab {} wrote it", e.what(),
                       written_by(stored.platform));
  }
  if (const BackendInfo& info = backend_info(result.backend);
      info.check_settings != nullptr && result.oom)
    info.check_settings(config, result);
  result.input_trace.reset();
  static_cast<RunResult&>(now) = std::move(result);
  return "made again from its record (the same trace, parameters, allocator, budget and seed)";
}

// An exec's record: its output read again, its snapshots through today's model. A remedy check
// is a rerun of the program, a fact that stays with the model it checked.
std::string remodel_program(const RunReport& stored, RunReport& now) {
  std::string how = rediagnose_program_output(now, now.dir);
  const std::vector<fs::path>& snapshots = now.program->snapshots;
  std::error_code ec;
  if (!snapshots.empty() &&
      std::none_of(snapshots.begin(), snapshots.end(),
                   [&](const fs::path& f) { return fs::is_regular_file(f, ec); })) {
    return how + "; its snapshots are not in the folder: the model's answers stand as recorded";
  }
  now.models.clear();
  if (const ProgramModelling* modelling = program_modelling(now)) modelling->model(now, nullptr);
  if (!stored.models.empty() && !now.models.empty() && stored.models.front().remedy_check &&
      !now.models.front().remedy_check)
    now.models.front().remedy_check = stored.models.front().remedy_check;
  if (!now.models.empty())
    how += fmt::format("; {} snapshot(s) through this oomlab's model", now.models.size());
  return how;
}

}  // namespace

RunReport remodel_run(const fs::path& path) {
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  if (folder && !fs::exists(path / "summary.json", ec)) {
    throw_usage(fmt::format(
        "--remodel: {}: not a run folder (no summary.json): --remodel re-diagnoses the folders "
        "of `oomlab exec` and `oomlab run`",
        path.string()));
  }
  const RunReport stored = load_run_report(path);
  RunReport now = stored;
  now.provenance.clear();
  const std::string how =
      stored.is_program() ? remodel_program(stored, now) : rerun_scenario(stored, now);
  const std::vector<std::string> changes = verdict_changes(stored, now);
  now.provenance.push_back(
      fmt::format("Re-diagnosed by oomlab {}: {}. The stored verdict was oomlab {}'s; {}",
                  this_oomlab(), how, written_by(stored.platform),
                  changes.empty() ? "nothing a reader acts on changed" : "what changed:"));
  now.provenance.insert(now.provenance.end(), changes.begin(), changes.end());
  return now;
}

}  // namespace oomlab::cli
