#include "test_support.hpp"

#include "allocators/backends.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::testing {

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
