// The fleet table built: environments found and put in version order, cells placed in rows,
// and each cell judged against the previous version's on the same GPU model.
#include "reports/matrix/fleet.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "reports/matrix/versions.hpp"

namespace oomlab {

using plain_json = nlohmann::json;  // unordered: its keys sorted

namespace {

std::string text_or_unknown(const plain_json& env, const char* name) {
  const auto it = env.find(name);
  return it != env.end() && it->is_string() ? it->get<std::string>() : "unknown";
}

std::string gpu_of(const plain_json& env) {
  const auto device = env.find("device");
  if (device == env.end() || !device->is_object())
    return env.value("simulated", false) ? "none (simulated)" : "none";
  return device->value("name", std::string("unknown"));
}

// 13000 -> "13.0", as CUDA spells its versions.
std::string cuda_of(const plain_json& env) {
  const auto it = env.find("cuda_runtime");
  if (it == env.end() || !it->is_number_integer()) return "unknown";
  const auto v = it->get<std::int64_t>();
  return v <= 0 ? "none" : fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

// What a matrix's program cell (exec:NAME) is across interpreters: its key without the command
// that names them. A lone exec run has no NAME: its command is what it is.
plain_json row_key(const CompareCell& cell) {
  plain_json key = matching_key(cell.key);
  if (cell.scenario.starts_with("exec:") && key.contains("params") && key["params"].is_object())
    key["params"].erase("command");
  return key;
}

// "fragmentation/async @ 4GiB", "exec:train @ 4GiB", or a lone exec run's "exec python3 t.py @
// 4GiB".
std::string row_name(const CompareCell& cell) {
  if (cell.allocator != "exec")
    return fmt::format("{}/{} @ {}", cell.scenario, cell.allocator, cell.budget);
  if (cell.scenario != "exec") return fmt::format("{} @ {}", cell.scenario, cell.budget);
  const plain_json command =
      cell.key.value("params", plain_json::object()).value("command", plain_json());
  return fmt::format("exec {} @ {}", command.is_string() ? command.get<std::string>() : "?",
                     cell.budget);
}

std::string framework_names(const std::vector<FrameworkSeen>& frameworks) {
  std::vector<std::string> names;
  names.reserve(frameworks.size());
  for (const FrameworkSeen& f : frameworks)
    names.push_back(f.name);
  return fmt::format("{}", fmt::join(names, ","));
}

bool older(const FleetEnvironment& a, const FleetEnvironment& b) {
  if (a.gpu != b.gpu) return a.gpu < b.gpu;
  if (const int c = compare_versions(a.driver, b.driver); c != 0) return c < 0;
  if (const int c = compare_versions(a.cuda_runtime, b.cuda_runtime); c != 0) return c < 0;
  return compare_versions(a.framework, b.framework) < 0;
}

// A cell as found: its row, its environment, the runner (input) it came from.
struct Placed {
  std::size_t row;
  std::size_t environment;
  std::size_t input;
  const CompareCell* cell;
};

struct Builder {
  Fleet fleet;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::size_t> envs;
  std::map<std::string, std::size_t> rows;
  std::vector<Placed> placed;
  std::vector<std::string> names;                 // a environment's framework names
  std::vector<std::set<std::size_t>> row_inputs;  // the runners that ran each row
  std::vector<std::set<std::size_t>> env_inputs;  // the runners of each environment

  std::size_t environment(const plain_json& env, const CompareCell& cell, std::size_t input) {
    FleetEnvironment e{.gpu = gpu_of(env),
                       .driver = text_or_unknown(env, "driver"),
                       .cuda_runtime = cuda_of(env),
                       .framework = frameworks_text(cell.frameworks)};
    const auto [it, added] =
        envs.try_emplace({e.gpu, e.driver, e.cuda_runtime, e.framework}, envs.size());
    if (added) {
      fleet.environments.push_back(std::move(e));
      names.push_back(framework_names(cell.frameworks));
      env_inputs.emplace_back();
    }
    env_inputs[it->second].insert(input);
    return it->second;
  }

  std::size_t row(const CompareCell& cell, std::size_t input) {
    const plain_json key = row_key(cell);
    const auto [it, added] = rows.try_emplace(key.dump(), rows.size());
    if (added) {
      fleet.rows.push_back({.key = key, .name = row_name(cell)});
      row_inputs.emplace_back();
    }
    row_inputs[it->second].insert(input);
    return it->second;
  }

  // Environments in version order; every index kept so far renumbered.
  void sort_environments() {
    std::vector<std::size_t> order(fleet.environments.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return older(fleet.environments[a], fleet.environments[b]);
    });
    std::vector<std::size_t> position(order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      position[order[i]] = i;
    const auto permuted = [&](auto values) {
      auto out = values;
      for (std::size_t i = 0; i < order.size(); ++i)
        out[i] = std::move(values[order[i]]);
      return out;
    };
    fleet.environments = permuted(std::move(fleet.environments));
    names = permuted(std::move(names));
    env_inputs = permuted(std::move(env_inputs));
    for (Placed& p : placed)
      p.environment = position[p.environment];
  }
};

bool failed(const CompareCell& cell) {
  return cell.outcome != "oom" && cell.outcome != "completed";
}

// The steps of one row: along each GPU model, each cell against the last one before it of the
// same frameworks; a runner of a newer version without the row at all is its `missing`.
void judge_row(Builder& b, std::size_t r) {
  Fleet& fleet = b.fleet;
  const FleetRow& row = fleet.rows[r];
  std::map<std::pair<std::string, std::string>, std::size_t> last;
  for (std::size_t e = 0; e < fleet.environments.size(); ++e) {
    const std::pair<std::string, std::string> lane{fleet.environments[e].gpu, b.names[e]};
    const auto before = last.find(lane);
    if (row.cells[e]) {
      if (before != last.end()) {
        fleet.steps.push_back(
            {.row = r,
             .from = before->second,
             .to = e,
             .verdict = judge_cells(*row.cells[before->second], *row.cells[e], fleet.tolerance)});
      } else if (failed(*row.cells[e])) {
        fleet.steps.push_back({.row = r, .to = e, .verdict = unmatched_cell(*row.cells[e])});
      }
      last[lane] = e;
      continue;
    }
    if (before == last.end()) continue;
    const std::set<std::size_t>& ran = b.row_inputs[r];
    const bool runner_lacks_row = std::none_of(b.env_inputs[e].begin(), b.env_inputs[e].end(),
                                               [&](std::size_t i) { return ran.contains(i); });
    if (!runner_lacks_row) continue;
    CellVerdict missing;
    missing.baseline = row.cells[before->second];
    missing.verdict = Verdict::missing;
    missing.reason = "in the previous version, not in this one";
    fleet.steps.push_back({.row = r, .from = before->second, .to = e, .verdict = missing});
  }
}

}  // namespace

std::string FleetEnvironment::versions() const {
  std::string out = fmt::format("driver {} · CUDA {}", driver, cuda_runtime);
  if (!framework.empty()) out += " · " + framework;
  return out;
}

std::string FleetEnvironment::label() const {
  return fmt::format("{} · {}", gpu, versions());
}

std::size_t Fleet::count(Verdict verdict) const {
  return static_cast<std::size_t>(
      std::count_if(steps.begin(), steps.end(),
                    [&](const FleetStep& s) { return s.verdict.verdict == verdict; }));
}

std::size_t Fleet::regressions() const {
  return static_cast<std::size_t>(std::count_if(steps.begin(), steps.end(), [](const FleetStep& s) {
    return is_regression(s.verdict.verdict);
  }));
}

const FleetStep* Fleet::step_at(std::size_t row, std::size_t environment) const {
  const auto it = std::find_if(steps.begin(), steps.end(), [&](const FleetStep& s) {
    return s.row == row && s.to == environment && !s.same_environment;
  });
  return it == steps.end() ? nullptr : &*it;
}

Fleet compare_fleet(const std::vector<CompareInput>& inputs, double tolerance) {
  Builder b;
  b.fleet.tolerance = tolerance;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    b.fleet.inputs.push_back(inputs[i].path);
    for (const CompareCell& cell : inputs[i].cells) {
      const std::size_t e = b.environment(inputs[i].environment, cell, i);
      b.placed.push_back({.row = b.row(cell, i), .environment = e, .input = i, .cell = &cell});
    }
  }
  b.sort_environments();
  for (FleetEnvironment& e : b.fleet.environments)
    e.runners.clear();
  for (std::size_t e = 0; e < b.env_inputs.size(); ++e) {
    for (const std::size_t i : b.env_inputs[e])
      b.fleet.environments[e].runners.push_back(inputs[i].path);
  }
  for (FleetRow& row : b.fleet.rows)
    row.cells.resize(b.fleet.environments.size());
  std::vector<FleetStep> again;  // cells of another runner of the same environment
  for (const Placed& p : b.placed) {
    std::optional<CompareCell>& slot = b.fleet.rows[p.row].cells[p.environment];
    if (!slot) {
      slot = *p.cell;
      continue;
    }
    again.push_back({.row = p.row,
                     .from = p.environment,
                     .to = p.environment,
                     .verdict = judge_cells(*slot, *p.cell, tolerance),
                     .same_environment = true});
  }
  for (std::size_t r = 0; r < b.fleet.rows.size(); ++r)
    judge_row(b, r);
  b.fleet.steps.insert(b.fleet.steps.end(), again.begin(), again.end());
  std::stable_sort(b.fleet.steps.begin(), b.fleet.steps.end(),
                   [](const FleetStep& x, const FleetStep& y) {
                     return std::tie(x.row, x.to) < std::tie(y.row, y.to);
                   });
  return std::move(b.fleet);
}

std::string fleet_step_text(const Fleet& fleet, const FleetStep& step) {
  const FleetEnvironment& to = fleet.environments[step.to];
  std::string versions =
      step.from ? fmt::format("{} → {}", fleet.environments[*step.from].versions(), to.versions())
                : to.versions();
  if (step.same_environment) versions = fmt::format("{} (another runner of it)", to.versions());
  return fmt::format("{} on {}: {}: {}: {}", fleet.rows[step.row].name, to.gpu, versions,
                     to_string(step.verdict.verdict), step.verdict.reason);
}

std::string fleet_conclusion(const Fleet& fleet) {
  const std::size_t n = fleet.steps.size();
  const std::size_t regressions = fleet.regressions();
  if (regressions == 0) {
    return fmt::format("no regression in {} comparison{} across {} environment{}", n,
                       n == 1 ? "" : "s", fleet.environments.size(),
                       fleet.environments.size() == 1 ? "" : "s");
  }
  std::vector<std::string> parts;
  for (const Verdict verdict : kVerdicts) {
    if (const std::size_t k = fleet.count(verdict); k > 0 && is_regression(verdict))
      parts.push_back(fmt::format("{} {}", k, to_string(verdict)));
  }
  return fmt::format("REGRESSION: {} of {} comparison{} ({})", regressions, n, n == 1 ? "" : "s",
                     fmt::join(parts, ", "));
}

std::string fleet_incomplete(const Fleet& fleet) {
  const std::size_t missing = fleet.count(Verdict::missing);
  if (missing == 0) return "";
  std::vector<std::string> names;
  for (const FleetStep& s : fleet.steps) {
    if (s.verdict.verdict != Verdict::missing) continue;
    if (names.size() == 3) {
      names.emplace_back("...");
      break;
    }
    names.push_back(
        fmt::format("{} under {}", fleet.rows[s.row].name, fleet.environments[s.to].label()));
  }
  return fmt::format("incomplete: {} cell{} of a previous version missing from a newer one ({})",
                     missing, missing == 1 ? "" : "s", fmt::join(names, ", "));
}

}  // namespace oomlab
