// The fragmentation scenario on the sim: the H100 effect (OOM with most memory free), and the
// contrasts that show it is the pattern, not the budget, that fails.
#include <gtest/gtest.h>

#include "oomlab/error.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using testing::make_run_config;

using testing::metric;

TEST(Fragmentation, OomsWithMostMemoryFree_OnSim) {
  const RunResult r = run_scenario(make_run_config("fragmentation", "sim", 1_GiB));
  ASSERT_EQ(r.outcome, Outcome::oom);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::fragmentation);
  EXPECT_LE(r.oom->live_bytes, 1_GiB / 20) << "live at OOM must be at most 5% of the budget";
  EXPECT_EQ(r.oom->request_bytes, 2_MiB);
  EXPECT_EQ(r.oom->largest_free_bytes, 0U);
  EXPECT_EQ(r.oom->phase, "grow");
  EXPECT_EQ(r.oom->source, "driver");
  EXPECT_DOUBLE_EQ(metric(r, "live_fraction"), 1.0 / 32);
  EXPECT_EQ(metric(r, "fill_blocks"), 16384);
  EXPECT_TRUE(r.simulated);
}

TEST(Fragmentation, LargerBlocksLeaveWholePagesFree_OnSim) {
  // 1 MiB blocks, 1 in 4 kept: half the pages are free, and the driver-like remapping serves a
  // request as large as all of them; the OOM comes only when the request passes free memory.
  RunConfig config = make_run_config("fragmentation", "sim", 1_GiB);
  config.params.set("block", Bytes{1_MiB});
  config.params.set("keep", Fraction{1, 4});
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(metric(r, "largest_free_bytes"), 512_MiB);
  EXPECT_EQ(metric(r, "largest_request_ok_bytes"), 512_MiB);
  EXPECT_EQ(r.oom->request_bytes, 1_GiB);
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::capacity);
}

TEST(Fragmentation, RandomPatternIsReproducibleFromTheSeed) {
  RunConfig config = make_run_config("fragmentation", "sim", 256_MiB);
  config.params.set("pattern", std::string("random"));
  config.params.set("min", Bytes{4_KiB});
  config.params.set("max", Bytes{256_KiB});
  config.seed = 42;
  const RunResult a = run_scenario(config);
  const RunResult b = run_scenario(config);
  EXPECT_EQ(a.oom->event, b.oom->event);
  EXPECT_EQ(a.oom->live_bytes, b.oom->live_bytes);
  config.seed = 43;
  const RunResult c = run_scenario(config);
  EXPECT_NE(a.oom->live_bytes, c.oom->live_bytes);
}

TEST(Fragmentation, NoProbeInfersTheCause) {
  RunConfig config = make_run_config("fragmentation", "sim", 256_MiB);
  config.probe = false;
  const RunResult r = run_scenario(config);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_FALSE(r.oom->largest_free_bytes.has_value());
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::fragmentation);
}

TEST(Fragmentation, RejectsContradictoryParameters) {
  RunConfig config = make_run_config("fragmentation", "sim", 256_MiB);
  config.params.set("min", Bytes{1_MiB});
  config.params.set("max", Bytes{4_KiB});
  try {
    (void)run_scenario(config);
    FAIL() << "min > max was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("min <= max"), std::string::npos);
  }
}

TEST(Runner, ClampsABudgetOverTheModelledCardWithANotice) {
  RunConfig config = make_run_config("fragmentation", "sim", 1_TiB);
  config.allocator_options.set("total", Bytes{256_MiB});
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.budget_bytes, 256_MiB);
  ASSERT_EQ(r.notices.size(), 1U);
  EXPECT_NE(r.notices[0].find("clamped"), std::string::npos);
}

TEST(Runner, PercentAndAllBudgetsReferToTheModelledCard) {
  RunConfig config = make_run_config("fragmentation", "sim", 0);
  config.allocator_options.set("total", Bytes{1_GiB});
  config.budget = {.kind = BudgetRequest::Kind::percent, .percent = Percent{25.0}};
  EXPECT_EQ(run_scenario(config).budget_bytes, 256_MiB);
  config.budget = {.kind = BudgetRequest::Kind::all};
  EXPECT_EQ(run_scenario(config).budget_bytes, 1_GiB);
}

}  // namespace
}  // namespace oomlab
