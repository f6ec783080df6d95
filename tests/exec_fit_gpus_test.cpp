// fit exec with trials on several GPUs at once, on stand-in devices: each stand-in program finds
// its device's files by the CUDA_VISIBLE_DEVICES it was given, takes memory that grows with the
// batch, and fails as PyTorch does above what its budget holds. The answer must be the one of
// the search one run at a time, the runs of a round must overlap, and every GPU's ballast must
// be taken and given back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/exec_config.hpp"
#include "exec/exec_fit.hpp"
#include "exec/exec_frontier.hpp"
#include "fake_exec_devices.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::testing::FakeDevices;

class ExecFitGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-fit-gpus-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (int g = 0; g < 4; ++g) {
      const std::string uuid = "GPU-fake-" + std::to_string(g);
      gpus_.push_back(std::make_unique<FakeDevices>(dir_ / uuid, 1, uuid));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<oomlab::ExecDevices*> gpus(std::size_t n) {
    std::vector<oomlab::ExecDevices*> out;
    for (std::size_t g = 0; g < n; ++g)
      out.push_back(gpus_[g].get());
    return out;
  }

  // 256 MiB + 64 MiB a batch, under what its GPU's ballast left; while it runs, a file of its
  // own says so, and the most running at once is kept in `most`.
  oomlab::ExecConfig config(std::uint64_t budget) {
    const std::string d = dir_.string();
    const std::string script =
        "usage=" + d + "/$CUDA_VISIBLE_DEVICES; touch " + d + "/running.$1; n=$(ls " + d +
        "/running.* | wc -l); echo $n >> " + d + "/most; budget=$((" +
        std::to_string(FakeDevices::kFree) +
        " - $(cat $usage.ballast))); use=$((268435456 + 67108864 * $1)); echo $use > $usage; "
        "sleep 0.3; rm -f " +
        d +
        "/running.$1; if [ $use -gt $budget ]; then echo "
        "'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.' >&2; exit 1; "
        "fi";
    oomlab::ExecConfig c;
    c.command = {"/bin/sh", "-c", script, "stand-in", "{batch}"};
    c.interval = 2ms;
    c.environment = oomlab::Environment{};
    c.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{budget}};
    return c;
  }

  [[nodiscard]] int most_at_once() const {
    std::ifstream in(dir_ / "most");
    int most = 0;
    for (int n = 0; in >> n;)
      most = std::max(most, n);
    return most;
  }

  fs::path dir_;
  std::vector<std::unique_ptr<FakeDevices>> gpus_;
};

TEST_F(ExecFitGpus, TheAnswerOfTheSearchOneAtATimeWithARoundsRunsAtOnce) {
  const oomlab::ExecFitSearch search{.range = {.name = "batch", .lo = 1, .hi = 512}};
  const oomlab::FitResult one = oomlab::fit_exec(config(2_GiB), gpus(1), search);
  ASSERT_EQ(one.answer, 28U) << one.stopped;
  const int one_most = most_at_once();
  fs::remove(dir_ / "most");
  const oomlab::FitResult four = oomlab::fit_exec(config(2_GiB), gpus(4), search);
  EXPECT_EQ(four.answer, one.answer) << four.stopped;
  EXPECT_EQ(four.beyond, one.beyond);
  EXPECT_EQ(four.budget_bytes, 2_GiB);
  ASSERT_NE(four.at_beyond(), nullptr);
  EXPECT_EQ(four.at_beyond()->outcome, oomlab::Outcome::oom);
  EXPECT_EQ(one_most, 1) << "one GPU: one run at a time";
  EXPECT_GE(most_at_once(), 2) << "four GPUs: a round's runs at once";
  // The first round is the doubling from 1, in increasing value.
  ASSERT_GE(four.trials.size(), 4U);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(four.trials[i].value, 1U << i);
  for (const auto& g : gpus_) {
    EXPECT_GT(g->holds, 0) << "every GPU ran trials under its own ballast";
    EXPECT_EQ(g->ballast, 0U) << "and gave it back";
  }
}

TEST_F(ExecFitGpus, AGpuRunsOneTrialAtATime) {
  const oomlab::ExecFitSearch search{.range = {.name = "batch", .lo = 1, .hi = 40}};
  const oomlab::FitResult two = oomlab::fit_exec(config(1_GiB), gpus(2), search);
  EXPECT_EQ(two.answer, 12U) << "256 MiB + 64 MiB × 12 = 1 GiB";
  EXPECT_EQ(two.beyond, 13U);
  EXPECT_LE(most_at_once(), 2) << "two GPUs: never more than two runs";
}

TEST_F(ExecFitGpus, FrontierExecOnFourGpusGivesTheSameFrontierAndTrialsSooner) {
  oomlab::ExecConfig c = config(2_GiB);
  c.command.back() = "10";  // 256 MiB + 640 MiB
  // Each run at once is on its own GPU: its file named by it, not by the batch all share.
  for (std::size_t at = c.command[2].find("running.$1"); at != std::string::npos;
       at = c.command[2].find("running.$1", at))
    c.command[2].replace(at, 10, "running.$CUDA_VISIBLE_DEVICES");
  c.snapshot.enabled = false;
  const oomlab::ExecSearch search{.resolution_bytes = 16_MiB};
  const oomlab::ExecFrontier one = oomlab::find_exec_frontier(c, gpus(1), search);
  ASSERT_TRUE(one.answer) << one.stopped;
  EXPECT_GE(*one.answer, 896_MiB);
  EXPECT_LT(*one.answer, 896_MiB + 16_MiB);
  fs::remove(dir_ / "most");
  const oomlab::ExecFrontier four = oomlab::find_exec_frontier(c, gpus(4), search);
  EXPECT_EQ(four.answer, one.answer);
  EXPECT_EQ(four.beyond, one.beyond);
  ASSERT_EQ(four.trials.size(), one.trials.size());
  for (std::size_t i = 0; i < one.trials.size(); ++i) {
    EXPECT_EQ(four.trials[i].budget_bytes, one.trials[i].budget_bytes) << i;
    EXPECT_EQ(four.trials[i].outcome, one.trials[i].outcome) << i;
  }
  EXPECT_LT(four.rounds, one.trials.size()) << "runs at once: fewer rounds than runs";
  EXPECT_GE(most_at_once(), 2);
  for (const auto& g : gpus_)
    EXPECT_EQ(g->ballast, 0U) << "every ballast given back";
}

TEST_F(ExecFitGpus, AProgramOnTwoGpusATrialTakesItsGroupOfThem) {
  // Two groups of two stand-in GPUs: a trial sees both of its group's GPUs, takes the batch's
  // memory on the first, and each group's every device gets the ballast.
  std::vector<std::unique_ptr<FakeDevices>> groups;
  for (int g = 0; g < 2; ++g) {
    const std::string uuid = "GPU-pair-" + std::to_string(g);
    groups.push_back(std::make_unique<FakeDevices>(dir_ / uuid, 2, uuid));
  }
  oomlab::ExecConfig c = config(1_GiB);
  const std::string d = dir_.string();
  std::string& script = c.command[2];
  script = "echo $CUDA_VISIBLE_DEVICES >> " + d +
           "/seen; CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES%%,*}; " + script;
  const std::vector<oomlab::ExecDevices*> pairs = {groups[0].get(), groups[1].get()};
  const oomlab::FitResult two =
      oomlab::fit_exec(c, pairs, {.range = {.name = "batch", .lo = 1, .hi = 40}});
  EXPECT_EQ(two.answer, 12U) << two.stopped;
  std::ifstream seen(dir_ / "seen");
  int trials = 0;
  for (std::string line; std::getline(seen, line); ++trials) {
    EXPECT_TRUE(line == "GPU-pair-0,GPU-pair-01" || line == "GPU-pair-1,GPU-pair-11") << line;
  }
  EXPECT_EQ(trials, static_cast<int>(two.runs()));
  for (const auto& g : groups) {
    EXPECT_GT(g->holds, 0);
    EXPECT_EQ(g->ballasts, (std::vector<std::uint64_t>{0, 0})) << "every device's given back";
  }
}

TEST(GpusPerTrial, ACountGpusIsAMultipleOf) {
  oomlab::cli::ExecOptions o;
  o.gpus = "0,1,2,3";
  EXPECT_EQ(oomlab::cli::gpus_per_trial(o, 4), 1U);
  o.gpus_per_trial = "2";
  EXPECT_EQ(oomlab::cli::gpus_per_trial(o, 4), 2U);
  o.gpus_per_trial = "3";
  EXPECT_THROW((void)oomlab::cli::gpus_per_trial(o, 4), oomlab::Error);
  o.gpus_per_trial = "0";
  EXPECT_THROW((void)oomlab::cli::gpus_per_trial(o, 4), oomlab::Error);
  o.gpus_per_trial = "two";
  EXPECT_THROW((void)oomlab::cli::gpus_per_trial(o, 4), oomlab::Error);
}

}  // namespace
