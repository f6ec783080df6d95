// The grid's table, its answer line and oomlab.fit-grid.v1, made from answers set by hand.
#include <gtest/gtest.h>

#include "oomlab/units.hpp"
#include "reports/searches/fit_grid.hpp"

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
