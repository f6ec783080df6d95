// frontier exec's search on stand-in devices: a stand-in program reads the budget it was given
// (the fake's ballast) and fails, as a program would, under what it needs. The search must land
// on that need to the resolution: in three runs from a right prediction, and by steps doubling
// away from the first probe (a wrong prediction, or what the top run took when there is none)
// within 2·log2(distance) + 3 runs, whether the need lies near the probe, far below or far above.
#include "exec/exec_frontier.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "fake_exec_devices.hpp"
#include "reports/searches/search_json.hpp"

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

  // How the stand-in says it ran out of memory (a shell command; $budget is set).
  std::string oom_echo_ = "echo 'CUDA error: out of memory (cudaErrorMemoryAllocation)'";

  // The stand-in: its budget is what the fake left free; it takes USE bytes and fails with the
  // CUDA runtime's words when the budget is under NEED (both shell expressions of $budget).
  oomlab::ExecFrontier search(const std::string& need, const std::string& use,
                              std::optional<std::uint64_t> prediction = std::nullopt) {
    const std::string usage = (dir_ / "usage").string();
    const std::string script = "budget=$((" + std::to_string(FakeDevices::kFree) + " - $(cat " +
                               usage + ".ballast))); use=$((" + use + ")); echo $use > " + usage +
                               "; sleep 0.03; if [ $budget " + "-lt $((" + need + ")) ]; then " +
                               oom_echo_ + " >&2; exit 1; fi";
    oomlab::ExecConfig config;
    config.command = {"/bin/sh", "-c", script};
    config.interval = 2ms;
    config.environment = oomlab::Environment{};
    config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{8_GiB}};
    oomlab::ExecSearch options{.resolution_bytes = 16_MiB, .confirm = confirm_};
    options.predict = [prediction](oomlab::RunResult&) { return prediction; };
    return oomlab::find_exec_frontier(config, *devices_, options);
  }

  // frontier exec's JSON, as the command writes it.
  static nlohmann::ordered_json json_of(const oomlab::ExecFrontier& f) {
    const oomlab::SearchSubject subject{
        .scenario = "exec", .command = {"job"}, .allocator = "exec"};
    return oomlab::frontier_json(subject, f, 16_MiB, "the answer");
  }

  // The search's runs, --confirm's left out.
  static std::size_t search_runs(const oomlab::ExecFrontier& f) {
    return static_cast<std::size_t>(
        std::count_if(f.trials.begin(), f.trials.end(),
                      [](const oomlab::Trial& t) { return t.role != oomlab::TrialRole::confirm; }));
  }

  fs::path dir_;
  std::unique_ptr<FakeDevices> devices_;
  unsigned confirm_ = 1;
};

TEST_F(ExecFrontierSearch, AProgramThatNeedsWhatItTookIsFoundInAFewRuns) {
  const std::uint64_t need = 3_GiB + 100_MiB;
  const oomlab::ExecFrontier f = search(std::to_string(need), std::to_string(need));
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, oomlab::ceil_div(need, 16_MiB) * 16_MiB);
  EXPECT_EQ(*f.beyond + 16_MiB, *f.answer);
  EXPECT_LE(f.trials.size(), 5U) << "top, the peak, one step under it, and 2 to confirm";
  EXPECT_EQ(f.trials.back().role, oomlab::TrialRole::confirm);
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
  // The first probe is 4 GiB + 2 MiB (257 units of 16 MiB); the frontier 96 units: 2·log2(162) +
  // 3 runs at most, where bisecting from zero after three steps took 4 more than bisection.
  EXPECT_LE(static_cast<double>(search_runs(f)), 2.0 * std::log2(257.0 - 96.0 + 1.0) + 3.0);
  EXPECT_EQ(f.trials[1].role, oomlab::TrialRole::probe);
  EXPECT_EQ(f.trials[1].budget_bytes, 4_GiB + 16_MiB);
}

TEST_F(ExecFrontierSearch, AFrontierFarAboveWhatTheTopRunShowedIsFoundByDoublingUp) {
  // It shows 256 MiB at any budget but fails under 2.5 GiB (a late burst the samples missed).
  const std::uint64_t need = 2560_MiB;
  const oomlab::ExecFrontier f = search(std::to_string(need), "268435456");
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, need);
  EXPECT_LE(static_cast<double>(search_runs(f)), 2.0 * std::log2(160.0 - 17.0 + 1.0) + 3.0);
  EXPECT_FALSE(f.predicted);
  EXPECT_TRUE(f.prediction_note.starts_with("no prediction")) << f.prediction_note;
  const auto doc = json_of(f);
  EXPECT_EQ(doc.at("runs"), f.trials.size()) << "the top and --confirm's runs included";
  EXPECT_TRUE(doc.at("predicted_bytes").is_null());
  EXPECT_TRUE(doc.at("model").is_null());
  EXPECT_EQ(doc.at("trials")[1].at("role"), "probe");
}

TEST_F(ExecFrontierSearch, ARightPredictionIsVerifiedInThreeRuns) {
  confirm_ = 0;
  const std::uint64_t need = 2_GiB + 48_MiB;
  const oomlab::ExecFrontier f = search(std::to_string(need), "4294967296", need);
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, need);
  EXPECT_EQ(f.beyond, need - 16_MiB);
  ASSERT_EQ(f.trials.size(), 3U) << "the top, the prediction, one resolution under it";
  EXPECT_EQ(f.trials[0].role, oomlab::TrialRole::top);
  EXPECT_EQ(f.trials[1].role, oomlab::TrialRole::prediction);
  EXPECT_EQ(f.trials[1].budget_bytes, need);
  EXPECT_TRUE(f.trials[1].verifies_prediction);
  EXPECT_EQ(f.trials[2].budget_bytes, need - 16_MiB);
  EXPECT_TRUE(f.trials[2].verifies_prediction);
  EXPECT_EQ(f.predicted, need);
  const auto doc = json_of(f);
  EXPECT_EQ(doc.at("runs"), 3);
  EXPECT_EQ(doc.at("predicted_bytes"), need);
  EXPECT_EQ(doc.at("frontier_bytes"), need);
  EXPECT_EQ(doc.at("trials")[1].at("role"), "prediction");
  EXPECT_EQ(doc.at("trials")[2].at("verifies_prediction"), true);
}

TEST_F(ExecFrontierSearch, AWrongPredictionIsCorrectedByDoublingStepsFromIt) {
  confirm_ = 0;
  const std::uint64_t need = 2_GiB + 48_MiB;
  // 20 units too low, then 30 units too high: found either way, in few runs past the prediction.
  for (const std::uint64_t predicted : {need - 320_MiB, need + 480_MiB}) {
    const oomlab::ExecFrontier f = search(std::to_string(need), "4294967296", predicted);
    ASSERT_TRUE(f.answer);
    EXPECT_EQ(*f.answer, need) << predicted;
    const double distance = std::fabs(static_cast<double>(need) - static_cast<double>(predicted)) /
                            static_cast<double>(16_MiB);
    EXPECT_LE(static_cast<double>(f.trials.size()), 2.0 * std::log2(distance + 1.0) + 3.0);
    EXPECT_EQ(f.trials[1].budget_bytes, predicted);
    EXPECT_EQ(f.trials[1].outcome,
              predicted < need ? oomlab::Outcome::oom : oomlab::Outcome::completed);
    for (std::size_t i = 1; i < f.trials.size(); ++i)
      EXPECT_GE(f.trials[i].budget_bytes, need - 512_MiB) << "the steps stay near the prediction";
  }
}

TEST_F(ExecFrontierSearch, APredictionThatRunsOutIsReaimedByPyTorchsOwnFigures) {
  confirm_ = 0;
  const std::uint64_t need = 7_GiB;
  // PyTorch's words: a 64 MiB request refused with what the budget lacks less than it and its
  // page free (in MiB, as PyTorch writes it).
  oom_echo_ =
      "echo \"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. "
      "GPU 0 has a total capacity of 79.18 GiB of which $((66 - (" +
      std::to_string(need) + " - budget) / 1048576)).00 MiB is free.\"";
  const oomlab::ExecFrontier f = search(std::to_string(need), "4294967296", need - 32_MiB);
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer, need);
  ASSERT_EQ(f.trials.size(), 4U) << "the top, the prediction, the re-aim, one resolution under it";
  EXPECT_EQ(f.trials[1].free_bytes, 34_MiB) << f.trials[1].message;
  EXPECT_EQ(f.trials[2].role, oomlab::TrialRole::reaim);
  EXPECT_EQ(f.trials[2].budget_bytes, need);
  EXPECT_EQ(json_of(f).at("trials")[2].at("role"), "re-aim");
}

TEST_F(ExecFrontierSearch, AProgramThatFailsAtTheTopIsNoSearch) {
  const oomlab::ExecFrontier f = search("100 * 1073741824", "0");
  EXPECT_FALSE(f.answer);
  EXPECT_EQ(f.trials.size(), 1U);
  EXPECT_EQ(f.beyond, 8_GiB);
  EXPECT_EQ(f.trials.front().outcome, oomlab::Outcome::oom);
}

}  // namespace
