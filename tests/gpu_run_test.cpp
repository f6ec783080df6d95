// Whole runs on a real device: each backend OOMs with the right cause at the budget, the managed
// backend never goes past the budget, and the device gets every byte back.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/kernels.hpp"
#include "oomlab/registry.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

// Half the budget is taken behind oomlab's back, as another process on the GPU would, then the
// scenario allocates until the device says no.
class ExternalPressure final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-external-pressure"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: another process takes memory";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    struct Other {
      void* ptr = nullptr;
      ~Other() { (void)cudaFree(ptr); }
    } other;
    ASSERT_EQ(cudaMalloc(&other.ptr, ctx.budget_bytes() / 2), cudaSuccess);
    while (ctx.allocate(64ULL << 20U, "chunk").ok()) {
    }
  }
};
OOMLAB_REGISTER_SCENARIO(ExternalPressure)

// Allocates nothing: for checks of the run's set-up alone.
class Nothing final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-nothing"; }
  [[nodiscard]] std::string_view summary() const override { return "test only: allocates nothing"; }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& /*ctx*/) override {}
};
OOMLAB_REGISTER_SCENARIO(Nothing)

// Writes every block it takes, as a program's first kernel would, until it is refused: the
// newest blocks' writes are still queued on the stream when the refusal comes. Then it waits for
// the whole device and reads free memory: what the device holds once the writes have landed.
class WriteUntilRefused final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "test-write-until-refused"; }
  [[nodiscard]] std::string_view summary() const override {
    return "test only: fills every block it takes";
  }
  [[nodiscard]] ParamSpec params() const override { return {}; }
  void run(RunContext& ctx) override {
    for (Block block = ctx.allocate(16ULL << 20U, "written"); block;
         block = ctx.allocate(16ULL << 20U, "written")) {
      ctx.fill(block);
    }
    std::size_t free = 0;
    std::size_t total = 0;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    ctx.metric("device_free_settled", static_cast<double>(free));
  }
};
OOMLAB_REGISTER_SCENARIO(WriteUntilRefused)

using namespace oomlab::literals;
constexpr std::uint64_t kBudget = 512_MiB;

RunResult run_on(const std::string& allocator) {
  RunConfig config = testing::make_run_config("fragmentation", allocator, kBudget);
  return run_scenario(config);
}

// Nothing left behind: device free memory after the run is where it was, to 2 MiB. After a
// managed run it may be higher (the driver gives back memory of its own), never lower.
void expect_clean(const RunResult& r) {
  ASSERT_TRUE(r.cleanup.has_value());
  const long long missing = r.cleanup->difference();
  EXPECT_LE(missing, static_cast<long long>(kDevicePageBytes))
      << "free before " << r.cleanup->device_free_before << ", after "
      << r.cleanup->device_free_after;
  if (r.allocator != "managed") {
    EXPECT_GE(missing, -static_cast<long long>(kDevicePageBytes))
        << "free memory grew during the run";
  }
  EXPECT_EQ(r.allocations, r.frees) << "every block the scenario held was freed";
}

TEST(GpuRun, CudaMallocFragmentsWithThreePercentLive) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_on("cuda");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::fragmentation) << r.oom->diagnosis.evidence;
  EXPECT_LE(r.oom->live_bytes, kBudget / 20);
  EXPECT_EQ(r.oom->source, "driver");
  EXPECT_EQ(r.oom->error, "cudaErrorMemoryAllocation");
  EXPECT_GT(r.ballast_bytes, 0U);
  EXPECT_FALSE(r.simulated);
  ASSERT_TRUE(r.device.has_value());
  expect_clean(r);
}

TEST(GpuRun, AsyncPoolFragmentsWithThreePercentLive) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_on("async");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::fragmentation) << r.oom->diagnosis.evidence;
  EXPECT_LE(r.oom->live_bytes, kBudget / 20);
  EXPECT_GE(r.oom->reserved_bytes, kBudget / 2) << "the pool keeps chunks that hold live blocks";
  EXPECT_GE(r.oom->allocator_used_bytes, r.oom->live_bytes) << "the pool's UsedMemCurrent";
  EXPECT_LT(r.oom->allocator_used_bytes, r.oom->live_bytes + 16_MiB);
  expect_clean(r);
}

TEST(GpuRun, ManagedStaysWithinTheBudgetAndFragmentsLikeCudaMalloc) {
  // Freed managed blocks keep their 2 MiB pages while a neighbour lives, so after the frees the
  // device still holds the whole cap and the first large request is refused by it.
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_on("managed");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_EQ(r.oom->source, "budget-cap");
  EXPECT_FALSE(r.oom->error.has_value());
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::fragmentation) << r.oom->diagnosis.evidence;
  EXPECT_LE(r.oom->live_bytes, kBudget / 20);
  EXPECT_EQ(r.ballast_bytes, 0U);
  ASSERT_TRUE(r.cap_bytes.has_value());
  EXPECT_LT(*r.cap_bytes, kBudget);
  EXPECT_LE(r.peak_reserved_bytes, kBudget) << "device memory taken by managed blocks";
  EXPECT_LE(r.peak_live_bytes, *r.cap_bytes);
  expect_clean(r);
}

TEST(GpuRun, ManagedOomRecordIsReadAfterTheRunsKernelsHaveRun) {
  // A managed block takes device pages only once written, so a record read while the fills are
  // queued misses them (measured: 0 B reserved with 496 MiB written). The check is free memory
  // against the device's own figure after the writes, both read moments apart: `reserved` is free
  // memory's drop since the start, which the driver's own managed bookkeeping also moves.
  OOMLAB_REQUIRE_GPU();
  RunConfig config = testing::make_run_config("test-write-until-refused", "managed", kBudget);
  config.probe = false;  // nothing between the record and the scenario's own reading
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_EQ(r.oom->source, "budget-cap");
  EXPECT_GE(r.oom->live_bytes, kBudget / 2);
  const auto metric = std::find_if(r.metrics.begin(), r.metrics.end(),
                                   [](const auto& m) { return m.first == "device_free_settled"; });
  ASSERT_NE(metric, r.metrics.end());
  const auto settled = static_cast<std::uint64_t>(metric->second);
  EXPECT_LE(r.oom->device_free_bytes, settled + kDevicePageBytes)
      << "free memory in the record, against the device's once every write has landed";
  EXPECT_GE(r.oom->device_free_bytes + kDevicePageBytes, settled);
  expect_clean(r);
}

TEST(GpuRun, AGpuBudgetOverFreeMemoryIsClamped) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_scenario(testing::make_run_config("test-nothing", "async", 1ULL << 50U));
  ASSERT_FALSE(r.notices.empty());
  EXPECT_NE(r.notices[0].find("clamped"), std::string::npos);
  EXPECT_EQ(r.ballast_bytes, 0U);
  EXPECT_EQ(r.outcome, Outcome::completed);
  expect_clean(r);
}

class GpuExternalPressure : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuExternalPressure, IsToldApartFromTheRunsOwnUse) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r =
      run_scenario(testing::make_run_config("test-external-pressure", GetParam(), kBudget));
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::external_pressure) << r.oom->diagnosis.evidence;
  EXPECT_GE(r.oom->diagnosis.external_bytes, kBudget / 2 - 64_MiB);
  EXPECT_LE(r.oom->diagnosis.external_bytes, kBudget / 2 + 64_MiB);
  expect_clean(r);
}

INSTANTIATE_TEST_SUITE_P(BallastedBackends, GpuExternalPressure,
                         ::testing::Values("cuda", "async"));

TEST(Kernels, FillThenVerifyFindsExactlyTheCorruptedWords) {
  OOMLAB_REQUIRE_GPU();
  DeviceSession session(0);
  kernels::MismatchCounter counter;
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 64_MiB), cudaSuccess);
  kernels::fill(buffer, 64_MiB, 7, session.stream());
  EXPECT_EQ(counter.verify(buffer, 64_MiB, 7, session.stream()), 0U);
  EXPECT_EQ(counter.verify(buffer, 64_MiB, 8, session.stream()), 64_MiB / 8)
      << "another seed, another pattern";
  ASSERT_EQ(cudaMemset(static_cast<char*>(buffer) + 4096, 0, 3 * 8), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(counter.verify(buffer, 64_MiB, 7, session.stream()), 3U);
  ASSERT_EQ(cudaFree(buffer), cudaSuccess);
}

TEST(Kernels, TouchLandsManagedMemoryOnTheDevice) {
  OOMLAB_REQUIRE_GPU();
  DeviceSession session(0);
  void* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 64_MiB), cudaSuccess);
  const std::uint64_t before = session.free_bytes();
  kernels::touch(managed, 64_MiB, session.stream());
  session.synchronize();
  EXPECT_GE(before - session.free_bytes(), 60_MiB);
  ASSERT_EQ(cudaFree(managed), cudaSuccess);
}

}  // namespace
}  // namespace oomlab
