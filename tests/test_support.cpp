#include "test_support.hpp"

#include <filesystem>

#include "allocators/backends.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::testing {

namespace fs = std::filesystem;

std::string oomlab_binary() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  for (const fs::path& candidate :
       {self.parent_path() / "oomlab", self.parent_path().parent_path() / "oomlab"}) {
    if (fs::exists(candidate)) return candidate.string();
  }
  return OOMLAB_BINARY;
}

std::string test_plugin(const std::string& name) {
  const std::string file = "oomlab_" + name + "_plugin.so";
  const fs::path staged = fs::read_symlink("/proc/self/exe").parent_path() / "plugins" / file;
  if (fs::exists(staged)) return staged.string();
  return (fs::path(OOMLAB_PLUGIN_DIR) / file).string();
}

double metric(const RunResult& result, const std::string& name) {
  for (const auto& [n, v] : result.metrics) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

RunConfig make_run_config(const std::string& scenario, const std::string& allocator,
                          std::uint64_t budget_bytes) {
  RunConfig config;
  config.scenario = scenario;
  config.params = Params(Registry::global().find(scenario)->params);
  config.allocator = find_backend(allocator)->kind;
  config.allocator_options = Params(find_backend(allocator)->options);
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{budget_bytes}};
  return config;
}

}  // namespace oomlab::testing
