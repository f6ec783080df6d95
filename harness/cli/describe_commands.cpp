// `oomlab list`, `oomlab info`, `--version` and the scenario help texts.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "cli/commands.hpp"
#include "device/cards.hpp"
#include "device/device.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "oomlab/version.hpp"
#include "reports/run/summary_json.hpp"

namespace oomlab::cli {

using json = nlohmann::ordered_json;

namespace {

std::string param_lines(const ParamSpec& spec, std::string_view indent) {
  std::vector<std::pair<std::string, std::string>> columns;  // name=default, type
  std::size_t name_width = 26;
  std::size_t type_width = 12;
  for (const ParamDef& def : spec) {
    std::string type(to_string(def.type));
    if (def.type == ParamType::choice) type = fmt::format("{}", fmt::join(def.choices, "|"));
    if (def.type == ParamType::choices)
      type = fmt::format("list of {}", fmt::join(def.choices, ","));
    columns.emplace_back(fmt::format("{}={}", def.name, format_param_value(def.default_value)),
                         std::move(type));
    name_width = std::max(name_width, columns.back().first.size());
    type_width = std::max(type_width, columns.back().second.size());
  }
  std::string out;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    out += fmt::format("{}{:<{}} {:<{}} {}\n", indent, columns[i].first, name_width,
                       columns[i].second, type_width, spec[i].help);
  }
  return out;
}

json spec_json(const ParamSpec& spec) {
  json out = json::array();
  for (const ParamDef& def : spec) {
    json item = {{"name", def.name},
                 {"type", to_string(def.type)},
                 {"default", format_param_value(def.default_value)},
                 {"help", def.help}};
    if (!def.choices.empty()) item["choices"] = def.choices;
    out.push_back(std::move(item));
  }
  return out;
}

// "13000" -> "13.0"
std::string cuda_version(int v) {
  return v == 0 ? std::string("none") : fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

}  // namespace

std::string version_text() {
  return fmt::format("oomlab {} (git {}{})", OOMLAB_VERSION, OOMLAB_GIT_SHA,
                     OOMLAB_GIT_DIRTY ? ", modified" : "");
}

std::string scenario_help(const std::string& name) {
  const Registry::Entry* entry = Registry::global().find(name);
  if (entry == nullptr) return {};
  return fmt::format("Scenario '{}': {}\n\n{}\n\nParameters (--param KEY=VALUE):\n{}", entry->name,
                     entry->summary, entry->details, param_lines(entry->params, "  "));
}

std::string scenario_and_allocator_overview() {
  std::string out = "Scenarios ('oomlab run SCENARIO --help' for one):\n";
  for (const auto& e : Registry::global().entries())
    out += fmt::format("  {:<16} {}\n", e.name, e.summary);
  out += "Allocators (--allocator NAME[:option=value,...]):\n";
  for (const auto& b : backend_catalog())
    out += fmt::format("  {:<16} {}\n", b.name, b.summary);
  return out;
}

namespace {

constexpr std::string_view kCardsNote =
    "Each card's budget is its total memory as NVML reports it, less what the driver keeps back "
    "of the device in hand when idle (NVML's total less its free memory before the run; without "
    "a device, the 483 MiB an idle H100 kept back here). It approximates the card: another "
    "architecture's kernels, CUDA context and libraries' workspaces differ.";

int list_cards(bool as_json, std::ostream& out) {
  const std::uint64_t kept_back = kept_back_bytes(nullptr);
  if (as_json) {
    json doc = {{"kept_back_bytes", kept_back}, {"note", kCardsNote}, {"cards", json::array()}};
    for (const Card& c : known_cards()) {
      doc["cards"].push_back({{"name", c.name},
                              {"product", c.product},
                              {"total_bytes", c.total_bytes},
                              {"budget_bytes", card_budget_bytes(c, kept_back)},
                              {"source", c.source}});
    }
    out << doc.dump(2) << '\n';
    return kExitOk;
  }
  out << "Cards (--budget NAME; the budget shown is on the sim, less an idle H100's 483 MiB)\n";
  for (const Card& c : known_cards()) {
    out << fmt::format("  {:<10} {:>10} NVML total, budget {:>10}  {}\n    {}\n", c.name,
                       format_bytes(c.total_bytes), format_bytes(card_budget_bytes(c, kept_back)),
                       c.product, c.source);
  }
  out << kCardsNote << '\n';
  return kExitOk;
}

}  // namespace

int list_command(bool as_json, bool cards, std::ostream& out) {
  if (cards) return list_cards(as_json, out);
  if (as_json) {
    json doc = {{"scenarios", json::array()}, {"allocators", json::array()}};
    for (const auto& e : Registry::global().entries()) {
      doc["scenarios"].push_back(
          {{"name", e.name}, {"summary", e.summary}, {"params", spec_json(e.params)}});
    }
    for (const auto& b : backend_catalog()) {
      doc["allocators"].push_back({{"name", b.name},
                                   {"summary", b.summary},
                                   {"needs_device", b.needs_device},
                                   {"options", spec_json(b.options)}});
    }
    doc["trace_formats"] = json::array();
    for (const auto& f : trace::formats())
      doc["trace_formats"].push_back({{"name", f.name}, {"what", f.described_as}});
    doc["frameworks"] = json::array();
    for (const auto& f : Registry::global().frameworks())
      doc["frameworks"].push_back({{"name", f.name}, {"summary", f.summary}});
    out << doc.dump(2) << '\n';
    return kExitOk;
  }
  out << "Scenarios (oomlab run SCENARIO --param KEY=VALUE ...)\n";
  for (const auto& e : Registry::global().entries()) {
    out << fmt::format("  {:<16} {}\n", e.name, e.summary) << param_lines(e.params, "      ");
  }
  out << "\nAllocators (oomlab run SCENARIO --allocator NAME[:option=value,...])\n";
  for (const auto& b : backend_catalog()) {
    out << fmt::format("  {:<16} {}\n", b.name, b.summary) << param_lines(b.options, "      ");
  }
  out << "\nTrace formats (oomlab run replay --trace FILE [--format NAME])\n";
  for (const auto& f : trace::formats())
    out << fmt::format("  {:<16} {}\n", f.name, f.described_as);
  out << "\nFrameworks (what each brings)\n";
  for (const auto& f : Registry::global().frameworks())
    out << fmt::format("  {:<16} {}\n", f.name, f.summary);
  return kExitOk;
}

namespace {

void print_device(const DeviceFacts& d, std::ostream& out) {
  out << fmt::format("device {}       {} · compute capability {} · {} SMs\n", d.index, d.name,
                     d.compute_capability, d.multiprocessors);
  out << fmt::format("  uuid         {} · PCI {}\n", d.uuid, d.pci_bus_id);
  out << fmt::format("  memory       {} total{} · {}\n", format_bytes(d.total_bytes),
                     d.nvml_total_bytes
                         ? fmt::format(" ({} B; NVML: {} B)", format_count(d.total_bytes),
                                       format_count(*d.nvml_total_bytes))
                         : std::string(),
                     d.free_bytes ? fmt::format("{} free ({} B, NVML)", format_bytes(*d.free_bytes),
                                                format_count(*d.free_bytes))
                                  : std::string("free memory unknown (no NVML)"));
  out << fmt::format("  pools        {} (cudaMallocAsync)\n", yes_no(d.memory_pools));
  out << fmt::format("  managed      {} · concurrent managed access {}\n", yes_no(d.managed_memory),
                     yes_no(d.concurrent_managed_access));
  out << fmt::format("  VMM granularity {}\n", d.vmm_granularity == 0
                                                   ? std::string("unknown")
                                                   : format_bytes(d.vmm_granularity));
}

}  // namespace

int info_command(bool as_json, std::ostream& out, std::ostream& err) {
  const Environment env = probe_environment();
  if (as_json) {
    json doc = {{"oomlab", version_json()},
                {"host", env.host},
                {"cuda_built", env.cuda_built},
                {"driver", env.driver_version ? json(*env.driver_version) : json(nullptr)},
                {"cuda_driver_api", env.cuda_driver_api},
                {"cuda_runtime", env.cuda_runtime},
                {"problem", env.cuda_problem.empty() ? json(nullptr) : json(env.cuda_problem)},
                {"devices", json::array()}};
    for (const auto& d : env.devices)
      doc["devices"].push_back(device_json(d));
    out << doc.dump(2) << '\n';
  } else {
    out << version_text() << '\n';
    out << fmt::format("host         {}\n", env.host);
    out << fmt::format("driver       {} · CUDA driver API {} · runtime {}{}\n",
                       env.driver_version.value_or("none"), cuda_version(env.cuda_driver_api),
                       cuda_version(env.cuda_runtime),
                       env.cuda_built ? "" : " (built without CUDA)");
    for (const auto& d : env.devices)
      print_device(d, out);
  }
  if (env.devices.empty()) {
    err << fmt::format("oomlab: {}\n", env.cuda_problem);
    return kExitNoDevice;
  }
  return kExitOk;
}

}  // namespace oomlab::cli
