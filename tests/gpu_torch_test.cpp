// The `torch` allocator with upstream=cuda: its segments are real cudaMalloc calls (or pages of the
// CUDA virtual-memory API, or a pool configured as PyTorch's) under the ballast, so the driver
// itself refuses at the budget. PyTorch's snapshots must fail where they failed on the sim, the
// frontiers must agree with the sim's, and the device must get every byte back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "run/frontier.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;

const fs::path kData = fs::path(testing::test_data_dir());

using testing::metric;

RunConfig torch_on(const std::string& upstream, const fs::path& trace, std::uint64_t budget,
                   const std::vector<std::pair<std::string, ParamValue>>& options = {}) {
  RunConfig config = testing::make_run_config("replay", "torch", budget);
  config.params.set("trace", trace.string());
  config.allocator_options.set("upstream", upstream);
  for (const auto& [name, value] : options)
    config.allocator_options.set(name, value);
  config.probe = false;
  return config;
}

void expect_memory_back(const RunResult& r) {
  ASSERT_TRUE(r.cleanup.has_value());
  EXPECT_LE(r.cleanup->difference(), static_cast<std::int64_t>(kDevicePageBytes))
      << "device free memory after the run is lower than before";
}

struct Capped {
  std::string trace;
  std::uint64_t budget;
};

class GpuTorchCapped : public ::testing::TestWithParam<Capped> {};

TEST_P(GpuTorchCapped, FailsAtTheSameEntryOnTheDeviceAsOnTheSim) {
  OOMLAB_REQUIRE_GPU();
  const fs::path trace = kData / GetParam().trace;
  const RunResult sim = run_scenario(torch_on("sim", trace, GetParam().budget));
  const RunResult gpu = run_scenario(torch_on("cuda", trace, GetParam().budget));
  ASSERT_EQ(sim.outcome, Outcome::oom);
  ASSERT_EQ(gpu.outcome, Outcome::oom) << gpu.error_message;
  EXPECT_EQ(metric(gpu, "first_failure_index"), metric(sim, "first_failure_index"));
  EXPECT_EQ(metric(gpu, "first_failure_index"), metric(gpu, "trace_first_failure_index"));
  EXPECT_FALSE(gpu.simulated);
  ASSERT_TRUE(gpu.oom && gpu.oom->cache);
  expect_memory_back(gpu);
}

INSTANTIATE_TEST_SUITE_P(
    Snapshots, GpuTorchCapped,
    ::testing::Values(Capped{"pytorch_gpt_fp32_snapshot.pickle", 8'501'749'350},
                      Capped{"pytorch/grow_cap2g_native.pickle", 2'147'483'648},
                      Capped{"pytorch/grow_cap3g_expandable.pickle", 3'221'225'472}),
    [](const auto& p) {
      std::string name = fs::path(p.param.trace).stem().string();
      for (char& c : name) {
        if (c == '-' || c == '.') c = '_';
      }
      return name;
    });

struct Setting {
  std::string name;
  std::vector<std::pair<std::string, ParamValue>> options;
};

class GpuTorchFrontier : public ::testing::TestWithParam<Setting> {};

// A search on the device, trial by trial under the ballast, ends within 1% of the sim's.
TEST_P(GpuTorchFrontier, AgreesWithTheSimWithinOnePercent) {
  OOMLAB_REQUIRE_GPU();
  const fs::path trace = kData / "pytorch/infer_varlen_native.pickle";
  const FrontierResult sim =
      find_frontier(torch_on("sim", trace, 4_GiB, GetParam().options), kDevicePageBytes, nullptr);
  const FrontierResult gpu =
      find_frontier(torch_on("cuda", trace, 4_GiB, GetParam().options), kDevicePageBytes, nullptr);
  ASSERT_TRUE(sim.answer && gpu.answer);
  const double error =
      std::abs(static_cast<double>(*gpu.answer) - static_cast<double>(*sim.answer)) /
      static_cast<double>(*sim.answer);
  EXPECT_LE(error, 0.01) << GetParam().name << ": device " << *gpu.answer << ", sim "
                         << *sim.answer;
  EXPECT_FALSE(gpu.simulated);
}

INSTANTIATE_TEST_SUITE_P(Settings, GpuTorchFrontier,
                         ::testing::Values(Setting{"native", {}},
                                           Setting{"expandable", {{"expandable_segments", true}}}),
                         [](const auto& p) { return p.param.name; });

// Expandable segments through the virtual-memory API: pages mapped, unmapped at empty_cache and
// OOM, and every page and range given back at the end.
TEST(GpuTorch, ExpandableSegmentsGiveEveryPageBack) {
  OOMLAB_REQUIRE_GPU();
  const RunResult r = run_scenario(torch_on("cuda", kData / "pytorch/train_varlen_native.pickle",
                                            1_GiB, {{"expandable_segments", true}}));
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  EXPECT_GT(r.peak_reserved_bytes, 512_MiB);
  EXPECT_LE(r.peak_reserved_bytes, 1_GiB);
  expect_memory_back(r);
}

}  // namespace
}  // namespace oomlab
