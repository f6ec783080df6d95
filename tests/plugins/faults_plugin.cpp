// test-abort and test-hang: cells that die or never return, so that tests can prove `matrix`
// survives them — a plugin that corrupts the heap, a CUDA call that never comes back — and
// test-sticky: a kernel that writes far outside its block (a sticky CUDA error, as from a faulty
// plugin), then more allocations. A plugin of the tests (loaded with --plugin), so the product
// ships no test scenarios.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>

#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

// A few blocks first, so that the crash happens with memory held (the OS takes it back).
void hold_some(RunContext& ctx) {
  using namespace oomlab::literals;
  for (int i = 0; i < 4; ++i)
    static_cast<void>(ctx.allocate(1_MiB, "held when it dies"));
}

class TestAbort final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-abort"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: allocates a little, says so on stderr, then aborts (SIGABRT)";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    hold_some(ctx);
    std::fputs("test-abort: about to abort\n", stderr);
    std::abort();
  }
};

class TestHang final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-hang"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: allocates a little, then never returns, deaf to stop requests";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    hold_some(ctx);
    std::fputs("test-hang: hanging\n", stderr);
    for (;;)  // a hung driver call: SIGTERM's stop request is never looked at
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }
};

class TestSticky final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-sticky"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: touches memory 1 TiB past a block (an illegal address: a sticky CUDA "
           "error), then allocates on";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    using namespace oomlab::literals;
    hold_some(ctx);
    ctx.phase("fault");
    const Block block = ctx.allocate(1_MiB, "the block whose neighbour is touched");
    if (!block) return;
    Block beyond = block;  // a pointer nothing maps, in no slot of the harness's table
    beyond.ptr = static_cast<char*>(block.ptr) + (std::uintptr_t{1} << 40U);
    beyond.slot = Block::kNoSlot;
    ctx.touch(beyond);  // nothing on the sim; on a device, the context is lost from here on
    // Waits for the kernels on the stream: the fault surfaces here (an error, not an OOM later).
    ctx.fill(block);
    static_cast<void>(ctx.verify(block));
    ctx.phase("after the fault");
    while (ctx.allocate(1_MiB, "after the fault")) {
    }
  }
};

}  // namespace

}  // namespace oomlab

extern "C" void oomlab_register(oomlab::Registry& registry) {
  using oomlab::Scenario;
  registry.add([] { return std::unique_ptr<Scenario>(std::make_unique<oomlab::TestAbort>()); });
  registry.add([] { return std::unique_ptr<Scenario>(std::make_unique<oomlab::TestHang>()); });
  registry.add([] { return std::unique_ptr<Scenario>(std::make_unique<oomlab::TestSticky>()); });
}
