// frontier exec's search on stand-in devices: a stand-in program reads the budget it was given
// (the fake's ballast) and fails, as a program would, under what it needs. The search must land
// on that need to the resolution, in few runs when the need is what the top run took, and still
// find it when the program's allocator adapts to less memory.
#include "exec/exec_frontier.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "fake_exec_devices.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::testing::FakeDevices;

class ExecFrontierSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-frontier-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    devices_ = std::make_unique<FakeDevices>(dir_ / "usage");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The stand-in: its budget is what the fake left free; it takes USE bytes and fails with the
  // CUDA runtime's words when the budget is under NEED (both shell expressions of $budget).
  oomlab::ExecFrontier search(const std::string& need, const std::string& use) {
    const std::string usage = (dir_ / "usage").string();
    const std::string script =
        "budget=$((" + std::to_string(FakeDevices::kFree) + " - $(cat " + usage +
        ".ballast))); use=$((" + use + ")); echo $use > " + usage + "; sleep 0.03; if [ $budget " +
        "-lt $((" + need +
        ")) ]; then echo 'CUDA error: out of memory (cudaErrorMemoryAllocation)'" +
        " >&2; exit 1; fi";
    oomlab::ExecConfig config;
    config.command = {"/bin/sh", "-c", script};
    config.interval = 2ms;
    config.environment = oomlab::Environment{};
    config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{8_GiB}};
    return oomlab::find_exec_frontier(config, *devices_,
                                      {.resolution_bytes = 16_MiB, .confirm = 1});
  }

  fs::path dir_;
  std::unique_ptr<FakeDevices> devices_;
};

TEST_F(ExecFrontierSearch, AProgramThatNeedsWhatItTookIsFoundInAFewRuns) {
  const std::uint64_t need = 3_GiB + 100_MiB;
  const oomlab::ExecFrontier f = search(std::to_string(need), std::to_string(need));
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, oomlab::ceil_div(need, 16_MiB) * 16_MiB);
  EXPECT_EQ(f.beyond.value_or(0) + 16_MiB, *f.answer);
  EXPECT_LE(f.trials.size(), 6U) << "top, the peak, a step or two, and 2 to confirm";
  EXPECT_EQ(f.confirmation.runs, 1U);
  EXPECT_EQ(f.confirmation.answer_completed, 1U);
  EXPECT_EQ(f.confirmation.beyond_completed, 0U);
}

TEST_F(ExecFrontierSearch, AProgramWhoseAllocatorAdaptsIsFollowedBelowItsPeak) {
  // It takes all it is given up to 4 GiB, and completes on anything from 1.5 GiB.
  const std::uint64_t need = 1536_MiB;
  const oomlab::ExecFrontier f =
      search(std::to_string(need), "budget < 4294967296 ? budget : 4294967296");
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, need);
  // The first probe is 4 GiB + 2 MiB (257 units of 16 MiB), the frontier 96 units: steps double
  // down from the probe, then bisect: 2·log2(162) + 3 runs at most, --confirm's left out.
  const auto searched = std::count_if(f.trials.begin(), f.trials.end(), [](const auto& t) {
    return t.role != oomlab::TrialRole::confirm;
  });
  EXPECT_LE(static_cast<double>(searched), 2.0 * std::log2(257.0 - 96.0 + 1.0) + 3.0);
  EXPECT_EQ(f.trials[1].role, oomlab::TrialRole::probe);
  EXPECT_EQ(f.trials[1].budget_bytes, 4_GiB + 16_MiB);
}

TEST_F(ExecFrontierSearch, AProgramThatFailsAtTheTopIsNoSearch) {
  const oomlab::ExecFrontier f = search("100 * 1073741824", "0");
  EXPECT_FALSE(f.answer);
  EXPECT_EQ(f.trials.size(), 1U);
  EXPECT_EQ(f.beyond.value_or(0), 8_GiB);
  EXPECT_EQ(f.trials.front().outcome, oomlab::Outcome::oom);
}

}  // namespace
