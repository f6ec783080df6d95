// The one search's step rule on stand-in runs (completing from position F up): it must land on F
// from any probe, in 2 runs past a right prediction, within 2·log2(distance) + 2 runs wherever F
// lies, never by a bisection from zero; with no side known it must find an axis's ends; and a
// guide moves its probe once, mid-search.
#include "run/boundary_search.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace oomlab {
namespace {

struct Searched {
  std::optional<Bracket> bracket;
  std::vector<std::uint64_t> tried;
  std::vector<StepKind> kinds;
};

// Runs that complete from `frontier` up, searched from `probe` within (bad, good].
Searched search(std::uint64_t frontier, std::uint64_t probe, Bracket known, Axis axis,
                std::uint64_t first_step = 1, const Guide& guide = {}) {
  Searched s;
  s.bracket = search_from(
      probe, first_step, known, axis,
      [&](std::uint64_t position, StepKind kind) {
        s.tried.push_back(position);
        s.kinds.push_back(kind);
        return std::optional<bool>(position >= frontier);
      },
      guide);
  return s;
}

// A frontier search: 0 is known to fail, `top` to complete.
Searched between(std::uint64_t frontier, std::uint64_t probe, std::uint64_t top) {
  return search(frontier, probe, {.bad = 0, .good = top}, {.least = 0, .most = top});
}

// The runs allowed past the top one: 2·log2(D) + 2, D the positions from the probe to the
// frontier, plus one (so that a frontier next to the probe counts as 1).
double allowed_runs(std::uint64_t frontier, std::uint64_t probe) {
  const double distance =
      static_cast<double>(frontier > probe ? frontier - probe : probe - frontier) + 1.0;
  return 2.0 * std::log2(distance) + 2.0;
}

TEST(BoundarySearch, ARightPredictionIsVerifiedInTwoRuns) {
  const Searched s = between(1000, 1000, 4096);
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1000U);
  EXPECT_EQ(s.bracket->bad, 999U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{1000, 999}));
  EXPECT_EQ(s.kinds, (std::vector<StepKind>{StepKind::probe, StepKind::step}));
}

TEST(BoundarySearch, APredictionOneLowStepsUpOnce) {
  const Searched s = between(1001, 1000, 4096);
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1001U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{1000, 1001}));
}

TEST(BoundarySearch, StepsDoubleAwayFromTheProbeThenBisect) {
  const Searched down = between(990, 1000, 4096);
  ASSERT_TRUE(down.bracket);
  EXPECT_EQ(down.bracket->good, 990U);
  ASSERT_GE(down.tried.size(), 5U);
  EXPECT_EQ(std::vector<std::uint64_t>(down.tried.begin(), down.tried.begin() + 5),
            (std::vector<std::uint64_t>{1000, 999, 997, 993, 985}));
  const Searched up = between(1010, 1000, 4096);
  ASSERT_TRUE(up.bracket);
  EXPECT_EQ(up.bracket->good, 1010U);
  EXPECT_EQ(std::vector<std::uint64_t>(up.tried.begin(), up.tried.begin() + 5),
            (std::vector<std::uint64_t>{1000, 1001, 1003, 1007, 1015}));
  EXPECT_EQ(up.kinds.back(), StepKind::bisection);
}

TEST(BoundarySearch, AnyFrontierIsFoundWithinTheBoundAndNeverByBisectionFromZero) {
  for (const std::uint64_t probe : {1U, 2U, 500U, 1234U, 20'000U, 39'999U, 40'000U}) {
    for (const std::uint64_t frontier :
         {1U, 2U, 3U, 17U, 499U, 500U, 501U, 1200U, 1234U, 1240U, 5000U, 39'000U, 40'000U}) {
      const Searched s = between(frontier, probe, 40'000);  // 80 GB in 2 MiB units
      ASSERT_TRUE(s.bracket);
      EXPECT_EQ(s.bracket->good, frontier) << "probe " << probe;
      EXPECT_EQ(*s.bracket->bad + 1, frontier);
      EXPECT_LE(static_cast<double>(s.tried.size()), allowed_runs(frontier, probe))
          << "probe " << probe << ", frontier " << frontier;
    }
  }
}

TEST(BoundarySearch, AFarFrontierBelowStaysNearItAndCostsLogarithmicallyMany) {
  const Searched s = between(1100, 2000, 40'000);
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 1100U);
  EXPECT_LE(s.tried.size(), 20U);
  for (const std::uint64_t position : s.tried)
    EXPECT_GE(position, 1100U - 512U) << "no step went further than the bracket needs";
}

TEST(BoundarySearch, AProbeAtTheTopIsNotRunAgain) {
  const Searched s = between(4096, 4096, 4096);
  ASSERT_TRUE(s.bracket);
  EXPECT_EQ(s.bracket->good, 4096U);
  EXPECT_EQ(s.tried, (std::vector<std::uint64_t>{4095}));
}

TEST(BoundarySearch, AnUnknownAnswerStopsTheSearch) {
  int runs = 0;
  const auto bracket = search_from(100, 1, {.bad = 0, .good = 200}, {.least = 0, .most = 200},
                                   [&](std::uint64_t, StepKind) -> std::optional<bool> {
                                     return ++runs == 2 ? std::nullopt : std::optional<bool>(true);
                                   });
  EXPECT_FALSE(bracket);
  EXPECT_EQ(runs, 2);
}

// Nothing known, steps of `first_step` (fit counts positions down from HI, doubling from LO).
TEST(BoundarySearch, WithNothingKnownTheStepsFindTheAxissEnds) {
  // Every position completes: down to the least, which is then the answer, no bad.
  const Searched all = search(0, 100, {}, {.least = 0, .most = 100}, 4);
  ASSERT_TRUE(all.bracket);
  EXPECT_EQ(all.bracket->good, 0U);
  EXPECT_FALSE(all.bracket->bad);
  EXPECT_EQ(all.tried, (std::vector<std::uint64_t>{100, 96, 88, 72, 40, 0}));
  // None completes: up to the most, then no good.
  const Searched none = search(1000, 10, {}, {.least = 0, .most = 100}, 1);
  ASSERT_TRUE(none.bracket);
  EXPECT_FALSE(none.bracket->good);
  EXPECT_EQ(none.bracket->bad, 100U);
}

TEST(BoundarySearch, AGuideMovesTheProbeOnceAndItIsVerified) {
  int asked = 0;
  const Guide guide = [&](const Bracket&) -> std::optional<Aim> {
    ++asked;
    return asked == 2 ? std::optional<Aim>(Aim{.position = 500}) : std::nullopt;
  };
  // Down from 4000 in steps doubling from 1; after the second run the guide says 500: right.
  const Searched right = search(500, 4000, {}, {.least = 0, .most = 4000}, 1, guide);
  ASSERT_TRUE(right.bracket);
  EXPECT_EQ(right.bracket->good, 500U);
  EXPECT_EQ(right.tried, (std::vector<std::uint64_t>{4000, 3999, 500, 499}));
  EXPECT_EQ(right.kinds.at(2), StepKind::probe);
  EXPECT_EQ(asked, 2) << "once it has answered, the guide is not asked again";
  // A wrong guide costs steps doubling from its probe, then bisection: the answer is the same.
  asked = 0;
  const Searched wrong = search(470, 4000, {}, {.least = 0, .most = 4000}, 1, guide);
  ASSERT_TRUE(wrong.bracket);
  EXPECT_EQ(wrong.bracket->good, 470U);
  EXPECT_EQ(std::vector<std::uint64_t>(wrong.tried.begin() + 2, wrong.tried.begin() + 7),
            (std::vector<std::uint64_t>{500, 499, 497, 493, 485}));
}

TEST(BoundarySearch, ConfirmationRerunsBothSidesAndStopsAtAnUnknownAnswer) {
  std::vector<std::uint64_t> runs;
  const Confirmation c = confirm_boundary(10, 9, 3, [&](std::uint64_t p) {
    runs.push_back(p);
    return std::optional<bool>(p == 10 || runs.size() == 4);  // 9 completes on its 2nd rerun
  });
  EXPECT_EQ(runs, (std::vector<std::uint64_t>{10, 9, 10, 9, 10, 9}));
  EXPECT_EQ(c.runs, 3U);
  EXPECT_EQ(c.answer_completed, 3U);
  EXPECT_EQ(c.beyond_completed, 1U);
  int calls = 0;
  const Confirmation stopped =
      confirm_boundary(10, std::nullopt, 5, [&](std::uint64_t) -> std::optional<bool> {
        return ++calls == 2 ? std::nullopt : std::optional<bool>(true);
      });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(stopped.answer_completed, 1U);
}

}  // namespace
}  // namespace oomlab
