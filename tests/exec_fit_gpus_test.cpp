// fit exec with trials on several GPUs at once, on stand-in devices: each stand-in program finds
// its device's files by the CUDA_VISIBLE_DEVICES it was given, takes memory that grows with the
// batch, and fails as PyTorch does above what its budget holds. The answer must be the one of
// the search one run at a time, the runs of a round must overlap, and every GPU's ballast must
// be taken and given back. fit exec --grid on the same stand-ins: every combination of the knobs
// gets the answer its own search gives one GPU at a time, whatever the GPUs; an empty value drops
// its word.
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
#include "exec/exec_grid.hpp"
#include "fake_exec_devices.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::GridAxis;
using oomlab::testing::FakeDevices;

// Four stand-in GPUs, a folder of their files each, shared by the suites below.
class StandInGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("oomlab-" + std::string(test->test_suite_name()) + "-" +
                                        std::to_string(::getpid()) + "-" + test->name());
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

class ExecFitGpus : public StandInGpus {
 protected:
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

TEST(GridCombinations, TheFirstKnobChangesSlowest) {
  const std::vector<GridAxis> axes = {{.name = "a", .values = {"", "x"}},
                                      {.name = "b", .values = {"1", "2", "3"}}};
  const auto all = oomlab::grid_combinations(axes);
  ASSERT_EQ(all.size(), 6U);
  EXPECT_EQ(all[0], (std::vector<std::string>{"", "1"}));
  EXPECT_EQ(all[2], (std::vector<std::string>{"", "3"}));
  EXPECT_EQ(all[3], (std::vector<std::string>{"x", "1"}));
  EXPECT_EQ(all[5], (std::vector<std::string>{"x", "3"}));
}

TEST(GridCombinations, AnEmptyValueDropsTheWordItLeavesEmpty) {
  oomlab::ExecConfig base;
  base.command = {"python3", "run.py", "--batch", "{batch}", "{vae}", "--mode={mode}", ""};
  const std::vector<GridAxis> axes = {{.name = "vae", .values = {"", "--vae-slicing"}},
                                      {.name = "mode", .values = {"", "fast"}}};
  const oomlab::ExecConfig off = oomlab::config_at_combination(base, axes, {"", ""});
  EXPECT_EQ(off.command,
            (std::vector<std::string>{"python3", "run.py", "--batch", "{batch}", "--mode=", ""}))
      << "only a word a value emptied goes; one the user left empty stays";
  const oomlab::ExecConfig on =
      oomlab::config_at_combination(base, axes, {"--vae-slicing", "fast"});
  EXPECT_EQ(on.command, (std::vector<std::string>{"python3", "run.py", "--batch", "{batch}",
                                                  "--vae-slicing", "--mode=fast", ""}));
  ASSERT_EQ(on.program_environment.size(), 2U);
  EXPECT_EQ(on.program_environment[0],
            (std::pair<std::string, std::string>{"OOMLAB_FIT_VAE", "--vae-slicing"}));
  EXPECT_EQ(on.program_environment[1],
            (std::pair<std::string, std::string>{"OOMLAB_FIT_MODE", "fast"}));
}

TEST(GridGroups, FewerCombinationsThanGpusShareThemOutMoreTakeOneEach) {
  using Groups = std::vector<std::vector<std::size_t>>;
  EXPECT_EQ(oomlab::grid_groups(3, 4), (Groups{{0, 1}, {2}, {3}}));
  EXPECT_EQ(oomlab::grid_groups(2, 4), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(oomlab::grid_groups(8, 2), (Groups{{0}, {1}}));
  EXPECT_EQ(oomlab::grid_groups(1, 1), (Groups{{0}}));
}

class ExecGrid : public StandInGpus {
 protected:
  // 256 MiB + 64 MiB a batch, half that a batch with --slim and half again with fp16; a file per
  // GPU while a trial runs there (two at once on one GPU would be seen), and how many GPUs were
  // busy at once kept in `most`.
  oomlab::ExecConfig config() {
    const std::string d = dir_.string();
    const std::string script =
        "b=$1; shift; per=67108864; for a in \"$@\"; do case $a in --slim) per=$((per / 2));; "
        "fp16) per=$((per / 2));; esac; done; usage=" +
        d + "/$CUDA_VISIBLE_DEVICES; [ -e " + d +
        "/running.$CUDA_VISIBLE_DEVICES ] && echo twice >> " + d + "/twice; touch " + d +
        "/running.$CUDA_VISIBLE_DEVICES; n=$(ls " + d + "/running.* | wc -l); echo $n >> " + d +
        "/most; budget=$((" + std::to_string(FakeDevices::kFree) +
        " - $(cat $usage.ballast))); use=$((268435456 + per * b)); echo $use > $usage; "
        "sleep 0.1; rm -f " +
        d +
        "/running.$CUDA_VISIBLE_DEVICES; if [ $use -gt $budget ]; then echo "
        "'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB.' >&2; exit 1; "
        "fi";
    oomlab::ExecConfig c;
    c.command = {"/bin/sh", "-c", script, "stand-in", "{batch}", "{slim}", "{precision}"};
    c.interval = 2ms;
    c.environment = oomlab::Environment{};
    c.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{2_GiB}};
    return c;
  }

  oomlab::ExecGridSearch search() const {
    return {.axes = {{.name = "slim", .values = {"", "--slim"}},
                     {.name = "precision", .values = {"fp32", "fp16"}}},
            .fit = {.range = {.name = "batch", .lo = 1, .hi = 512}}};
  }
};

TEST_F(ExecGrid, EachCombinationGetsItsOwnAnswerTheSameOnOneGpuAsOnFour) {
  std::size_t started = 0;
  std::size_t done = 0;
  std::size_t trials = 0;
  oomlab::ExecGridSearch s = search();
  s.on_start = [&](std::size_t) { ++started; };
  s.on_done = [&](std::size_t, const oomlab::FitResult&) { ++done; };
  s.on_trial = [&](std::size_t, const oomlab::Trial&) { ++trials; };
  const std::vector<oomlab::GridCell> one = oomlab::fit_exec_grid(config(), gpus(1), s);
  ASSERT_EQ(one.size(), 4U);
  // (2 GiB - 256 MiB) / 64 MiB = 28, / 32 MiB = 56, / 16 MiB = 112.
  const std::uint64_t expected[] = {28, 56, 56, 112};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(one[i].fit.answer, expected[i]) << i << ": " << one[i].fit.stopped;
    EXPECT_EQ(one[i].fit.beyond, expected[i] + 1);
  }
  EXPECT_EQ(one[3].values, (std::vector<std::string>{"--slim", "fp16"}));
  EXPECT_EQ(started, 4U);
  EXPECT_EQ(done, 4U);
  std::size_t runs = 0;
  for (const auto& cell : one)
    runs += cell.fit.runs();
  EXPECT_EQ(trials, runs);
  EXPECT_EQ(most_at_once(), 1) << "one GPU: one trial at a time";
  fs::remove(dir_ / "most");

  const std::vector<oomlab::GridCell> four = oomlab::fit_exec_grid(config(), gpus(4), search());
  ASSERT_EQ(four.size(), 4U);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(four[i].fit.answer, one[i].fit.answer) << i;
    EXPECT_EQ(four[i].values, one[i].values);
    EXPECT_EQ(four[i].fit.runs(), one[i].fit.runs()) << "a GPU each: the same search";
  }
  EXPECT_GE(most_at_once(), 2) << "four GPUs: the combinations at once";
  EXPECT_FALSE(fs::exists(dir_ / "twice")) << "never two trials at once on one GPU";
  for (const auto& g : gpus_) {
    EXPECT_GT(g->holds, 0) << "every GPU ran trials under its own ballast";
    EXPECT_EQ(g->ballast, 0U) << "and gave it back";
  }
}

TEST_F(ExecGrid, FewerCombinationsThanGpusSearchInRoundsAndAgree) {
  oomlab::ExecGridSearch s = search();
  s.axes.pop_back();  // slim alone: 2 combinations on 4 GPUs, 2 GPUs each
  s.axes.push_back({.name = "precision", .values = {"fp32"}});
  const std::vector<oomlab::GridCell> cells = oomlab::fit_exec_grid(config(), gpus(4), s);
  ASSERT_EQ(cells.size(), 2U);
  EXPECT_EQ(cells[0].fit.answer, 28U);
  EXPECT_EQ(cells[1].fit.answer, 56U);
  EXPECT_FALSE(fs::exists(dir_ / "twice")) << "never two trials at once on one GPU";
  EXPECT_GE(most_at_once(), 3) << "two searches, each in rounds over two GPUs";
}

}  // namespace
