// A plugin as a user would write one: two scenarios, registered through the C entry point.
// plugin-demo allocates 1 MiB blocks until OOM; plugin-throws throws from run() (the harness must
// record an error and free what it holds).
#include <memory>
#include <stdexcept>
#include <vector>

#include "oomlab/registry.hpp"

namespace {

class PluginDemo final : public oomlab::Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "plugin-demo"; }
  [[nodiscard]] std::string_view summary() const override {
    return "from a plugin: 1 MiB blocks until OOM";
  }
  [[nodiscard]] oomlab::ParamSpec params() const override { return {}; }
  void run(oomlab::RunContext& ctx) override {
    while (!ctx.stop_requested()) {
      if (!ctx.allocate(std::size_t{1} << 20, "plugin block")) return;
    }
  }
};

class PluginThrows final : public oomlab::Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "plugin-throws"; }
  [[nodiscard]] std::string_view summary() const override {
    return "from a plugin: holds 4 MiB, then throws from run()";
  }
  [[nodiscard]] oomlab::ParamSpec params() const override { return {}; }
  void run(oomlab::RunContext& ctx) override {
    for (int i = 0; i < 4; ++i)
      static_cast<void>(ctx.allocate(std::size_t{1} << 20, "held"));
    throw std::runtime_error("plugin-throws: a bug in the plugin");
  }
};

}  // namespace

extern "C" void oomlab_register(oomlab::Registry& registry) {
  registry.add([] { return std::unique_ptr<oomlab::Scenario>(std::make_unique<PluginDemo>()); });
  registry.add([] { return std::unique_ptr<oomlab::Scenario>(std::make_unique<PluginThrows>()); });
}
