// `oomlab fit` over a scenario on the sim: its answer must be the one found run by run (every
// value from LO up to the first that fails), in at most 2·log2(HI−LO) + 2 runs; and the command's
// refusals, its JSON (oomlab.fit.v1) and `fit exec` without a GPU.
#include "run/fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "oomlab/units.hpp"
#include "reports/searches/fit_grid.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using json = nlohmann::json;

RunConfig leak_on_sim() {
  RunConfig config = testing::make_run_config("leak", "sim", 1_GiB);
  config.params.set("leak", Bytes{8_MiB});
  return config;
}

Outcome run_at(RunConfig config, std::int64_t steps) {
  config.params.set("steps", steps);
  return run_scenario(config).outcome;
}

TEST(FitScenario, EqualsTheAnswerFoundRunByRunInFewRuns) {
  const RunConfig config = leak_on_sim();
  const FitResult fit = fit_scenario(config, {.range = {.name = "steps", .lo = 1, .hi = 100'000}});
  ASSERT_TRUE(fit.answer);
  // Run by run: every value from 1 completes up to the answer, and the next one fails.
  std::int64_t first_failing = 1;
  while (run_at(config, first_failing) == Outcome::completed)
    ++first_failing;
  EXPECT_EQ(*fit.answer, static_cast<std::uint64_t>(first_failing - 1));
  EXPECT_EQ(fit.beyond, static_cast<std::uint64_t>(first_failing));
  EXPECT_EQ(run_at(config, first_failing + 1), Outcome::oom) << "and it stays failed";
  EXPECT_LE(static_cast<double>(fit.runs()), 2 * std::log2(100'000.0 - 1) + 2);
  EXPECT_EQ(fit.budget_bytes, 1_GiB);
  EXPECT_TRUE(fit.simulated);
  ASSERT_NE(fit.at_beyond(), nullptr);
  EXPECT_EQ(fit.at_beyond()->cause, Cause::leak);
  ASSERT_TRUE(fit.at_beyond()->request_bytes);
  ASSERT_NE(fit.at_answer(), nullptr);
  EXPECT_LE(fit.at_answer()->used_bytes, 1_GiB) << "its peak, against the budget";
}

using Cli = ::oomlab::testing::CliRun;

Cli oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

TEST(FitCommand, WritesTheFitSchemaWithTheAnswerItsRunsAndTheCards) {
  const Cli r = oomlab({"fit", "leak", "-a", "sim", "--budget", "1GiB", "-p", "leak=8MiB",
                        "--range", "steps=1..100000", "--json", "-", "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "oomlab.fit.v1");
  const FitResult direct =
      fit_scenario(leak_on_sim(), {.range = {.name = "steps", .lo = 1, .hi = 100'000}});
  EXPECT_EQ(doc.at("value"), *direct.answer);
  EXPECT_EQ(doc.at("runs"), direct.runs());
  EXPECT_EQ(doc.at("budget_bytes"), 1_GiB);
  EXPECT_TRUE(doc.at("predicted").is_null()) << "no model for a scenario";
  ASSERT_EQ(doc.at("trials").size(), direct.runs());
  for (const char* field : {"value", "outcome", "peak", "seconds"})
    EXPECT_TRUE(doc.at("trials").at(0).contains(field)) << field;
  EXPECT_EQ(doc.at("next").at("cause"), "leak");
  EXPECT_EQ(doc.at("cards").at(0), "T4") << "1 GiB fits every card of the table";
  EXPECT_NE(r.err.find("is the largest that completes under 1.00 GiB"), std::string::npos) << r.err;
}

TEST(FitCommand, BadRangesAreUsageErrorsOnOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"fit", "leak", "-a", "sim", "--range", "steps=8..1"}, "LO (8) is more than HI (1)"},
      {{"fit", "leak", "-a", "sim", "--range", "steps"}, "is not NAME=LO..HI"},
      {{"fit", "leak", "-a", "sim", "--range", "steps=x..4"}, "LO 'x' is not a whole number"},
      {{"fit", "leak", "-a", "sim", "--range", "leak=1..4"}, "no whole-number parameter 'leak'"},
      {{"fit", "leak", "-a", "sim", "--range", "steps=1..4", "-p", "steps=3"}, "both set it"},
      {{"fit", "leak", "-a", "sim"}, "--range is needed"},
      {{"fit", "leak", "-a", "sim", "--range", "1x=1..4"}, "is not a name"},
      {{"fit", "exec", "--range", "batch=8..1", "--", "echo", "{batch}"},
       "LO (8) is more than HI (1)"},
      {{"fit", "exec", "--range", "batch", "--", "echo", "{batch}"}, "is not NAME=LO..HI"},
      {{"fit", "exec", "--range", "batch=1..8", "--", "echo", "--batch", "8"},
       "the command has no {batch}"},
      {{"fit", "exec", "--range", "batch=1..8"}, "no program to run"},
      {{"fit", "leak", "-a", "sim", "--budget", "A100", "--range", "steps=1..4"},
       "'A100' is not a budget"},
  };
  for (const auto& [args, message] : cases) {
    const Cli r = oomlab(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(FitCommand, FitExecWithoutAUsableGpuExitsThree) {
  // Without a driver, no device at all; with one, a device index that does not exist.
  std::string why;
  const bool device = testing::cuda_device_present(&why);
  const Cli r = oomlab({"fit", "exec", "--budget", "2GiB", "--devices", device ? "99" : "0",
                        "--range", "batch=1..64", "--", "echo", "{batch}"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(device ? "there is no CUDA device 99" : "no CUDA driver/device found"),
            std::string::npos)
      << r.err;
}

TEST(FitCommand, NotEvenLoCompletesIsExitOne) {
  const Cli r = oomlab({"fit", "leak", "-a", "sim", "--budget", "64MiB", "-p", "leak=32MiB",
                        "--range", "steps=4..64"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("does not complete even at steps=4"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace oomlab

// The grid's table, its answer line and oomlab.fit-grid.v1, made from answers set by hand.
namespace {

using namespace oomlab::literals;

oomlab::FitResult answered(std::uint64_t answer, std::optional<std::uint64_t> predicted) {
  oomlab::FitResult r;
  r.range = {.name = "batch", .lo = 1, .hi = 32};
  r.budget_bytes = 8_GiB;
  r.answer = answer;
  r.beyond = answer + 1;
  r.predicted = predicted;
  r.trials.push_back({.value = answer, .outcome = oomlab::Outcome::completed, .seconds = 10.0});
  r.trials.push_back({.value = answer + 1,
                      .outcome = oomlab::Outcome::oom,
                      .cause = oomlab::Cause::capacity,
                      .seconds = 5.5});
  return r;
}

oomlab::FitGrid grid() {
  oomlab::FitGrid g{.range = {.name = "batch", .lo = 1, .hi = 32},
                    .axes = {{.name = "vae", .values = {"", "--vae-slicing"}},
                             {.name = "attn", .values = {"", "--attention-slicing"}}},
                    .gpus = 2,
                    .seconds = 61.25};
  g.cells.push_back({.values = {"", ""}, .fit = answered(13, 14)});
  g.cells.push_back({.values = {"", "--attention-slicing"}, .fit = answered(12, 12)});
  g.cells.push_back({.values = {"--vae-slicing", ""}, .fit = answered(17, std::nullopt)});
  oomlab::FitResult none;
  none.range = g.range;
  none.budget_bytes = 8_GiB;
  none.beyond = 1;
  none.trials.push_back(
      {.value = 1, .outcome = oomlab::Outcome::oom, .cause = oomlab::Cause::fragmentation});
  g.cells.push_back({.values = {"--vae-slicing", "--attention-slicing"}, .fit = none});
  return g;
}

TEST(FitGridReport, TheAnswerLeadsWithTheLargestAndItsSetting) {
  const oomlab::FitGrid g = grid();
  EXPECT_EQ(oomlab::best_cell(g), 2U);
  EXPECT_EQ(oomlab::grid_answer(g),
            "the largest batch under 8.00 GiB: 17, with vae=--vae-slicing, attn=(empty) (4 "
            "settings, 7 runs on 2 GPUs, 61.2 s)");
  oomlab::FitGrid nothing = g;
  for (auto& cell : nothing.cells)
    cell.fit.answer.reset();
  EXPECT_FALSE(oomlab::best_cell(nothing));
  EXPECT_NE(
      oomlab::grid_answer(nothing).find("no setting completes even at batch=1 under 8.00 GiB"),
      std::string::npos);
}

TEST(FitGridReport, TheTableHasARowASettingWithItsAnswerAndTheRunAboveIt) {
  const std::string text = oomlab::grid_text(grid());
  EXPECT_NE(text.find("vae"), std::string::npos);
  EXPECT_NE(text.find("14: oom (capacity)"), std::string::npos) << text;
  EXPECT_NE(text.find("14 (+1)"), std::string::npos) << "the prediction's error";
  EXPECT_NE(text.find("1: oom (fragmentation)"), std::string::npos) << text;
  EXPECT_NE(text.find("none"), std::string::npos) << "no answer: none";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5) << "a header and four rows\n" << text;
  const std::string md = oomlab::grid_markdown(grid(), {"python3", "sd.py", "{vae}"});
  EXPECT_NE(md.find("| vae | attn | batch | next | runs | predicted | s of runs |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| --vae-slicing | (empty) | 17 | 18: oom (capacity) | 2 | - | 15.5 |"),
            std::string::npos)
      << md;
}

TEST(FitGridReport, TheJsonHoldsEverySettingWithItsOwnFit) {
  const oomlab::SearchSubject subject{
      .scenario = "exec", .command = {"python3", "sd.py", "{vae}", "{attn}"}, .allocator = "exec"};
  const auto doc = oomlab::fit_grid_json(subject, grid());
  EXPECT_EQ(doc["schema"], "oomlab.fit-grid.v1");
  EXPECT_EQ(doc["best"], 2);
  EXPECT_EQ(doc["runs"], 7);
  EXPECT_EQ(doc["gpus"], 2);
  ASSERT_EQ(doc["settings"].size(), 4U);
  EXPECT_EQ(doc["settings"][2]["setting"]["vae"], "--vae-slicing");
  EXPECT_EQ(doc["settings"][2]["setting"]["attn"], "");
  EXPECT_EQ(doc["settings"][2]["value"], 17);
  EXPECT_EQ(doc["settings"][2]["fit"]["schema"], "oomlab.fit.v1");
  EXPECT_EQ(doc["settings"][2]["fit"]["next"]["outcome"], "oom");
  EXPECT_TRUE(doc["settings"][3]["value"].is_null());
  EXPECT_EQ(doc["axes"][1]["values"][1], "--attention-slicing");
}

}  // namespace
