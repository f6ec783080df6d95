// The frontier search's step rule on a stand-in program (it completes from F units up): it must
// land on F from any probe, in 2 runs past a right prediction, and within 2·log2(distance) + 2
// runs past the top one wherever F lies: near the probe, far below, far above.
#include "run/frontier_steps.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace oomlab {
namespace {

struct Searched {
  std::optional<UnitBracket> bracket;
  std::vector<std::uint64_t> tried;
  std::vector<StepKind> kinds;
};

// A program that completes from `frontier` units up, searched from `probe` within (bad, good].
Searched search(std::uint64_t frontier, std::uint64_t probe, UnitBracket known) {
  Searched s;
  s.bracket = search_from(probe, known, [&](std::uint64_t units, StepKind kind) {
    s.tried.push_back(units);
    s.kinds.push_back(kind);
    return std::optional<bool>(units >= frontier);
  });
  return s;
}

// The runs the search may take past the top one: 2·log2(D) + 2, D the units from the probe to the
// frontier, plus one (so that a frontier next to the probe counts as 1).
double allowed_runs(std::uint64_t frontier, std::uint64_t probe) {
  const double distance =
      static_cast<double>(frontier > probe ? frontier - probe : probe - frontier) + 1.0;
  return 2.0 * std::log2(distance) + 2.0;
}

TEST(FrontierSteps, ARightPredictionIsVerifiedInTwoRuns) {
  const Searched s = search(1000, 1000, {.bad = 0, .good = 4096});
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1000U);
  EXPECT_EQ(s.bracket->bad, 999U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{1000, 999}));
  EXPECT_EQ(s.kinds, (std::vector<StepKind>{StepKind::probe, StepKind::step}));
}

TEST(FrontierSteps, APredictionOneUnitLowStepsUpOnce) {
  const Searched s = search(1001, 1000, {.bad = 0, .good = 4096});
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1001U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{1000, 1001}));
}

TEST(FrontierSteps, StepsDoubleAwayFromTheProbeThenBisect) {
  // Down from a probe that completes: 1 unit, then 2, 4, 8 more, until one fails.
  const Searched down = search(990, 1000, {.bad = 0, .good = 4096});
  ASSERT_TRUE(down.bracket);
  EXPECT_EQ(down.bracket->good, 990U);
  ASSERT_GE(down.tried.size(), 5U);
  EXPECT_EQ(std::vector<std::uint64_t>(down.tried.begin(), down.tried.begin() + 5),
            (std::vector<std::uint64_t>{1000, 999, 997, 993, 985}));
  // Up from one that fails, alike.
  const Searched up = search(1010, 1000, {.bad = 0, .good = 4096});
  ASSERT_TRUE(up.bracket);
  EXPECT_EQ(up.bracket->good, 1010U);
  EXPECT_EQ(std::vector<std::uint64_t>(up.tried.begin(), up.tried.begin() + 5),
            (std::vector<std::uint64_t>{1000, 1001, 1003, 1007, 1015}));
}

TEST(FrontierSteps, AnyFrontierIsFoundWithinTheBoundAndNeverByBisectionFromZero) {
  const UnitBracket known{.bad = 0, .good = 40'000};  // 80 GB in 2 MiB units
  for (const std::uint64_t probe : {1U, 2U, 500U, 1234U, 20'000U, 39'999U, 40'000U}) {
    for (const std::uint64_t frontier :
         {1U, 2U, 3U, 17U, 499U, 500U, 501U, 1200U, 1234U, 1240U, 5000U, 39'000U, 40'000U}) {
      const Searched s = search(frontier, probe, known);
      ASSERT_TRUE(s.bracket);
      EXPECT_EQ(s.bracket->good, frontier) << "probe " << probe;
      EXPECT_EQ(s.bracket->bad + 1, frontier);
      EXPECT_LE(static_cast<double>(s.tried.size()), allowed_runs(frontier, probe))
          << "probe " << probe << ", frontier " << frontier;
    }
  }
}

TEST(FrontierSteps, AFarFrontierBelowTakesLogarithmicallyManyRunsNotFifteen) {
  // What the top run took is 2,000 units; the program adapts and completes in 1,100: the old
  // search took three steps and then bisected from zero.
  const Searched s = search(1100, 2000, {.bad = 0, .good = 40'000});
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1100U);
  EXPECT_LE(s.tried.size(), 20U);
  for (const std::uint64_t units : s.tried)
    EXPECT_GE(units, 1100U - 512U) << "the steps went no further than the bracket needs";
}

TEST(FrontierSteps, AProbeAtTheTopIsNotRunAgain) {
  const Searched s = search(4096, 4096, {.bad = 0, .good = 4096});
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 4096U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{4095}));
}

TEST(FrontierSteps, AnUnknownAnswerStopsTheSearch) {
  int runs = 0;
  const auto bracket = search_from(100, {.bad = 0, .good = 200},
                                   [&](std::uint64_t, StepKind) -> std::optional<bool> {
                                     return ++runs == 2 ? std::nullopt : std::optional<bool>(true);
                                   });
  EXPECT_FALSE(bracket);
  EXPECT_EQ(runs, 2);
}

}  // namespace
}  // namespace oomlab
