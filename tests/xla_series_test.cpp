// fit exec's prediction for a JAX program, from the logs of XLA's allocator at two small batches.
// XLA compiles a step to the room it is given, so the runs a search predicts from are compiled
// under a tight limit (jax::recording_variables): the step then holds the least XLA can make it
// hold, which grows with the batch as the step at the largest batch must.
// tests/data/exec/xla_series/: the logs exec kept of tests/data/exec/jax_lm.py --steps 2 at
// batch 1 and 2 (lm_tight_b*) and of the same with --remat (remat_tight_b*), on an H200 under
// --budget 8GiB with XLA_FLAGS=--xla_gpu_memory_limit_slop_factor=1 (JAX 0.11.2); only the
// set-up lines and the pool's requests and frees kept. Measured there with JAX's defaults on the
// same card: jax_lm.py completes at batch 3 and runs out of memory at 4; with --remat at 11 and 12.
// remat_grown_b*: fit exec's first two runs of --remat with XLA_PYTHON_CLIENT_PREALLOCATE=false
// (not tight), their stacks, the host pool's lines and the lines the reader passes over left out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/exec_fit.hpp"
#include "jax/exec/xla_model.hpp"
#include "jax/exec/xla_program.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "run/fit.hpp"
#include "test_support.hpp"
#include "trace/trace_series.hpp"

namespace {

using namespace oomlab::literals;

// What the process held beside XLA's pool in those runs (exec's model: 620-650 MiB).
constexpr std::uint64_t kOutside = 620_MiB;

oomlab::trace::TraceSeries series_of(const std::string& program,
                                     const std::string& kind = "tight") {
  std::vector<oomlab::trace::SeriesPoint> points;
  for (const std::uint64_t batch : {1U, 2U}) {
    const std::string path = oomlab::testing::test_data_dir() + "/exec/xla_series/" + program +
                             "_" + kind + "_b" + std::to_string(batch) + ".txt";
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

// With XLA_PYTHON_CLIENT_PREALLOCATE=false (remat_grown_b*: fit exec's own first two runs, the
// stacks left out) the pool grows region by region, and its compiler's threads, holding several
// candidates at once, made a 2 GiB region at both batches: 4.00 GiB of regions, the step's temp
// (433 and 834 MiB) in the 2 GiB left. Measured on the same card: 4 completes (temp 1,664 MiB),
// 5 does not (2,079 MiB asked). Made one at a time, the candidates never needed that region and
// the model answered 10 (fit exec then ran 10, 9, 7, 3, 5 and 4). The line through 1 and 2 is
// 401 MiB a batch (415 from 2 on): 5 in the model, one over, which costs fit exec no run (4 is
// tried next). At larger values the autotuner may make regions the small runs did not (the
// MLP-Mixer's 512 MiB at 160), so the answer says it may be over.
TEST(XlaSeries, AGrownPoolsAnswerSaysItMayBeOver) {
  const oomlab::FitResult grown = predict(series_of("remat", "grown"), 32);
  ASSERT_TRUE(grown.answer);
  EXPECT_GE(*grown.answer, 4U) << "measured: 4 completes, 5 does not";
  EXPECT_LE(*grown.answer, 5U) << "measured: 4 completes, 5 does not";
  EXPECT_NE(grown.prediction_note.find("may be over"), std::string::npos) << grown.prediction_note;
  EXPECT_NE(grown.prediction_note.find("at 1 and 2 did not"), std::string::npos)
      << grown.prediction_note;
  const oomlab::FitResult preallocated = predict(series_of("remat"), 32);
  EXPECT_EQ(preallocated.prediction_note, "") << "a preallocated pool keeps no region apart";
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

// XLA's compiler asks for its autotuner's candidates on threads of its own, as many as it likes
// at each shape: those requests are a stream apart, not paired, each made at the anchor's size
// as one the program survives being refused, and held until its free where it is made (the
// compiler's threads hold several at once). The program's thread made 682 requests at each
// batch, in the same order.
TEST(XlaSeries, TheCompilersThreadsAreAStreamApartThatIsNotPaired) {
  const oomlab::trace::TraceSeries series = series_of("lm");
  EXPECT_EQ(series.fit().requests, 682U);
  EXPECT_GE(series.fit().aligned_share, 0.99) << "paired with the compiler's: 94.3%";
  EXPECT_GT(series.fit().side, 1000U);
  const oomlab::trace::Trace& anchor = *series.points().back().trace;
  std::uint64_t side_at_anchor = 0;  // what its side stream asked for, served or not
  for (const oomlab::trace::Event& e : anchor.events)
    side_at_anchor += e.op != oomlab::trace::Op::free && e.stream != 0 ? e.bytes : 0;
  std::uint64_t side_asked = 0;
  std::size_t side_held = 0;
  std::size_t held_by_program = 0;
  for (const oomlab::trace::Event& e : series.at(8).events) {
    const bool alloc = e.op == oomlab::trace::Op::alloc;
    if (e.stream == 0) {
      held_by_program += alloc && e.refusable ? 1 : 0;
      continue;
    }
    side_asked += e.op != oomlab::trace::Op::free ? e.bytes : 0;
    side_held += alloc && e.refusable ? 1 : 0;
  }
  EXPECT_EQ(side_asked, side_at_anchor) << "at the anchor's size, whatever the value";
  EXPECT_GT(side_held, 1000U) << "each held where it is made, refusable";
  EXPECT_EQ(held_by_program, 0U) << "the program's own requests are never refusable";
}

const oomlab::ProgramModelling& xla_modelling() {
  for (const oomlab::Framework& f : oomlab::Registry::global().frameworks()) {
    if (f.program_modelling && f.program_modelling->format == "xla") return *f.program_modelling;
  }
  throw std::runtime_error("no framework models XLA's log");
}

std::optional<std::uint64_t> far_from(const oomlab::ProgramModelling& modelling,
                                      const std::string& program, std::uint64_t hi) {
  const std::string path =
      oomlab::testing::test_data_dir() + "/exec/xla_series/" + program + "_tight_b1.txt";
  const oomlab::trace::TraceSeries grown = oomlab::trace::TraceSeries::in_proportion(
      "batch", {.value = 1,
                .trace = std::make_shared<const oomlab::trace::Trace>(
                    oomlab::trace::load(path, oomlab::trace::LoadOptions{}))});
  return oomlab::far_second_value(modelling, {.series = grown,
                                              .range = {.name = "batch", .lo = 1, .hi = hi},
                                              .budget_bytes = 8_GiB - kOutside,
                                              .outside_bytes = kOutside});
}

// fit exec's second run for XLA goes as far as the first run, each request grown in proportion
// to the batch, fits, where that is far (jax::kFarSecondRun): with --remat the step at batch 1
// is small beside the parameters and Adam's state (0.41 GiB of the 1.90 GiB the pool held at
// most), and three times it all fits a 6 GiB pool; the plain lm's step (1.21 GiB) leaves room
// for two, the next value. Measured: from 1 and 3 --remat's prediction was 8 where 11
// completes, from 1 and 2 it is 11: 3 is not far, and both go to the next value.
TEST(XlaSeries, TheSecondRunGoesAsFarAsTheFirstGrownInProportionFitsWhereThatIsFar) {
  const oomlab::ProgramModelling& xla = xla_modelling();
  EXPECT_EQ(xla.far_second_run, oomlab::jax::kFarSecondRun);
  EXPECT_EQ(far_from(xla, "remat", 32), std::nullopt) << "3 is under " << xla.far_second_run;
  oomlab::ProgramModelling near = xla;
  near.far_second_run = 2;
  EXPECT_EQ(far_from(near, "remat", 32), 3U);
  EXPECT_EQ(far_from(near, "remat", 2), std::nullopt) << "within the range";
  EXPECT_EQ(far_from(near, "lm", 32), std::nullopt) << "2 is the next value: nothing to ask";
  const oomlab::trace::TraceSeries grown = oomlab::trace::TraceSeries::in_proportion(
      "batch", {.value = 1, .trace = series_of("lm").points().front().trace});
  const auto program_allocations = [](const oomlab::trace::Trace& t) {
    std::vector<std::uint64_t> sizes;
    for (const oomlab::trace::Event& e : t.events) {
      if (e.op == oomlab::trace::Op::alloc && e.stream == 0) sizes.push_back(e.bytes);
    }
    return sizes;
  };
  const std::vector<std::uint64_t> first = program_allocations(*grown.points().front().trace);
  const std::vector<std::uint64_t> at3 = program_allocations(grown.at(3));
  ASSERT_EQ(at3.size(), first.size());
  ASSERT_EQ(first.size(), 682U);
  for (std::size_t i = 0; i < first.size(); ++i)
    ASSERT_EQ(at3[i], 3 * first[i]) << "the program's request " << i;
}

// `fit replay --from --outside` asks the same question of the same logs as fit exec's model
// (fit_xla_series, with the outside beside a pool that is still its share of the whole card), and
// gets the same answer: the outside is not taken from the card the pool's share is of.
TEST(XlaSeries, FitReplaysOutsideIsBesideAPoolOfTheWholeCard) {
  const std::string pattern =
      oomlab::testing::test_data_dir() + "/exec/xla_series/remat_tight_b{batch}.txt";
  const auto answer = [&](std::vector<std::string> more) -> std::string {
    std::vector<std::string> args = {"oomlab",      "fit",      "replay",    "--trace",
                                     pattern,       "--from",   "batch=1,2", "--range",
                                     "batch=2..32", "--budget", "8GiB",      "-q"};
    args.insert(args.end(), more.begin(), more.end());
    const oomlab::testing::CliRun run = oomlab::testing::run_in_process(args);
    EXPECT_EQ(run.code, 0) << run.err;
    return run.out + run.err;
  };
  const oomlab::FitResult model = predict(series_of("remat"), 32);
  ASSERT_TRUE(model.answer);
  const std::string said = fmt::format("batch={} is the largest", *model.answer);
  EXPECT_NE(answer({"--outside", "620MiB"}).find(said), std::string::npos);
  EXPECT_NE(answer({"-a", "xla:outside=620MiB"}).find(said), std::string::npos);
  // The headroom is the card's less what lies beside the pool and the peak, either way.
  for (const std::vector<std::string>& way :
       {std::vector<std::string>{"--outside", "620MiB"},
        std::vector<std::string>{"-a", "xla:outside=620MiB"}}) {
    std::vector<std::string> args = {"oomlab", "fit",       "replay",  "--trace",     pattern,
                                     "--from", "batch=1,2", "--range", "batch=2..32", "--budget",
                                     "8GiB",   "--json",    "-"};
    args.insert(args.end(), way.begin(), way.end());
    const oomlab::testing::CliRun run = oomlab::testing::run_in_process(args);
    const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << way[0];
    const std::uint64_t peak = doc.at("peak_bytes").get<std::uint64_t>();
    EXPECT_EQ(doc.at("headroom_bytes").get<std::uint64_t>(), 8_GiB - 620_MiB - peak) << way[0];
  }
  // The table by card is PyTorch's settings: XLA's logs are asked a card at a time.
  const oomlab::testing::CliRun cards =
      oomlab::testing::run_in_process({"oomlab", "fit", "replay", "--trace", pattern, "--from",
                                       "batch=1,2", "--range", "batch=2..32", "--cards", "T4,L4"});
  EXPECT_EQ(cards.code, 2);
  EXPECT_NE(cards.err.find("--cards: no table of settings by card for snapshots of the 'xla' "
                           "allocator: ask one card at a time with --budget CARD"),
            std::string::npos)
      << cards.err;
  EXPECT_TRUE(cards.out.empty()) << cards.out;
  const oomlab::testing::CliRun both = oomlab::testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", pattern, "--from", "batch=1,2", "--range",
       "batch=2..32", "--budget", "8GiB", "-a", "xla:outside=1MiB", "--outside", "620MiB"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--outside"), std::string::npos) << both.err;
}

// A preallocated pool's log and a grown pool's are two programs: a series of the two is refused,
// naming the setting and the values; so is a run that ended at its OOM. The grown logs together
// are a series.
TEST(XlaSeries, LogsOfTwoSettingsOrOfAnOomAreNoSeries) {
  const std::filesystem::path dir = oomlab::testing::fresh_temp_folder("xla-mixed-series");
  const std::string data = oomlab::testing::test_data_dir() + "/exec/xla_series/";
  std::filesystem::copy_file(data + "lm_tight_b1.txt", dir / "mix_b1.txt");
  std::filesystem::copy_file(data + "remat_grown_b2.txt", dir / "mix_b2.txt");
  const oomlab::testing::CliRun run = oomlab::testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", (dir / "mix_b{batch}.txt").string(), "--from",
       "batch=1,2", "--range", "batch=1..16", "--budget", "8GiB"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("the snapshot at batch=2 was recorded with preallocate=off, the one at "
                         "batch=1 with preallocate=on"),
            std::string::npos)
      << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
  // A run that ended at its OOM is no point of a series: its requests after it are not in it.
  std::filesystem::copy_file(data + "../xla_log_batch4_8gib.txt", dir / "mix_b2.txt",
                             std::filesystem::copy_options::overwrite_existing);
  const oomlab::testing::CliRun failed = oomlab::testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", (dir / "mix_b{batch}.txt").string(), "--from",
       "batch=1,2", "--range", "batch=1..16", "--budget", "8GiB"});
  EXPECT_EQ(failed.code, 2);
  EXPECT_NE(failed.err.find("the snapshot at batch=2 (" + (dir / "mix_b2.txt").string() +
                            ") ends at the program's OOM"),
            std::string::npos)
      << failed.err;
  std::filesystem::copy_file(data + "remat_grown_b2.txt", dir / "mix_b2.txt",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(data + "remat_grown_b1.txt", dir / "mix_b1.txt",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(oomlab::testing::run_in_process(
                {"oomlab", "fit", "replay", "--trace", (dir / "mix_b{batch}.txt").string(),
                 "--from", "batch=1,2", "--range", "batch=1..16", "--budget", "8GiB", "-q"})
                .code,
            0);
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
