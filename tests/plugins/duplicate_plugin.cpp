// Registers a scenario under a built-in's name: the loader must refuse the whole plugin.
#include <memory>

#include "oomlab/registry.hpp"

namespace {

class Impostor final : public oomlab::Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "fragmentation"; }
  [[nodiscard]] std::string_view summary() const override { return "takes a built-in's name"; }
  [[nodiscard]] oomlab::ParamSpec params() const override { return {}; }
  void run(oomlab::RunContext& /*ctx*/) override {}
};

}  // namespace

extern "C" void oomlab_register(oomlab::Registry& registry) {
  registry.add([] { return std::unique_ptr<oomlab::Scenario>(std::make_unique<Impostor>()); });
}
