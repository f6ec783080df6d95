// summary.json's blocks that say where and how a run ran: oomlab's version, the environment and
// its device, a scenario's parameters; and the names of the files a run wrote.
#include "oomlab/version.hpp"
#include "reports/run/summary_fields.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/json_values.hpp"

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

}  // namespace

std::string run_file(const std::filesystem::path& file, const std::filesystem::path& folder) {
  if (!folder.empty()) {
    std::error_code ec;
    const std::filesystem::path relative = std::filesystem::relative(file, folder, ec);
    if (!ec && !relative.empty() && *relative.begin() != "..") return relative.string();
  }
  return file.string();
}

std::filesystem::path from_run_file(const std::string& name, const std::filesystem::path& folder) {
  std::filesystem::path path(name);
  if (name.empty() || folder.empty() || path.is_absolute()) return path;
  return folder / path;
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

DeviceFacts read_device(const JsonFields& d) {
  return {.index = static_cast<int>(d.optional_integer("index").value_or(0)),
          .name = d.optional_text("name"),
          .uuid = d.optional_text("uuid"),
          .compute_capability = d.optional_text("cc"),
          .pci_bus_id = d.optional_text("pci_bus_id"),
          .total_bytes = d.optional_count("total_bytes").value_or(0),
          .free_bytes = d.optional_count("free_bytes"),
          .nvml_total_bytes = d.optional_count("nvml_total_bytes"),
          .multiprocessors = static_cast<int>(d.optional_integer("multiprocessors").value_or(0)),
          .memory_pools = d.flag("memory_pools"),
          .managed_memory = d.flag("managed_memory"),
          .concurrent_managed_access = d.flag("concurrent_managed_access"),
          .vmm_granularity = d.optional_count("vmm_granularity_bytes").value_or(0)};
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

}  // namespace oomlab
