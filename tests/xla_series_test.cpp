// fit exec's prediction for a JAX program, from the logs of XLA's allocator at two small batches.
// XLA compiles a step to the room it is given, so the runs a search predicts from are compiled
// under a tight limit (jax::recording_variables): the step then holds the least XLA can make it
// hold, which grows with the batch as the step at the largest batch must.
// tests/data/exec/xla_series/: the logs exec kept of tests/data/exec/jax_lm.py --steps 2 at
// batch 1 and 2 (lm_tight_b*) and of the same with --remat (remat_tight_b*), on an H200 under
// --budget 8GiB with XLA_FLAGS=--xla_gpu_memory_limit_slop_factor=1 (JAX 0.11.2); only the
// set-up lines and the pool's requests and frees kept. Measured there with JAX's defaults on the
// same card: jax_lm.py completes at batch 3 and runs out of memory at 4; with --remat at 11 and 12.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "jax/exec/xla_model.hpp"
#include "jax/exec/xla_program.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "run/fit.hpp"
#include "test_support.hpp"
#include "trace/trace_series.hpp"

namespace {

using namespace oomlab::literals;

// What the process held beside XLA's pool in those runs (exec's model: 620-650 MiB).
constexpr std::uint64_t kOutside = 620_MiB;

oomlab::trace::TraceSeries series_of(const std::string& program) {
  std::vector<oomlab::trace::SeriesPoint> points;
  for (const std::uint64_t batch : {1U, 2U}) {
    const std::string path = oomlab::testing::test_data_dir() + "/exec/xla_series/" + program +
                             "_tight_b" + std::to_string(batch) + ".txt";
    points.push_back({.value = batch,
                      .trace = std::make_shared<const oomlab::trace::Trace>(
                          oomlab::trace::load(path, oomlab::trace::LoadOptions{}))});
  }
  return {"batch", points};
}

oomlab::FitResult predict(const oomlab::trace::TraceSeries& series, std::uint64_t hi) {
  return oomlab::jax::fit_xla_series({.series = series,
                                      .range = {.name = "batch", .lo = 2, .hi = hi},
                                      .budget_bytes = 8_GiB - kOutside,
                                      .outside_bytes = kOutside});
}

TEST(XlaSeries, TheLmsTightLogsPredictItsLargestBatch) {
  const oomlab::trace::TraceSeries series = series_of("lm");
  EXPECT_FALSE(series.misaligned()) << *series.misaligned();
  const oomlab::FitResult f = predict(series, 16);
  EXPECT_EQ(f.answer, 3U);
  EXPECT_EQ(f.beyond, 4U);
}

// XLA's log records no frames, so the sequence alone pairs the two logs' requests, and the
// autotuner's candidates (more at one shape than at the other) shift pairs onto other requests:
// a 32 MiB workspace at batch 1 paired with the 266 MiB logits at batch 2 would be a 1.63 GiB
// request at batch 8, and the prediction 7. A pair that outgrows the batch grows in proportion.
TEST(XlaSeries, APairThatOutgrowsTheBatchIsNotALine) {
  const oomlab::trace::TraceSeries series = series_of("remat");
  const oomlab::FitResult f = predict(series, 32);
  ASSERT_TRUE(f.answer);
  EXPECT_GE(*f.answer, 10U) << "measured: 11 completes, 12 does not";
  EXPECT_LE(*f.answer, 11U) << "measured: 11 completes, 12 does not";
  // No made request at batch 8 over the step's temp there (0.41 GiB at 1, +0.39 GiB a batch).
  const oomlab::trace::Trace at8 = series.at(8);
  std::uint64_t largest = 0;
  for (const oomlab::trace::Event& e : at8.events)
    largest = std::max(largest, e.bytes);
  EXPECT_LT(largest, 3_GiB + 256_MiB);
}

std::vector<std::pair<std::string, std::string>> recording_with(
    std::map<std::string, std::string, std::less<>> env, const std::string& folder = "") {
  return oomlab::jax::recording_variables(
      {.current = [&](std::string_view name) -> std::optional<std::string> {
         const auto it = env.find(name);
         if (it == env.end()) return std::nullopt;
         return it->second;
       },
       .folder = folder,
       .predicting = true});
}

TEST(XlaSeries, ThePredictingRunsLimitIsAddedToTheProgramsFlags) {
  using Set = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(recording_with({}), (Set{{"XLA_FLAGS", "--xla_gpu_memory_limit_slop_factor=1"}}));
  EXPECT_EQ(
      recording_with({{"XLA_FLAGS", "--xla_gpu_autotune_level=0"}}),
      (Set{{"XLA_FLAGS", "--xla_gpu_autotune_level=0 --xla_gpu_memory_limit_slop_factor=1"}}));
  EXPECT_TRUE(recording_with({{"XLA_FLAGS", "--xla_gpu_memory_limit_slop_factor=80"}}).empty())
      << "the program's own factor stands";
  EXPECT_TRUE(recording_with({{"XLA_PYTHON_CLIENT_PREALLOCATE", "False"}}).empty());
  EXPECT_TRUE(recording_with({{"XLA_PYTHON_CLIENT_ALLOCATOR", "platform"}}).empty());
  EXPECT_FALSE(recording_with({{"XLA_PYTHON_CLIENT_PREALLOCATE", "true"}}).empty());
}

TEST(XlaSeries, TheDumpGoesBesideTheLogWhereXlaFlagsCanSayTheFolder) {
  using Set = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(recording_with({{"XLA_PYTHON_CLIENT_PREALLOCATE", "false"}}, "/runs/a"),
            (Set{{"XLA_FLAGS", "--xla_dump_to=/runs/a/xla-dump"}}));
  EXPECT_TRUE(recording_with({{"XLA_PYTHON_CLIENT_PREALLOCATE", "false"}}, "/runs/a b").empty())
      << "XLA splits its flags at spaces";
}

TEST(XlaSeries, AnEarlierRunsDumpInTheFolderGoesBeforeTheRun) {
  const std::filesystem::path folder = oomlab::testing::fresh_temp_folder("xla-stale-dump");
  const std::filesystem::path old = folder / "xla-dump" / "module_0001.jit_step.txt";
  std::filesystem::create_directories(old.parent_path());
  std::ofstream(old) << "HloModule jit_step\n";
  const std::filesystem::path beside = folder / "xla-log.txt";
  std::ofstream(beside) << "kept\n";
  EXPECT_FALSE(
      recording_with({{"XLA_PYTHON_CLIENT_PREALLOCATE", "false"}}, folder.string()).empty());
  EXPECT_FALSE(std::filesystem::exists(old.parent_path()))
      << "XLA adds to the folder: the old module could be read as this run's step";
  EXPECT_TRUE(std::filesystem::exists(beside)) << "only the dump goes";
  std::filesystem::remove_all(folder);
}

}  // namespace
