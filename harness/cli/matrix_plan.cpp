#include "cli/matrix_plan.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <span>

#include "allocators/backends.hpp"
#include "cli/child_process.hpp"
#include "cli/out_folder.hpp"
#include "cli/parse.hpp"
#include "device/device.hpp"
#include "io/file_digest.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab::cli {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) parts.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

// "cuda,async:release_threshold=0,reuse_opportunistic=off,sim": a part with '=' and no ':'
// is one more option of the allocator before it.
std::vector<std::string> split_allocators(std::string_view text) {
  std::vector<std::string> allocators;
  for (std::string& part : split(text)) {
    const bool option = part.find('=') != std::string::npos && part.find(':') == std::string::npos;
    if (option && !allocators.empty()) {
      allocators.back() += "," + part;
    } else {
      allocators.push_back(std::move(part));
    }
  }
  if (allocators.empty()) throw_usage("--allocators: no allocator given");
  return allocators;
}

std::string key_of(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

bool declares(const Registry::Entry& scenario, std::string_view name) {
  return std::any_of(scenario.params.begin(), scenario.params.end(),
                     [&](const ParamDef& d) { return d.name == name; });
}

// A text parameter with no default (replay's trace) must be given for the scenario to run.
std::optional<std::string> missing_required(const Registry::Entry& scenario,
                                            const std::vector<std::string>& params) {
  for (const ParamDef& d : scenario.params) {
    const auto* text = std::get_if<std::string>(&d.default_value);
    if (d.type != ParamType::text || text == nullptr || !text->empty()) continue;
    if (std::none_of(params.begin(), params.end(),
                     [&](const std::string& p) { return key_of(p) == d.name; }))
      return d.name;
  }
  return std::nullopt;
}

std::vector<const Registry::Entry*> choose_scenarios(const MatrixOptions& o, std::ostream& err) {
  std::vector<const Registry::Entry*> chosen;
  if (o.scenarios == "none" || (!o.execs.empty() && !o.scenarios_given)) return chosen;
  if (o.scenarios == "all") {
    for (const Registry::Entry& e : Registry::global().entries()) {
      if (e.name.starts_with("test-")) continue;
      if (const auto missing = missing_required(e, o.params)) {
        err << fmt::format("matrix: skipping '{}': it needs --param {}=...\n", e.name, *missing);
        continue;
      }
      chosen.push_back(&e);
    }
  } else {
    for (const std::string& name : split(o.scenarios)) {
      const Registry::Entry* e = Registry::global().find(name);
      if (e == nullptr) {
        throw_usage(fmt::format("--scenarios: unknown scenario '{}'{} (known: {})", name,
                                did_you_mean(name, Registry::global().names()),
                                fmt::join(Registry::global().names(), ", ")));
      }
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
  }
  if (chosen.empty() && o.execs.empty()) throw_usage("--scenarios: no scenario to run");
  for (const std::string& p : o.params) {
    if (p.find('=') == std::string::npos)
      throw_usage(fmt::format("--param: '{}' is not KEY=VALUE", p));
    if (std::none_of(chosen.begin(), chosen.end(),
                     [&](const auto* e) { return declares(*e, key_of(p)); }))
      throw_usage(fmt::format("--param: no chosen scenario takes '{}'", key_of(p)));
  }
  return chosen;
}

}  // namespace

std::vector<int> choose_devices(const std::string& text, const Environment& env,
                                std::string_view flag) {
  std::vector<int> devices;
  if (text == "all") {
    for (const DeviceFacts& d : env.devices)
      devices.push_back(d.index);
    if (devices.empty()) devices.push_back(0);  // each cell then says why no device is usable
    return devices;
  }
  for (const std::string& part : split(text)) {
    int index = 0;
    try {
      index = parse_device_index(part);
    } catch (const Error& e) {
      throw_usage(fmt::format("{}: {}", flag, e.what()));
    }
    if (std::find(devices.begin(), devices.end(), index) == devices.end()) devices.push_back(index);
  }
  if (devices.empty()) throw_usage(fmt::format("{}: no device given", flag));
  return devices;
}

namespace {

// The budget as compare matches it: bytes as a number (8GiB and 8192MiB are one budget).
json budget_key(const std::string& text) {
  const BudgetRequest b = parse_budget(text);
  if (b.kind == BudgetRequest::Kind::bytes) return b.bytes.value;
  return b.kind == BudgetRequest::Kind::all ? json("all") : json(text);
}

std::string folder_name(std::string text) {
  for (char& c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '.' && c != '_')
      c = '_';
  }
  return text;
}

// What the files a scenario's parameters name held, hashed once for all its allocators.
using FileDigests = std::map<std::string, std::map<std::string, std::string>>;

// --exec NAME=COMMAND: one cell, whatever the allocators (the program brings its own).
PlannedCell plan_exec_cell(const MatrixOptions& o, const std::string& spec, int device) {
  const std::size_t eq = spec.find('=');
  const std::string name = spec.substr(0, eq);
  if (eq == std::string::npos || name.empty() || eq + 1 == spec.size())
    throw_usage(fmt::format("--exec: '{}' is not NAME=COMMAND", spec));
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
      std::string::npos)
    throw_usage(
        fmt::format("--exec: name '{}' may hold only letters, digits, '_', '.', '-'", name));
  PlannedCell cell{.id = folder_name("exec-" + name),
                   .scenario = "exec:" + name,
                   .allocator = "exec",
                   .device = device,
                   .command = spec.substr(eq + 1)};
  cell.key = {{"scenario", cell.scenario},
              {"allocator", "exec"},
              {"options", json::object()},
              {"params", {{"command", cell.command}}},
              {"budget", budget_key(o.budget)}};
  return cell;
}

// A NAME given again with another command is the same program another way (another interpreter,
// framework version or allocator setting): its own cell, keyed by its command, and compared with
// the others of its NAME by `compare --fleet`. The same NAME and command twice is refused.
void add_exec_cells(const MatrixOptions& o, MatrixPlan& plan, std::set<std::string>& ids) {
  std::set<std::string> specs;
  for (const std::string& spec : o.execs) {
    PlannedCell cell = plan_exec_cell(o, spec, plan.devices.front());
    if (!specs.insert(spec).second) throw_usage(fmt::format("--exec: '{}' is given twice", spec));
    const std::string id = cell.id;
    for (int n = 2; !ids.insert(cell.id).second; ++n)
      cell.id = fmt::format("{}-{}", id, n);
    plan.cells.push_back(std::move(cell));
  }
}

PlannedCell plan_cell(const MatrixOptions& o, const Registry::Entry& scenario,
                      const std::string& allocator, int device, FileDigests& digests) {
  PlannedCell cell{.id = folder_name(scenario.name + "-" + allocator),
                   .scenario = scenario.name,
                   .allocator = allocator,
                   .device = device};
  for (const std::string& p : o.params) {
    if (declares(scenario, key_of(p))) cell.params.push_back(p);
  }
  RunOptions run;
  run.scenario = scenario.name;
  run.allocator = allocator;
  run.budget = o.budget;
  run.seed = o.seed;
  run.params = cell.params;
  run.device = std::to_string(device);
  run.verify = o.verify;
  const RunConfig config = config_from(run);  // the child would refuse what this refuses
  cell.key = {
      {"scenario", scenario.name},
      {"allocator",
       config.allocator == BackendKind::automatic ? "auto" : backend_info(config.allocator).name},
      {"options", params_json(config.allocator_options)},
      {"params", params_json(config.params)},
      {"budget", budget_key(o.budget)}};
  auto [files, fresh] = digests.try_emplace(scenario.name);
  if (fresh) files->second = file_digests(scenario.params, config.params);
  if (!files->second.empty()) cell.key["files"] = files->second;
  // Such a file matches by what it holds: the key keeps its name, not the path, so that it does
  // not depend on where the checkout is (the cell's summary keeps the path it ran).
  for (const auto& [name, digest] : files->second) {
    json& path = cell.key["params"][name];
    if (path.is_string()) path = fs::path(path.get<std::string>()).filename().string();
  }
  return cell;
}

// A matrix's record and reports: a folder holding one is refused, or with --force they go first
// (the cells' folders are then replaced one by one as they run).
constexpr std::array<std::string_view, 3> kMatrixFiles = {"matrix.json", "report.html",
                                                          "report.md"};

fs::path default_folder() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  return fs::path("oomlab-runs") / fmt::format("{:%Y%m%dT%H%M%SZ}-matrix", fmt::gmtime(now));
}

template <typename Parse>
auto flag_value(std::string_view flag, Parse&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    throw_usage(fmt::format("{}: {}", flag, e.what()));
  }
}

void parse_numbers(const MatrixOptions& o, MatrixPlan& plan) {
  plan.repeat = static_cast<std::uint32_t>(flag_value("--repeat", [&] {
    const std::uint64_t n = parse_unsigned(o.repeat);
    if (n < 1 || n > 1000) throw_usage(fmt::format("'{}' is not between 1 and 1000", o.repeat));
    return n;
  }));
  const double seconds = flag_value("--timeout", [&] { return parse_real(o.timeout); });
  if (!(seconds >= 0.001 && seconds <= 7 * 86400.0))
    throw_usage(
        fmt::format("--timeout: '{}' is not a number of seconds from 0.001 to a week", o.timeout));
  plan.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1e3));
  static_cast<void>(flag_value("--budget", [&] { return parse_budget(o.budget); }));
  static_cast<void>(flag_value("--seed", [&] { return parse_unsigned(o.seed); }));
  static_cast<void>(flag_value("--verify", [&] { return parse_verify_mode(o.verify); }));
}

// matrix.json's `config`: the run as asked, and the directory its cells ran in.
json config_json(const MatrixOptions& o, MatrixPlan& plan,
                 const std::vector<const Registry::Entry*>& scenarios,
                 const std::vector<std::string>& allocators) {
  json params = json::object();
  for (const std::string& p : o.params)
    params[key_of(p)] = p.substr(p.find('=') + 1);
  std::vector<std::string> names;
  names.reserve(scenarios.size());
  for (const auto* s : scenarios)
    names.push_back(s->name);
  json config = {
      {"scenarios", names},      {"allocators", allocators},
      {"budget", o.budget},      {"seed", parse_unsigned(o.seed)},
      {"repeat", plan.repeat},   {"timeout_s", static_cast<double>(plan.timeout.count()) / 1e3},
      {"devices", plan.devices}, {"verify", o.verify},
      {"params", params},        {"execs", o.execs}};
  // Where the cells run: a program's relative paths are taken from here.
  std::error_code ec;
  plan.directory = fs::current_path(ec);
  config["directory"] = ec ? json(nullptr) : json(plan.directory.string());
  return config;
}

}  // namespace

MatrixPlan plan_matrix(const MatrixOptions& o, std::ostream& err) {
  MatrixPlan plan;
  parse_numbers(o, plan);
  for (const std::string& note : read_budget(o.budget).notes)  // before any cell runs
    err << "oomlab: note: " << note << '\n';
  plan.budget = o.budget;
  plan.seed = o.seed;
  plan.verify = o.verify;
  const std::vector<std::string> allocators = split_allocators(o.allocators);
  for (const std::string& allocator : allocators) {  // before anything is said about scenarios
    try {
      static_cast<void>(parse_allocator(allocator));
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.starts_with("--allocator:")) message.replace(0, 11, "--allocators");
      throw_usage(message);
    }
  }
  const std::vector<const Registry::Entry*> scenarios = choose_scenarios(o, err);
  const Environment env = probe_environment();
  plan.devices = choose_devices(o.devices, env);
  std::set<std::string> ids;
  FileDigests digests;
  for (const Registry::Entry* scenario : scenarios) {
    for (const std::string& allocator : allocators) {
      PlannedCell cell = plan_cell(o, *scenario, allocator, plan.devices.front(), digests);
      for (int n = 2; !ids.insert(cell.id).second; ++n)
        cell.id = folder_name(fmt::format("{}-{}-{}", scenario->name, allocator, n));
      plan.cells.push_back(std::move(cell));
    }
  }
  add_exec_cells(o, plan, ids);
  plan.scenario_count = scenarios.size();
  plan.allocator_count = allocators.size();
  plan.out = o.out.empty() ? default_folder() : fs::path(o.out);
  claim_out_folder(
      plan.out, o.force,
      {.what = "a matrix", .marks = std::span(kMatrixFiles).first(1), .replaced = kMatrixFiles});
  plan.self = self_executable();
  const auto device =
      std::find_if(env.devices.begin(), env.devices.end(),
                   [&](const DeviceFacts& d) { return d.index == plan.devices.front(); });
  // Where no cell asks the device for memory, the environment names none.
  const bool all_sim = std::none_of(allocators.begin(), allocators.end(), [](const std::string& a) {
    const AllocatorChoice choice = parse_allocator(a);
    return choice.kind == BackendKind::automatic || uses_device(choice.kind, choice.options);
  });
  plan.environment = environment_json(
      env, device != env.devices.end() ? std::optional<DeviceFacts>(*device) : std::nullopt,
      all_sim || env.devices.empty());
  plan.config = config_json(o, plan, scenarios, allocators);
  return plan;
}

void write_matrix_json(const MatrixPlan& plan, const std::vector<MatrixCell>& cells) {
  write_output_file(plan.out / "matrix.json",
                    matrix_json(plan.environment, plan.config, cells).dump(2) + "\n");
}

}  // namespace oomlab::cli
