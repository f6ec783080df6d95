// fit exec on stand-in devices: a stand-in program takes the value from its arguments (and
// checks it in OOMLAB_FIT_BATCH), takes memory that grows with it, and fails as PyTorch does, with
// its OutOfMemoryError line and exit 1, above the largest value its budget holds. The search must
// land on that value, a failure of another kind must stop it, and a model's line through three
// runs must take it there in five; a first run off the line costs one run more, never a guess.
#include "exec/exec_fit.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fake_exec_devices.hpp"
#include "reports/searches/search_json.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::testing::FakeDevices;

constexpr const char* kPyTorchOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a total "
    "capacity of 79.11 GiB of which 20.00 MiB is free. Including non-PyTorch memory, this process "
    "has 1.98 GiB memory in use. Of the allocated memory 1.50 GiB is allocated by PyTorch, and "
    "20.00 MiB is reserved by PyTorch but unallocated.";

class ExecFit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-fit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    devices_ = std::make_unique<FakeDevices>(dir_ / "usage");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The stand-in: its budget is what the fake left free; at batch $1 it takes 256 MiB + 64 MiB a
  // batch, fails as PyTorch does when that is over its budget, and with its own error at `broken`.
  oomlab::ExecConfig config(std::uint64_t budget, std::uint64_t broken = 0) {
    const std::string usage = (dir_ / "usage").string();
    const std::string script =
        "[ \"$OOMLAB_FIT_BATCH\" = \"$1\" ] || { echo 'no OOMLAB_FIT_BATCH' >&2; exit 9; }; "
        "[ \"$1\" = " +
        std::to_string(broken) +
        " ] && { echo 'ValueError: batch must be even' >&2; exit 2; }; "
        "budget=$((" +
        std::to_string(FakeDevices::kFree) + " - $(cat " + usage +
        ".ballast))); use=$((268435456 + 67108864 * $1)); echo $use > " + usage +
        "; sleep 0.02; if [ $use -gt $budget ]; then echo '" + kPyTorchOom + "' >&2; exit 1; fi";
    oomlab::ExecConfig c;
    c.command = {"/bin/sh", "-c", script, "stand-in", "{batch}"};
    c.interval = 2ms;
    c.environment = oomlab::Environment{};
    c.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{budget}};
    return c;
  }

  fs::path dir_;
  std::unique_ptr<FakeDevices> devices_;
};

TEST_F(ExecFit, FindsTheLargestBatchTheBudgetHoldsAndWhatTheNextOneAsked) {
  // 2 GiB holds 256 MiB + 64 MiB × 28; batch 29 asks more than it has.
  const oomlab::FitResult f =
      oomlab::fit_exec(config(2_GiB), *devices_, {.range = {.name = "batch", .lo = 1, .hi = 512}});
  ASSERT_TRUE(f.answer) << f.stopped;
  EXPECT_EQ(*f.answer, 28U);
  EXPECT_EQ(f.beyond, 29U);
  EXPECT_EQ(f.budget_bytes, 2_GiB);
  ASSERT_NE(f.at_beyond(), nullptr);
  EXPECT_EQ(f.at_beyond()->outcome, oomlab::Outcome::oom);
  EXPECT_EQ(f.at_beyond()->request_bytes, 64_MiB) << "the OOM line's request";
  EXPECT_NE(f.at_beyond()->message.find("torch.OutOfMemoryError"), std::string::npos);
  ASSERT_NE(f.at_answer(), nullptr);
  EXPECT_EQ(f.at_answer()->peak_bytes, 256_MiB + 28 * 64_MiB) << "its peak: the headroom's base";
  EXPECT_LE(f.runs(), 2 * 9 + 2U);
  EXPECT_FALSE(f.predicted) << "no model: the plain search";
  EXPECT_EQ(devices_->ballast, 0U) << "every ballast given back";
}

TEST_F(ExecFit, ItsJsonIsTheFitSchemaWithEachRunAndWhatTheNextValueNeeded) {
  oomlab::ExecConfig c = config(2_GiB);
  const oomlab::FitResult f =
      oomlab::fit_exec(c, *devices_, {.range = {.name = "batch", .lo = 1, .hi = 512}});
  const oomlab::SearchSubject subject{
      .scenario = "exec", .command = c.command, .allocator = "exec"};
  const auto doc = oomlab::fit_json(subject, f, "the answer line");
  EXPECT_EQ(doc.at("schema"), "oomlab.fit.v1");
  EXPECT_EQ(doc.at("value"), 28U);
  EXPECT_EQ(doc.at("runs"), f.runs());
  EXPECT_EQ(doc.at("budget_bytes"), 2_GiB);
  EXPECT_TRUE(doc.at("predicted").is_null());
  EXPECT_EQ(doc.at("headroom_bytes"), 2_GiB - (256_MiB + 28 * 64_MiB));
  EXPECT_EQ(doc.at("next").at("value"), 29U);
  EXPECT_EQ(doc.at("next").at("request_bytes"), 64_MiB);
  EXPECT_EQ(doc.at("next").at("cause"), "capacity");
  EXPECT_EQ(doc.at("answer"), "the answer line");
  ASSERT_EQ(doc.at("trials").size(), f.runs());
  const auto& first = doc.at("trials").at(0);
  EXPECT_EQ(first.at("value"), 1U);
  EXPECT_EQ(first.at("outcome"), "completed");
  EXPECT_EQ(first.at("peak"), 256_MiB + 64_MiB);
  EXPECT_GT(first.at("seconds").get<double>(), 0.0);
  EXPECT_EQ(doc.at("scenario").at("params").at("command"), oomlab::command_line(c.command));
}

TEST_F(ExecFit, AProgramsOwnErrorStopsTheSearchWithItsMessage) {
  const oomlab::FitResult f = oomlab::fit_exec(config(2_GiB, 8), *devices_,
                                               {.range = {.name = "batch", .lo = 1, .hi = 512}});
  EXPECT_FALSE(f.answer);
  EXPECT_NE(f.stopped.find("exited with code 2"), std::string::npos) << f.stopped;
  EXPECT_NE(f.stopped.find("ValueError: batch must be even"), std::string::npos) << f.stopped;
  EXPECT_EQ(f.trials.back().value, 8U);
  EXPECT_EQ(f.trials.back().exit_code, 2);
}

TEST_F(ExecFit, TheModelsLineThroughThreeRunsTakesItThereInFiveRuns) {
  // A stand-in model: a run's whole-process need is its peak (for this program, exactly).
  const oomlab::FitResult f = oomlab::fit_exec(
      config(2_GiB), *devices_,
      {.range = {.name = "batch", .lo = 4, .hi = 512}, .need_of = [](oomlab::RunResult& run) {
         return std::optional<std::uint64_t>(run.program->peak_bytes);
       }});
  ASSERT_TRUE(f.answer) << f.stopped;
  EXPECT_EQ(*f.answer, 28U);
  EXPECT_EQ(f.predicted, 28U) << f.prediction_note;
  ASSERT_EQ(f.runs(), 5U) << "4, 8, 16, the prediction, the one above it";
  EXPECT_EQ(f.trials.at(3).value, 28U);
  EXPECT_EQ(f.trials.at(3).role, oomlab::TrialRole::prediction);
  EXPECT_EQ(f.trials.at(4).value, 29U);
  EXPECT_TRUE(f.trials.at(4).verifies_prediction);
  EXPECT_NE(f.prediction_note.find("predicted batch=28"), std::string::npos) << f.prediction_note;
}

TEST_F(ExecFit, AFirstRunOffTheLineIsNotExtrapolatedFrom) {
  // The need at the first value is set by what does not grow with the batch (as an optimizer step
  // sets a small batch's peak): a line through it and the second run would go far past 44.
  const oomlab::FitResult f = oomlab::fit_exec(
      config(3_GiB), *devices_,
      {.range = {.name = "batch", .lo = 4, .hi = 512}, .need_of = [](oomlab::RunResult& run) {
         return std::optional<std::uint64_t>(
             std::max<std::uint64_t>(run.program->peak_bytes, 700_MiB));
       }});
  ASSERT_TRUE(f.answer) << f.stopped;
  EXPECT_EQ(*f.answer, 44U);
  EXPECT_EQ(f.predicted, 44U) << f.prediction_note;
  ASSERT_EQ(f.runs(), 6U) << "4, 8, 16, 32 (the line from 8 on), the prediction, the one above";
  EXPECT_EQ(f.trials.at(4).role, oomlab::TrialRole::prediction);
}

TEST(ExecFitWords, ThreeNeedsAreOnALineWhenTheirGrowthAgreesWithinATenth) {
  EXPECT_FALSE(oomlab::off_the_line({2, 1000}, {4, 1200}, {8, 1600}, "batch"));
  EXPECT_FALSE(oomlab::off_the_line({2, 1000}, {4, 1191}, {8, 1600}, "batch")) << "95.5 vs 102.25";
  const auto off = oomlab::off_the_line({1, 1000}, {2, 1033}, {4, 1157}, "batch");
  ASSERT_TRUE(off);
  EXPECT_NE(off->find("from batch=1 to 2"), std::string::npos) << *off;
  EXPECT_TRUE(oomlab::off_the_line({2, 1000}, {4, 1000}, {8, 1000}, "batch")) << "no growth";
}

TEST_F(ExecFit, AModelThatCannotReadARunLeavesThePlainSearchAndSaysWhy) {
  const oomlab::FitResult f = oomlab::fit_exec(
      config(2_GiB), *devices_,
      {.range = {.name = "batch", .lo = 1, .hi = 512},
       .need_of = [](oomlab::RunResult&) { return std::optional<std::uint64_t>(); }});
  EXPECT_EQ(f.answer, 28U);
  EXPECT_FALSE(f.predicted);
  EXPECT_NE(f.prediction_note.find("no prediction: the run at batch="), std::string::npos)
      << f.prediction_note;
  EXPECT_NE(f.prediction_note.find("not a Python program"), std::string::npos)
      << "the shim's own reason: " << f.prediction_note;
}

TEST(ExecFitWords, TheValueGoesWhereverItsPlaceholderStands) {
  EXPECT_EQ(oomlab::command_at({"python", "t.py", "--batch={batch}", "{batch}x{batch}", "{b}"},
                               "batch", 32),
            (std::vector<std::string>{"python", "t.py", "--batch=32", "32x32", "{b}"}));
  EXPECT_EQ(oomlab::fit_variable("micro_batch"), "OOMLAB_FIT_MICRO_BATCH");
}

TEST(ExecFitWords, TheLineThroughTwoNeedsPredictsTheLargestValueWithin) {
  const oomlab::Prediction p =
      oomlab::predict_largest({8, 1_GiB}, {16, 1_GiB + 512_MiB}, 3_GiB, "batch");
  EXPECT_EQ(p.value, 40U) << "64 MiB a batch: 2 GiB more holds 32 more";
  EXPECT_FALSE(oomlab::predict_largest({8, 1_GiB}, {16, 1_GiB}, 3_GiB, "batch").value)
      << "a need that does not grow predicts nothing";
  EXPECT_EQ(oomlab::predict_largest({8, 2_GiB}, {16, 4_GiB}, 1_GiB, "batch").value, 4U)
      << "below the runs when the budget is under both";
}

}  // namespace
