// `oomlab compare` below the command line: every verdict, the tolerance at its edges and widened
// by measured spreads, and loading and refusing inputs (compare_cli_test.cpp has the command).
#include "reports/matrix/compare.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "oomlab/error.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t kGiB = 1ULL << 30U;

json key_of(const std::string& scenario, const std::string& allocator) {
  return {{"scenario", scenario},
          {"allocator", allocator},
          {"options", json::object()},
          {"params", json::object()},
          {"budget", "8GiB"}};
}

CompareCell ended(const std::string& outcome, const std::string& scenario = "growing-batch",
                  const std::string& allocator = "async") {
  CompareCell cell;
  cell.key = key_of(scenario, allocator);
  cell.scenario = scenario;
  cell.allocator = allocator;
  cell.budget = "8GiB";
  cell.outcome = outcome;
  return cell;
}

// An OOM at `live` bytes and `step` (event 12,429 unless said), as growing-batch/async on 8 GiB.
CompareCell oom_at(std::uint64_t live, std::uint64_t step, std::uint64_t event = 12'429) {
  CompareCell cell = ended("oom");
  cell.oom = OomRecord{.event = event, .step = step, .live_bytes = live};
  return cell;
}

CompareInput input_of(std::vector<CompareCell> cells) {
  CompareInput input;
  input.path = "in-memory.json";
  input.kind = "matrix";
  input.environment = {{"device", {{"name", "NVIDIA H100 80GB HBM3"}}},
                       {"driver", "580.159.04"},
                       {"cuda_runtime", 13000}};
  input.cells = std::move(cells);
  return input;
}

CellVerdict judged(const CompareCell& baseline, const CompareCell& current,
                   double tolerance = 0.02) {
  const Comparison c = compare(input_of({baseline}), input_of({current}), tolerance);
  EXPECT_EQ(c.cells.size(), 1U);
  return c.cells.front();
}

Verdict verdict_of(const CompareCell& baseline, const CompareCell& current,
                   double tolerance = 0.02) {
  return judged(baseline, current, tolerance).verdict;
}

// Figures of a real growing-batch OOM on 8 GiB (sim): 7,487,483,904 live bytes at step 23.
constexpr std::uint64_t kLive = 7'487'483'904;

TEST(CompareVerdicts, SameWhenTheOomPointDidNotMove) {
  const CellVerdict v = judged(oom_at(kLive, 23), oom_at(kLive + 4 * (1ULL << 20U), 23));
  EXPECT_EQ(v.verdict, Verdict::same);
  EXPECT_FALSE(is_regression(v.verdict));
  ASSERT_TRUE(v.live_bytes.has_value());
  EXPECT_NEAR(v.live_bytes->change, 0.00056, 0.00001);
  EXPECT_EQ(verdict_of(ended("completed"), ended("completed")), Verdict::same);
}

TEST(CompareVerdicts, EarlierOomWhenLiveBytesDropBeyondTolerance_IsARegression) {
  const CellVerdict v = judged(oom_at(kLive, 23), oom_at(kLive * 95 / 100, 23));
  EXPECT_EQ(v.verdict, Verdict::earlier_oom);
  EXPECT_TRUE(is_regression(v.verdict));
  EXPECT_NE(v.reason.find("live bytes -5.0%"), std::string::npos) << v.reason;
}

TEST(CompareVerdicts, EarlierOomWhenOnlyTheStepMovesEarlier) {
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), oom_at(kLive, 21)), Verdict::earlier_oom);
}

TEST(CompareVerdicts, EarlierWinsWhenOneDimensionMovesEachWay) {
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), oom_at(kLive * 110 / 100, 20)), Verdict::earlier_oom);
}

TEST(CompareVerdicts, LaterOomWhenEitherMovesLaterAndNoneEarlier) {
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), oom_at(kLive, 25)), Verdict::later_oom);
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), oom_at(kLive * 105 / 100, 23)), Verdict::later_oom);
  EXPECT_FALSE(is_regression(Verdict::later_oom));
}

TEST(CompareVerdicts, NewOomWhenTheBaselineCompleted_IsARegression) {
  const CellVerdict v = judged(ended("completed"), oom_at(kLive, 23));
  EXPECT_EQ(v.verdict, Verdict::new_oom);
  EXPECT_TRUE(is_regression(v.verdict));
}

TEST(CompareVerdicts, FixedWhenTheCurrentCompletesAfterAnyFailure) {
  for (const char* baseline : {"crash", "timeout", "error"}) {
    EXPECT_EQ(verdict_of(ended(baseline), ended("completed")), Verdict::fixed) << baseline;
  }
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), ended("completed")), Verdict::fixed);
  // A crash that became the OOM the scenario provokes is fixed too, not a new OOM.
  EXPECT_EQ(verdict_of(ended("crash"), oom_at(kLive, 23)), Verdict::fixed);
  EXPECT_FALSE(is_regression(Verdict::fixed));
}

TEST(CompareVerdicts, CrashTimeoutAndErrorOfTheCurrentAreRegressions) {
  CompareCell crashed = ended("crash");
  crashed.why = "SIGSEGV";
  const CellVerdict v = judged(oom_at(kLive, 23), crashed);
  EXPECT_EQ(v.verdict, Verdict::crash);
  EXPECT_NE(v.reason.find("SIGSEGV"), std::string::npos) << v.reason;
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), ended("timeout")), Verdict::timeout);
  EXPECT_EQ(verdict_of(ended("completed"), ended("error")), Verdict::error);
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), ended("interrupted")), Verdict::error);
  EXPECT_EQ(verdict_of(ended("crash"), ended("crash")), Verdict::crash) << "still crashing";
  for (const Verdict r : {Verdict::crash, Verdict::timeout, Verdict::error})
    EXPECT_TRUE(is_regression(r));
}

TEST(CompareVerdicts, MissingAndAddedAreNotRegressions) {
  const Comparison c =
      compare(input_of({oom_at(kLive, 23), ended("completed", "leak", "cuda")}),
              input_of({oom_at(kLive, 23), ended("completed", "leak", "managed")}), 0.02);
  ASSERT_EQ(c.cells.size(), 3U);
  EXPECT_EQ(c.cells[0].verdict, Verdict::same);
  EXPECT_EQ(c.cells[1].verdict, Verdict::missing);
  EXPECT_EQ(c.cells[1].cell().allocator, "cuda");
  EXPECT_EQ(c.cells[2].verdict, Verdict::added);
  EXPECT_EQ(c.cells[2].cell().allocator, "managed");
  EXPECT_EQ(c.regressions(), 0U);
  EXPECT_EQ(conclusion(c), "no regression in 3 cells; 1 baseline cell missing from the current");
}

TEST(CompareVerdicts, KeysMatchByJsonEqualityAndRepeatedKeysInOrder) {
  CompareCell reordered = oom_at(kLive, 23);
  reordered.key = json::parse(
      R"({"budget": "8GiB", "params": {}, "options": {}, "allocator": "async", "scenario": "growing-batch"})");
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), reordered), Verdict::same);
  CompareCell other_params = oom_at(kLive, 23);
  other_params.key["params"] = {{"batch", 2}};
  const Comparison c = compare(input_of({oom_at(kLive, 23)}), input_of({other_params}), 0.02);
  EXPECT_EQ(c.count(Verdict::missing), 1U);
  EXPECT_EQ(c.count(Verdict::added), 1U);
  // The same key twice (a matrix over two devices): first with first, second with second.
  const Comparison twice = compare(input_of({oom_at(kLive, 23), oom_at(kLive, 40)}),
                                   input_of({oom_at(kLive, 23), oom_at(kLive, 40)}), 0.02);
  EXPECT_EQ(twice.count(Verdict::same), 2U);
}

TEST(CompareTolerance, TwoPercentIsInsideAndJustBeyondIsOutside) {
  const std::uint64_t base = 1'000'000'000;
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base + 19'900'000, 500)),
            Verdict::same);  // +1.99%
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base + 20'000'000, 500)),
            Verdict::same);  // +2.00%
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base + 20'100'000, 500)), Verdict::later_oom);
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base - 20'000'000, 500)),
            Verdict::same);  // -2.00%
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base - 20'100'000, 500)), Verdict::earlier_oom);
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base, 510)), Verdict::same);         // step +2.0%
  EXPECT_EQ(verdict_of(oom_at(base, 500), oom_at(base, 489)), Verdict::earlier_oom);  // step -2.2%
}

TEST(CompareTolerance, IsWhatWasAsked) {
  EXPECT_EQ(verdict_of(oom_at(kLive, 100), oom_at(kLive, 96), 0.05), Verdict::same);
  EXPECT_EQ(verdict_of(oom_at(kLive, 100), oom_at(kLive, 96), 0.02), Verdict::earlier_oom);
  EXPECT_EQ(verdict_of(oom_at(kLive, 100), oom_at(kLive + 1, 100), 0.0), Verdict::later_oom);
}

TEST(CompareTolerance, TheEventStandsForTheStepWhenBothStepsAreZero) {
  const CellVerdict v = judged(oom_at(268'435'456, 0, 258'065), oom_at(268'435'456, 0, 240'000));
  EXPECT_EQ(v.verdict, Verdict::earlier_oom);
  EXPECT_TRUE(v.step_is_event);
  EXPECT_NE(v.reason.find("event -7.0%"), std::string::npos) << v.reason;
  EXPECT_EQ(verdict_of(oom_at(268'435'456, 0, 258'065), oom_at(268'435'456, 0, 258'100)),
            Verdict::same);
}

TEST(CompareTolerance, ASpreadMeasuredByRepeatWidensIt) {
  // Leak on async, 3 repeats: live bytes scattered by 4.9% around the median, steps by 5.1%.
  CompareCell baseline = oom_at(7'801'405'440, 448);
  const CompareCell current = oom_at(8'103'395'328, 466);  // +3.9%, +4.0%
  EXPECT_EQ(verdict_of(baseline, current), Verdict::later_oom) << "no spread: plain 2%";
  baseline.live_bytes_spread =
      Spread{.min = 7'616'856'064, .median = 7'801'405'440, .max = 8'002'732'032};
  baseline.step_spread = Spread{.min = 437, .median = 448, .max = 460};
  const CellVerdict v = judged(baseline, current);
  EXPECT_EQ(v.verdict, Verdict::same) << v.reason;
  EXPECT_NEAR(v.step->tolerance, 23.0 / 448.0, 1e-6);
  // The current's own spread widens it the same way, dimension by dimension.
  CompareCell scattered = oom_at(kLive, 23);
  scattered.step_spread = Spread{.min = 22, .median = 25, .max = 27};  // 20%
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), scattered), Verdict::same);
  scattered.oom->live_bytes = kLive * 90 / 100;  // bytes have no spread: still 2%
  EXPECT_EQ(verdict_of(oom_at(kLive, 23), scattered), Verdict::earlier_oom);
  // Beyond the spread is beyond it.
  EXPECT_EQ(verdict_of(baseline, oom_at(7'801'405'440, 420)), Verdict::earlier_oom);  // step -6.3%
}

std::string fixture(const std::string& name) {
  return testing::test_data_dir() + "/compare/" + name;
}

using ::oomlab::testing::read_text;

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_compare_test_" + name);
}

std::string refusal(std::string_view text) {
  try {
    (void)parse_compare_input(text, "bad.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  return "accepted";
}

TEST(CompareLoad, AMatrixGivesItsCellsOomPointsAndSpreads) {
  const CompareInput in = load_compare_input(fixture("h100_matrix.json"));
  EXPECT_EQ(in.kind, "matrix");
  ASSERT_EQ(in.cells.size(), 8U);
  const CompareCell& leak = in.cells[4];
  EXPECT_EQ(leak.scenario, "leak");
  EXPECT_EQ(leak.budget, "8GiB");
  ASSERT_TRUE(leak.oom && leak.live_bytes_spread && leak.step_spread);
  EXPECT_EQ(leak.oom->step, 448U);
  EXPECT_EQ(leak.step_spread->max, 460);
  EXPECT_EQ(in.environment.at("driver"), "575.57.08");
}

TEST(CompareLoad, CellsAStoppedMatrixNeverRanAreMissingNotRefused) {
  // `matrix` writes outcome "missing" (no summary) for the cells it did not reach when stopped.
  const CompareInput in = parse_compare_input(
      R"({"schema": "oomlab.matrix.v1", "environment": {}, "cells": [
            {"key": {"scenario": "leak"}, "outcome": "completed", "summary": {}},
            {"id": "replay-managed", "scenario": "replay", "allocator": "managed",
             "budget": "4GiB", "outcome": "missing"}]})",
      "stopped.json");
  ASSERT_EQ(in.cells.size(), 1U);
  EXPECT_EQ(in.cells[0].key.at("scenario"), "leak");
  EXPECT_NE(refusal(R"({"schema": "oomlab.matrix.v1", "environment": {}, "cells": [
            {"key": {}, "outcome": "vanished", "summary": null}]})"),
            "accepted");
}

TEST(CompareLoad, ARunSummaryIsOneCellKeyedByWhatItRan) {
  const CompareInput in = load_compare_input(fixture("h100_run_growing-batch_async.json"));
  EXPECT_EQ(in.kind, "run");
  ASSERT_EQ(in.cells.size(), 1U);
  EXPECT_EQ(in.cells[0].key.at("budget"), 8 * kGiB);
  EXPECT_EQ(in.cells[0].key.at("options").at("release_threshold"), 0);
  EXPECT_EQ(in.cells[0].key.at("params").at("optimizer"), "adam");
  EXPECT_EQ(in.cells[0].budget, "8.00 GiB");
  EXPECT_EQ(in.cells[0].oom->live_bytes, kLive);
}

TEST(CompareLoad, AFolderMeansItsMatrixElseItsSummary) {
  const fs::path folder = temp_folder("folder");
  fs::copy_file(fixture("h100_run_growing-batch_async.json"), folder / "summary.json");
  EXPECT_EQ(load_compare_input(folder).kind, "run");
  fs::copy_file(fixture("h100_matrix.json"), folder / "matrix.json");
  EXPECT_EQ(load_compare_input(folder).kind, "matrix");
  const fs::path empty = temp_folder("empty");
  EXPECT_THROW((void)load_compare_input(empty), Error);
}

TEST(CompareLoad, BadInputIsRefusedNamingTheFileAndThePlace) {
  EXPECT_EQ(refusal("{\n  \"schema\": \"oomlab.run.v1\",\n  \"outcome\": oom\n}"),
            "bad.json:3:14: not valid JSON: syntax error while parsing value - invalid literal; "
            "last read: "
            "'\"outcome\": o'");
  EXPECT_NE(refusal("").find("bad.json:1:1: not valid JSON"), std::string::npos);
  EXPECT_NE(refusal("[1, 2]").find("the top level is not a JSON object"), std::string::npos);
  EXPECT_NE(refusal(R"({"cells": []})").find("'schema' must be oomlab.run.v1 or oomlab.matrix.v1"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema": "oomlab.frontier.v1", "environment": {}})")
                .find("schema 'oomlab.frontier.v1' is not one compare reads"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"schema": "oomlab.matrix.v1", "environment": {}, "cells": {}})")
                .find("'cells' must be a list of objects"),
            std::string::npos);
  json matrix = json::parse(read_text(fixture("h100_matrix.json")));
  matrix["cells"][1]["outcome"] = "exploded";
  EXPECT_NE(refusal(matrix.dump())
                .find("'cells[1].outcome' must be an outcome (oom, completed, error, interrupted, "
                      "timeout, crash), not 'exploded'"),
            std::string::npos);
  matrix["cells"][1]["outcome"] = "oom";
  matrix["cells"][1]["summary"]["oom"]["live_bytes"] = -5;
  EXPECT_NE(
      refusal(matrix.dump()).find("'cells[1].summary.oom.live_bytes' must be a whole number >= 0"),
      std::string::npos);
  matrix["cells"][1]["summary"] = nullptr;
  EXPECT_NE(refusal(matrix.dump())
                .find("'cells[1].summary' must be the run's summary, since the outcome is oom"),
            std::string::npos);
  json run = json::parse(read_text(fixture("h100_run_growing-batch_async.json")));
  run["oom"] = nullptr;
  EXPECT_NE(refusal(run.dump()).find("'oom' must be the OOM record, since the outcome is oom"),
            std::string::npos);
  run.erase("budget_bytes");
  EXPECT_NE(refusal(run.dump()).find("bad.json: 'budget_bytes' must be a whole number >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace oomlab
