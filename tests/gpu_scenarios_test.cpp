// Every scenario on every real backend at a 2 GiB budget: a recorded OOM (or a found maximum),
// data that stayed intact, and the device's memory back. And a corruption planted behind
// oomlab's back is caught.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <tuple>

#include "oomlab/registry.hpp"
#include "run/runner.hpp"
#include "scenarios/training_model.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

double metric(const RunResult& r, const std::string& name) {
  for (const auto& [n, v] : r.metrics) {
    if (n == name) return v;
  }
  return -1;
}

class EveryScenario : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(EveryScenario, EndsInARecordedOomWithDataIntactAndMemoryBack) {
  OOMLAB_REQUIRE_GPU();
  const auto& [scenario, allocator] = GetParam();
  const RunResult r = run_scenario(testing::make_run_config(scenario, allocator, 2_GiB));
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_GT(r.integrity_checked, 0U) << "sampled blocks were verified";
  EXPECT_EQ(r.integrity_corrupted, 0U);
  EXPECT_EQ(r.allocations, r.frees);
  ASSERT_TRUE(r.cleanup.has_value());
  EXPECT_LE(r.cleanup->difference(), static_cast<std::int64_t>(kDevicePageBytes))
      << "memory left behind";
  if (scenario == "growing-batch") {
    EXPECT_GT(metric(r, "max_batch"), 0);
    // Where the scenario's own model says the batch past the largest needs more than the budget,
    // the device's OOM there is capacity, and no advice for fragmentation is given.
    const auto next = static_cast<std::uint64_t>(metric(r, "max_batch")) + 1;
    if (training::page_model_peak(training::shape_from(r.params), next, 2, kDevicePageBytes) >
        2_GiB) {
      EXPECT_EQ(r.oom->diagnosis.cause, Cause::capacity) << r.oom->diagnosis.evidence;
      EXPECT_EQ(r.oom->diagnosis.advice.find("expandable_segments"), std::string::npos);
    }
  }
  if (scenario == "mixed-precision") {
    EXPECT_GT(metric(r, "max_batch_fp16"), metric(r, "max_batch_fp32"));
  }
  if (scenario == "leak") {
    EXPECT_EQ(r.oom->diagnosis.cause, Cause::leak) << r.oom->diagnosis.evidence;
    EXPECT_NEAR(metric(r, "leak_bytes_per_step"), 4.0 * (1 << 20), 0.05 * 4.0 * (1 << 20));
  }
}

INSTANTIATE_TEST_SUITE_P(ScenariosTimesBackends, EveryScenario,
                         ::testing::Combine(::testing::Values("fragmentation", "growing-batch",
                                                              "mixed-precision", "leak"),
                                            ::testing::Values("cuda", "async", "managed")),
                         [](const auto& test) {
                           std::string name =
                               std::get<0>(test.param) + "_on_" + std::get<1>(test.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Fills blocks, then overwrites one with cudaMemset behind oomlab's back, as a stray kernel of the
// program under test would.
class PlantsCorruption final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-plants-corruption"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: overwrites a live block";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    std::vector<Block> blocks;
    for (int i = 0; i < 8; ++i)
      blocks.push_back(ctx.allocate(4_MiB, "victim"));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemset(static_cast<char*>(blocks[5].ptr) + 1_MiB, 0x5A, 4096), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
};
OOMLAB_REGISTER_SCENARIO(PlantsCorruption)

TEST(Integrity, CatchesABlockOverwrittenBehindItsBack) {
  OOMLAB_REQUIRE_GPU();
  RunConfig config = testing::make_run_config("test-plants-corruption", "async", 1_GiB);
  config.verify = VerifyMode::all;
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(r.integrity_checked, 8U);
  EXPECT_EQ(r.integrity_corrupted, 1U);
  EXPECT_EQ(r.integrity_corrupted_words, 4096U / 8);
}

TEST(Integrity, SampleModeStillChecksLargeBlocksAndOffChecksNothing) {
  OOMLAB_REQUIRE_GPU();
  RunConfig config = testing::make_run_config("test-plants-corruption", "cuda", 1_GiB);
  config.verify = VerifyMode::sample;  // 4 MiB blocks: only the first of 64 is filled
  EXPECT_EQ(run_scenario(config).integrity_checked, 1U);
  config.verify = VerifyMode::off;
  EXPECT_EQ(run_scenario(config).integrity_checked, 0U);
}

}  // namespace
}  // namespace oomlab
