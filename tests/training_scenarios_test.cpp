// The training-step model and the scenarios built on it, on the sim: the model's arithmetic is
// Korthikanti et al.'s, the sim's largest batch is the model's page-exact prediction (and a
// difference from the plain arithmetic is stated), mixed precision shows both of its faces, and
// the leak is measured and forecast.
#include <gtest/gtest.h>
#include <libfccp/csv.h>

#include <algorithm>
#include <filesystem>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "run/runner.hpp"
#include "scenarios/training_model.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using testing::make_run_config;

using testing::metric;

TEST(TrainingModel, LayerActivationsFollowKorthikanti) {
  training::Shape s{.layers = 4, .hidden = 1024, .heads = 16, .seq = 2048, .vocab = 50000};
  const std::uint64_t b = 3;
  const std::uint64_t sbh = s.seq * b * s.hidden;
  const std::uint64_t as2b = s.heads * s.seq * s.seq * b;
  s.precision = Precision::fp16;  // the paper's case: s·b·h·(34 + 5·a·s/h)
  EXPECT_EQ(training::layer_activation_bytes(s, b), 34 * sbh + 5 * as2b);
  s.precision = Precision::fp32;  // 16-bit tensors double, the 1-byte masks do not
  EXPECT_EQ(training::layer_activation_bytes(s, b), 66 * sbh + 9 * as2b);
  s.precision = Precision::fp8_e4m3;
  EXPECT_EQ(training::layer_activation_bytes(s, b), 18 * sbh + 3 * as2b);
}

TEST(TrainingModel, ParametersAre12HSquaredPlus13HALayer) {
  const training::Shape s{.layers = 6, .hidden = 768, .heads = 12, .seq = 1024, .vocab = 50257};
  EXPECT_EQ(training::parameter_count(s),
            6 * (12 * 768 * 768 + 13 * 768) + 50257 * 768 + 1024 * 768 + 2 * 768);
}

TEST(TrainingModel, PeakGrowsWithBatchAndCheckpointingCutsIt) {
  training::Shape s;
  const std::uint64_t p4 = training::analytic_peak(s, 4, 2);
  EXPECT_LT(training::analytic_peak(s, 1, 2), p4);
  EXPECT_LT(p4, training::analytic_peak(s, 16, 2));
  s.checkpointing = true;
  EXPECT_LT(training::analytic_peak(s, 16, 2), p4 * 2)
      << "checkpointing keeps one layer's activations at a time";
  s.checkpointing = false;
  s.optimizer = training::Optimizer::sgd;  // one state buffer a weight instead of two
  EXPECT_LT(training::analytic_peak(s, 4, 2), p4);
}

TEST(TrainingModel, LargestFittingIsTheBoundary) {
  const auto peak = [](std::uint64_t b) { return 100 + 7 * b; };
  EXPECT_EQ(training::largest_fitting(peak, 100 + 7 * 37, 1U << 20U), 37U);
  EXPECT_EQ(training::largest_fitting(peak, 100 + 7 * 37 - 1, 1U << 20U), 36U);
  EXPECT_EQ(training::largest_fitting(peak, 50, 1U << 20U), 0U);
  EXPECT_EQ(training::largest_fitting(peak, 1U << 30U, 64), 64U) << "stops at the limit";
}

struct GrowingCase {
  std::uint64_t budget;
  std::vector<std::pair<std::string, ParamValue>> params;
};

class GrowingBatchOnSim : public ::testing::TestWithParam<GrowingCase> {};

TEST_P(GrowingBatchOnSim, FindsTheBatchThePageModelPredicts) {
  RunConfig config = make_run_config("growing-batch", "sim", GetParam().budget);
  for (const auto& [name, value] : GetParam().params)
    config.params.set(name, value);
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  const double found = metric(r, "max_batch");
  EXPECT_GT(found, 0);
  EXPECT_EQ(found, metric(r, "page_model_max_batch")) << "the sim has no overhead beyond its pages";
  EXPECT_LE(found, metric(r, "analytic_max_batch"));
  const bool explained = !r.notes.empty() && r.notes[0].find("2 MiB pages") != std::string::npos;
  EXPECT_EQ(found != metric(r, "analytic_max_batch"), explained)
      << "a difference is stated, and only then";
  // The recorded OOM is the batch just past the largest: the page model (the sim's exact
  // answer) says that batch needs more than the budget, so the cause is capacity, never
  // fragmentation with advice that cannot help.
  const training::Shape shape = training::shape_from(r.params);
  const auto steps = static_cast<std::uint64_t>(r.params.integer("steps"));
  EXPECT_GT(training::page_model_peak(shape, static_cast<std::uint64_t>(found) + 1, steps, 2_MiB),
            GetParam().budget);
  const Diagnosis& d = r.oom->diagnosis;
  EXPECT_EQ(d.cause, Cause::capacity) << d.evidence;
  EXPECT_EQ(d.advice.find("expandable_segments"), std::string::npos) << d.advice;
  EXPECT_LE(metric(r, "bytes_at_max_batch"), static_cast<double>(GetParam().budget));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GrowingBatchOnSim,
                         ::testing::Values(GrowingCase{8_GiB, {}}, GrowingCase{2_GiB, {}},
                                           GrowingCase{1_GiB, {}},
                                           GrowingCase{4_GiB, {{"checkpointing", true}}},
                                           GrowingCase{4_GiB,
                                                       {{"optimizer", std::string("sgd")},
                                                        {"accumulation", std::int64_t{3}}}},
                                           GrowingCase{4_GiB,
                                                       {{"precision", std::string("bf16")},
                                                        {"schedule", std::string("linear")},
                                                        {"stride", std::int64_t{5}}}},
                                           GrowingCase{6_GiB,
                                                       {{"layers", std::int64_t{4}},
                                                        {"hidden", std::int64_t{1024}},
                                                        {"heads", std::int64_t{16}},
                                                        {"seq", std::int64_t{512}}}}));

TEST(GrowingBatch, RecordsTheOomJustPastTheLargestBatch) {
  const auto events = std::filesystem::temp_directory_path() / "oomlab_growing_batch_events.csv";
  RunConfig config = make_run_config("growing-batch", "sim", 2_GiB);
  config.events_csv = events;
  const RunResult r = run_scenario(config);
  ASSERT_TRUE(r.oom.has_value());
  io::CSVReader<2> csv(events.string());
  csv.read_header(io::ignore_extra_column, "seq", "op");
  std::uint64_t seq = 0;
  std::string op;
  std::uint64_t last_oom = 0;
  while (csv.read_row(seq, op)) {
    if (op == "oom") last_oom = seq;
  }
  EXPECT_EQ(r.oom->event, last_oom) << "the boundary trial's OOM, not the first one";
  EXPECT_GT(metric(r, "trials"), 3);
  std::filesystem::remove(events);
}

// docs/commands.md's example: at 24 GiB batch 10 needs 25.86 GB in pages, more than the budget. The
// OOM just past batch 9 is capacity (what the allocator can give, pages included), never
// fragmentation with advice that cannot help.
TEST(GrowingBatch, AtItsFrontierTheCauseIsCapacityWhenThePagesCannotHoldTheNextBatch) {
  RunConfig config = make_run_config("growing-batch", "sim", 24_GiB);
  config.params.set("layers", std::int64_t{24});
  config.params.set("hidden", std::int64_t{2048});
  config.params.set("heads", std::int64_t{16});
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  const auto max_batch = static_cast<std::uint64_t>(metric(r, "max_batch"));
  training::Shape shape{.layers = 24, .hidden = 2048, .heads = 16};
  EXPECT_GT(training::page_model_peak(shape, max_batch + 1, 2, 2_MiB), 24_GiB)
      << "the model says the next batch cannot fit";
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::capacity) << r.oom->diagnosis.evidence;
  EXPECT_EQ(r.oom->diagnosis.advice.find("expandable_segments"), std::string::npos);
}

bool refused_as_usage(const RunConfig& config) {
  try {
    (void)run_scenario(config);
  } catch (const Error& e) {
    return e.kind() == ErrorKind::usage;
  }
  return false;
}

TEST(GrowingBatch, AStartAboveTheSearchLimitIsAUsageError) {
  RunConfig config = make_run_config("growing-batch", "sim", 1_GiB);
  config.params.set("start", std::int64_t{(1 << 20) + 1});
  EXPECT_TRUE(refused_as_usage(config));
  config = make_run_config("mixed-precision", "sim", 1_GiB);
  config.params.set("start", std::int64_t{(1 << 20) + 1});
  EXPECT_TRUE(refused_as_usage(config));
}

TEST(Budget, LessThanOnePageIsAUsageError) {
  for (const char* scenario : {"growing-batch", "fragmentation"}) {
    const RunConfig config = make_run_config(scenario, "sim", 1_MiB);
    EXPECT_TRUE(refused_as_usage(config)) << scenario;
  }
  EXPECT_NO_THROW((void)run_scenario(make_run_config("fragmentation", "sim", 2_MiB)));
}

RunResult mixed(std::uint64_t budget,
                const std::vector<std::pair<std::string, std::int64_t>>& shape) {
  RunConfig config = make_run_config("mixed-precision", "sim", budget);
  for (const auto& [name, value] : shape)
    config.params.set(name, value);
  return run_scenario(config);
}

TEST(MixedPrecision, ActivationDominatedSixteenBitFitsAtLeast1Point6TimesTheBatch) {
  const RunResult r = mixed(2_GiB, {});  // the defaults, named in --help
  EXPECT_GE(metric(r, "ratio_fp16"), 1.6);
  EXPECT_GE(metric(r, "ratio_bf16"), 1.6);
  EXPECT_GT(metric(r, "max_batch_fp8"), metric(r, "max_batch_fp16"));
  // One comparison with fp32 per other precision, and a page-gap note for each precision whose
  // batch the pages cut below the arithmetic's, as growing-batch states it.
  std::size_t gaps = 0;
  for (const char* p : {"fp32", "fp16", "bf16", "fp8"}) {
    const std::string name(p);
    EXPECT_EQ(metric(r, "max_batch_" + name), metric(r, "page_model_max_batch_" + name)) << name;
    const bool gap = metric(r, "max_batch_" + name) != metric(r, "analytic_max_batch_" + name);
    const bool noted = std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) {
      return n.rfind(name + ": max batch", 0) == 0 && n.find("2 MiB pages") != std::string::npos;
    });
    EXPECT_EQ(gap, noted) << name;
    gaps += gap ? 1 : 0;
  }
  EXPECT_EQ(r.notes.size(), 3U + gaps);
}

TEST(MixedPrecision, WeightsDominatedAmpUsesMoreMemoryThanFp32) {
  // The --help example: fp32 masters plus a 16-bit working copy cost more than halved activations
  // save.
  const RunResult r =
      mixed(2_GiB, {{"layers", 2}, {"hidden", 2048}, {"heads", 16}, {"seq", 32}, {"vocab", 8192}});
  EXPECT_LT(metric(r, "max_batch_fp16"), metric(r, "max_batch_fp32"));
  EXPECT_LT(metric(r, "ratio_fp16"), 1.0);
  EXPECT_GT(metric(r, "analytic_peak_bytes_at_batch_1_fp16"),
            metric(r, "analytic_peak_bytes_at_batch_1_fp32"));
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.starts_with("fp16 fits batch") &&
           n.find("costs more than its smaller activations save") != std::string::npos;
  })) << "the fp16 comparison says why";
}

// The kind, and the step that runs out: 2 GiB less 1/4 weights and 1/4 activations leaves room
// for 1 GiB of leak in steps of 4 MiB. A leak kept at the step's start or after forward must fit
// beside the activations (OOM at step 256); one made in backward, after half of them are freed,
// lasts a step longer.
class LeakOnSim : public ::testing::TestWithParam<std::pair<std::string, int>> {};

TEST_P(LeakOnSim, IsMeasuredForecastAndNamed) {
  RunConfig config = make_run_config("leak", "sim", 2_GiB);
  config.params.set("kind", GetParam().first);
  const RunResult r = run_scenario(config);
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::leak) << r.oom->diagnosis.evidence;
  EXPECT_NEAR(metric(r, "leak_bytes_per_step"), metric(r, "true_leak_bytes_per_step"),
              0.05 * metric(r, "true_leak_bytes_per_step"));
  EXPECT_LE(std::abs(metric(r, "predicted_oom_step") - metric(r, "actual_oom_step")), 1.0);
  EXPECT_EQ(metric(r, "actual_oom_step"), GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Kinds, LeakOnSim,
                         ::testing::Values(std::pair{std::string("loss-tensor"), 256},
                                           std::pair{std::string("cache"), 256},
                                           std::pair{std::string("grad-buffer"), 257}));

TEST(Leak, ASmallerLeakIsFoundAndForecastToo) {
  RunConfig config = make_run_config("leak", "sim", 1_GiB);
  config.params.set("leak", Bytes{6_MiB});
  config.params.set("forecast_after", std::int64_t{8});
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.oom->diagnosis.cause, Cause::leak);
  EXPECT_NEAR(metric(r, "leak_bytes_per_step"), 6.0 * (1 << 20), 0.05 * 6.0 * (1 << 20));
  EXPECT_LE(std::abs(metric(r, "predicted_oom_step") - metric(r, "actual_oom_step")), 1.0);
}

TEST(Leak, NoLeakRunsItsStepsAndCompletes) {
  RunConfig config = make_run_config("leak", "sim", 1_GiB);
  config.params.set("leak", Bytes{0});
  config.params.set("steps", std::int64_t{40});
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_NEAR(metric(r, "leak_bytes_per_step"), 0.0, 1.0);
}

TEST(Scenarios, AllFourAreListedWithStoriesAndParameters) {
  for (const char* name : {"fragmentation", "growing-batch", "mixed-precision", "leak"}) {
    const Registry::Entry* e = Registry::global().find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_FALSE(e->summary.empty());
    EXPECT_FALSE(e->details.empty());
    EXPECT_FALSE(e->params.empty());
  }
}

TEST(Integrity, TheSimSaysItChecksNothing) {
  const RunResult r = run_scenario(make_run_config("leak", "sim", 256_MiB));
  EXPECT_EQ(r.integrity_checked, 0U);
  EXPECT_EQ(r.verify, VerifyMode::off);
}

}  // namespace
}  // namespace oomlab
