// Every exit path frees everything: a scenario that throws, a run that is interrupted, on the
// sim and, on a GPU, with the ballast held (device free memory must come back to where it was).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "oomlab/registry.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// Holds a few blocks of each kind, then fails the way a buggy plugin would.
class ThrowsMidRun final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-throws-mid-run"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: allocates, then throws";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    ctx.phase("hold");
    for (int i = 0; i < 10; ++i) {
      Block b = ctx.allocate(i % 2 == 0 ? 64_KiB : 8_MiB, "held");
      ASSERT_TRUE(b.ok());
      ctx.touch(b);
    }
    throw std::runtime_error("plugin bug");
  }
};
OOMLAB_REGISTER_SCENARIO(ThrowsMidRun)

// Allocates until asked to stop, which a test does from the progress callback.
class RunsUntilStopped final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-runs-until-stopped"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: churns until stopped";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    std::vector<Block> held;
    for (std::uint64_t step = 0;; ++step) {
      ctx.step(step);
      Block b = ctx.allocate(1_MiB, "churn");
      if (b.ok()) held.push_back(b);
      if (held.size() > 64) {
        ctx.release(held.front());
        held.erase(held.begin());
      }
    }
  }
};
OOMLAB_REGISTER_SCENARIO(RunsUntilStopped)

// Holds a block, waits (as a replay at its original pace waits) until asked to stop, then
// returns without another allocation: the stop is the outcome, not "completed".
class ReturnsWhenStopped final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-returns-when-stopped"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: waits for the stop, frees and returns";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    Block held = ctx.allocate(1_MiB, "held while waiting");
    while (!ctx.stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ctx.release(held);
  }
};
OOMLAB_REGISTER_SCENARIO(ReturnsWhenStopped)

RunConfig config_for(const std::string& scenario, const std::string& allocator) {
  return testing::make_run_config(scenario, allocator, 256_MiB);
}

// Every block freed, and on a device nothing left behind (after a managed run the driver may
// have given back memory of its own, so free memory may be higher there, never lower).
void expect_everything_freed(const RunResult& r) {
  EXPECT_EQ(r.allocations, r.frees);
  if (r.cleanup) {
    const long long missing = r.cleanup->difference();
    EXPECT_LE(missing, static_cast<long long>(kDevicePageBytes))
        << "device free memory before " << r.cleanup->device_free_before << ", after "
        << r.cleanup->device_free_after;
    if (r.allocator != "managed") {
      EXPECT_GE(missing, -static_cast<long long>(kDevicePageBytes));
    }
  }
}

RunResult interrupted_run(const std::string& allocator) {
  std::atomic<bool> stop{false};
  RunConfig config = config_for("test-runs-until-stopped", allocator);
  config.stop = &stop;
  config.progress_interval = std::chrono::milliseconds(20);
  config.progress = [&](const ProgressSnapshot& s) {
    if (s.events > 1000) stop.store(true);
  };
  return run_scenario(config);
}

TEST(ExitPaths, AScenarioThatReturnsAfterTheStopIsInterruptedNotCompleted_OnSim) {
  std::atomic<bool> stop{false};
  RunConfig config = config_for("test-returns-when-stopped", "sim");
  config.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop.store(true);
  });
  const RunResult r = run_scenario(config);
  stopper.join();
  EXPECT_EQ(r.outcome, Outcome::interrupted);
  expect_everything_freed(r);
}

TEST(ExitPaths, AScenarioThatReturnsAfterItsTimeoutTimedOut_OnSim) {
  RunConfig config = config_for("test-returns-when-stopped", "sim");
  config.timeout = std::chrono::milliseconds(100);
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.outcome, Outcome::timeout);
  expect_everything_freed(r);
}

TEST(ExitPaths, AThrowingScenarioIsAnErrorWithEverythingFreed_OnSim) {
  const RunResult r = run_scenario(config_for("test-throws-mid-run", "sim"));
  EXPECT_EQ(r.outcome, Outcome::error);
  EXPECT_NE(r.error_message.find("plugin bug"), std::string::npos);
  EXPECT_EQ(r.allocations, 10U);
  expect_everything_freed(r);
}

TEST(ExitPaths, AnInterruptedRunStopsAndFreesEverything_OnSim) {
  const RunResult r = interrupted_run("sim");
  EXPECT_EQ(r.outcome, Outcome::interrupted);
  EXPECT_GT(r.allocations, 1000U / 3);
  expect_everything_freed(r);
}

class GpuExitPaths : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuExitPaths, AThrowingScenarioReturnsAllDeviceMemory) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_scenario(config_for("test-throws-mid-run", GetParam()));
  EXPECT_EQ(r.outcome, Outcome::error);
  ASSERT_TRUE(r.cleanup.has_value());
  expect_everything_freed(r);
}

TEST_P(GpuExitPaths, AnInterruptedRunReturnsAllDeviceMemory) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = interrupted_run(GetParam());
  EXPECT_EQ(r.outcome, Outcome::interrupted);
  ASSERT_TRUE(r.cleanup.has_value());
  expect_everything_freed(r);
}

INSTANTIATE_TEST_SUITE_P(RealBackends, GpuExitPaths, ::testing::Values("cuda", "async", "managed"));

}  // namespace
}  // namespace oomlab
