// fit's search in rounds, on runs that are a function of the value (completes up to a threshold):
// the same answer as the search one run at a time for every threshold, width and prediction, the
// rounds each in increasing value, two rounds to the answer when the prediction holds, and a
// failure of another kind stopping it as it stops the search one at a time.
#include "run/value_rounds.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "oomlab/units.hpp"
#include "run/speculative_rounds.hpp"

namespace oomlab {
namespace {

Trial at_threshold(std::uint64_t value, std::uint64_t threshold) {
  return {.value = value, .outcome = value <= threshold ? Outcome::completed : Outcome::oom};
}

// A model that predicts `predicted` once a run completed (none: no model).
ValueSearch values(std::uint64_t lo, std::uint64_t hi, std::optional<std::uint64_t> predicted) {
  ValueSearch s{.lo = lo, .hi = hi};
  if (predicted) {
    s.predict = [p = *predicted](const std::vector<Trial>&) {
      return Prediction{.value = p, .note = "predicted"};
    };
  }
  return s;
}

struct Counted {
  BoundaryResult result;
  std::size_t rounds = 0;
};

Counted in_rounds(const ValueSearch& s, unsigned width, std::uint64_t threshold) {
  Counted c;
  c.result = search_values_in_rounds(s, width, [&](const std::vector<std::uint64_t>& at) {
    ++c.rounds;
    EXPECT_LE(at.size(), width);
    std::vector<Trial> out;
    for (const std::uint64_t v : at)
      out.push_back(at_threshold(v, threshold));
    return out;
  });
  return c;
}

TEST(ValueRounds, TheFirstRoundIsTheDoublingFromLo) {
  EXPECT_EQ(next_round({.lo = 1, .hi = 512}, 2), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(next_round({.lo = 1, .hi = 512}, 4), (std::vector<std::uint64_t>{1, 2, 4, 8}));
  EXPECT_EQ(next_round({.lo = 3, .hi = 10}, 3), (std::vector<std::uint64_t>{3, 6, 10}))
      << "3, 3+3, then capped at hi";
  EXPECT_EQ(next_round({.lo = 1, .hi = 512, .good = 2, .tried_most = 2}, 2),
            (std::vector<std::uint64_t>{4, 8}));
  EXPECT_EQ(next_round({.lo = 1, .hi = 512, .good = 2, .tried_most = 2, .predicted = 40}, 4),
            (std::vector<std::uint64_t>{39, 40, 41, 42}));
  EXPECT_TRUE(next_round({.lo = 1, .hi = 512, .good = 7, .bad = 8, .tried_most = 8}, 4).empty());
}

TEST(ValueRounds, EveryThresholdWidthAndPredictionGivesTheAnswerOfTheSearchOneAtATime) {
  for (const std::uint64_t lo : {1U, 3U}) {
    for (const std::uint64_t hi : {3U, 17U, 64U}) {
      for (std::uint64_t threshold = 0; threshold <= hi + 1; ++threshold) {
        for (const std::optional<std::uint64_t> p :
             {std::optional<std::uint64_t>(), std::optional<std::uint64_t>(threshold),
              std::optional<std::uint64_t>(threshold + 1),
              std::optional<std::uint64_t>(threshold / 2), std::optional<std::uint64_t>(hi * 3)}) {
          const ValueSearch s = values(lo, hi, p);
          const BoundaryResult one = search_values(
              s, [&](std::optional<std::uint64_t> v) { return at_threshold(*v, threshold); });
          for (const unsigned width : {1U, 2U, 3U, 4U}) {
            const Counted c = in_rounds(s, width, threshold);
            const std::string where = "lo " + std::to_string(lo) + " hi " + std::to_string(hi) +
                                      " threshold " + std::to_string(threshold) + " width " +
                                      std::to_string(width) + " predicted " +
                                      (p ? std::to_string(*p) : "none");
            EXPECT_EQ(c.result.answer, one.answer) << where;
            EXPECT_EQ(c.result.beyond, one.beyond) << where;
            if (width > 1) {
              EXPECT_LE(c.rounds, one.runs()) << where;
            }
          }
        }
      }
    }
  }
}

// The two short runs together, then the prediction and the value over it: the answer after two
// rounds, where one at a time takes at least three runs.
TEST(ValueRounds, APredictionThatHoldsAnswersInTwoRounds) {
  for (const unsigned width : {2U, 4U}) {
    const Counted c = in_rounds(values(1, 512, 37), width, 37);
    EXPECT_EQ(c.result.answer, 37U);
    EXPECT_EQ(c.result.beyond, 38U);
    EXPECT_EQ(c.rounds, 2U) << "width " << width;
    EXPECT_EQ(c.result.predicted, 37U);
    const auto prediction = std::find_if(c.result.trials.begin(), c.result.trials.end(),
                                         [](const Trial& t) { return t.value == 37; });
    ASSERT_NE(prediction, c.result.trials.end());
    EXPECT_EQ(prediction->role, TrialRole::prediction);
    EXPECT_TRUE(prediction->verifies_prediction);
  }
}

// Each round's trials in increasing value, the first round's first its probe: the same trials,
// in the same order, run after run.
TEST(ValueRounds, TrialsAreInIncreasingValueWithinEachRoundAndTheSameEveryTime) {
  const Counted a = in_rounds(values(1, 300, std::nullopt), 3, 100);
  const Counted b = in_rounds(values(1, 300, std::nullopt), 3, 100);
  ASSERT_EQ(a.result.trials.size(), b.result.trials.size());
  for (std::size_t i = 0; i < a.result.trials.size(); ++i) {
    EXPECT_EQ(a.result.trials[i].value, b.result.trials[i].value);
    EXPECT_EQ(a.result.trials[i].role, b.result.trials[i].role);
  }
  EXPECT_EQ(a.result.trials.front().role, TrialRole::probe);
  EXPECT_EQ(a.result.trials[0].value, 1U);
  EXPECT_EQ(a.result.trials[1].value, 2U);
  EXPECT_EQ(a.result.trials[2].value, 4U);
  EXPECT_EQ(a.result.answer, 100U);
}

// What a terminal's progress line shows: each round's values before it runs, and the runs done.
TEST(ValueRounds, EachRoundIsAnnouncedWithItsValuesAndTheRunsDone) {
  ValueSearch s = values(1, 512, 37);
  std::vector<std::pair<std::vector<std::uint64_t>, std::size_t>> announced;
  s.on_round = [&](const std::vector<std::uint64_t>& v, std::size_t done) {
    announced.emplace_back(v, done);
  };
  const Counted c = in_rounds(s, 2, 37);
  ASSERT_EQ(announced.size(), c.rounds);
  EXPECT_EQ(announced[0].first, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(announced[0].second, 0U);
  EXPECT_EQ(announced[1].first, (std::vector<std::uint64_t>{37, 38}));
  EXPECT_EQ(announced[1].second, 2U);
}

TEST(ValueRounds, AFailureOfAnotherKindStopsTheSearchWithItsMessage) {
  const BoundaryResult r = search_values_in_rounds(
      values(1, 64, std::nullopt), 2, [](const std::vector<std::uint64_t>& at) {
        std::vector<Trial> out;
        for (const std::uint64_t v : at) {
          Trial t = at_threshold(v, 40);
          if (v == 16) {
            t.outcome = Outcome::error;
            t.message = "ValueError: batch must be even";
          }
          out.push_back(t);
        }
        return out;
      });
  EXPECT_EQ(r.stopped, "ValueError: batch must be even");
  EXPECT_FALSE(r.answer) << "an unknown trial: no answer";
}

}  // namespace
}  // namespace oomlab

// The budget search in rounds (run/speculative_rounds.hpp) against the same search one run at a
// time: for every frontier, prediction, width and --confirm, the same answer and the same trials,
// run for run; never more rounds than it has runs; fewer with more GPUs.
namespace {

using namespace oomlab::literals;

constexpr std::uint64_t kRes = 2_MiB;
constexpr std::uint64_t kUpper = 1_GiB;

// A program that completes at `frontier` bytes and over; the top run took 90% of it.
oomlab::Trial run(std::optional<std::uint64_t> at, std::uint64_t frontier) {
  const std::uint64_t budget = at.value_or(kUpper);
  oomlab::Trial t{
      .value = budget,
      .budget_bytes = budget,
      .outcome = budget >= frontier ? oomlab::Outcome::completed : oomlab::Outcome::oom};
  if (!at) t.used_bytes = frontier / 10 * 9;
  return t;
}

oomlab::BudgetSearch budgets(std::optional<std::uint64_t> predicted, unsigned confirm) {
  oomlab::BudgetSearch s{.resolution_bytes = kRes, .confirm = confirm, .probe_margin_bytes = kRes};
  if (predicted) {
    s.predict = [predicted](const oomlab::Trial&) {
      return oomlab::Prediction{.value = predicted, .note = "stand-in"};
    };
  }
  return s;
}

void expect_same_trials(const oomlab::BoundaryResult& a, const oomlab::BoundaryResult& b) {
  ASSERT_EQ(a.trials.size(), b.trials.size());
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(a.trials[i].value, b.trials[i].value) << i;
    EXPECT_EQ(a.trials[i].outcome, b.trials[i].outcome) << i;
    EXPECT_EQ(a.trials[i].role, b.trials[i].role) << i;
  }
}

TEST(SpeculativeRounds, TheSameAnswerAndTrialsAsOneRunAtATime) {
  for (const std::uint64_t frontier : {3_MiB, 100_MiB, 333_MiB + 17, 1000_MiB, 1_GiB}) {
    for (const std::optional<std::uint64_t> predicted : std::vector<std::optional<std::uint64_t>>{
             std::nullopt, frontier, frontier - 3 * kRes, frontier + 5 * kRes}) {
      for (const unsigned confirm : {0U, 2U}) {
        const oomlab::BudgetSearch s = budgets(predicted, confirm);
        const oomlab::BoundaryResult one = oomlab::search_budgets(
            s, [&](std::optional<std::uint64_t> at) { return run(at, frontier); });
        for (const unsigned width : {1U, 2U, 4U}) {
          std::size_t made = 0;
          std::size_t told = 0;
          const auto found = oomlab::search_speculatively(
              [&](const oomlab::TrialAt& at) { return oomlab::search_budgets(s, at); }, width,
              [&](const std::vector<std::optional<std::uint64_t>>& at) {
                EXPECT_LE(at.size(), width);
                if (made == 0) {
                  EXPECT_EQ(at.size(), 1U) << "the top run goes alone";
                }
                std::vector<oomlab::Trial> trials;
                for (const auto& a : at)
                  trials.push_back(run(a, frontier));
                made += at.size();
                return trials;
              },
              [&](const oomlab::Trial&) { ++told; });
          SCOPED_TRACE(::testing::Message()
                       << "frontier " << frontier << " width " << width << " confirm " << confirm);
          EXPECT_EQ(found.result.answer, one.answer);
          EXPECT_EQ(found.result.beyond, one.beyond);
          EXPECT_EQ(found.result.predicted, one.predicted);
          expect_same_trials(found.result, one);
          EXPECT_EQ(made, found.result.trials.size() + found.spare.size());
          EXPECT_EQ(told, made) << "every run made is told";
          EXPECT_LE(found.rounds, one.trials.size());
          if (width == 1) {
            EXPECT_EQ(found.rounds, one.trials.size());
            EXPECT_TRUE(found.spare.empty());
          }
        }
      }
    }
  }
}

TEST(SpeculativeRounds, MoreGpusFewerRounds) {
  // No prediction: the probe from the top run's 90%, then steps up and bisection.
  const std::uint64_t frontier = 333_MiB + 17;
  const oomlab::BudgetSearch s = budgets(std::nullopt, 0);
  std::vector<std::size_t> rounds;
  for (const unsigned width : {1U, 2U, 4U, 8U}) {
    const auto found = oomlab::search_speculatively(
        [&](const oomlab::TrialAt& at) { return oomlab::search_budgets(s, at); }, width,
        [&](const std::vector<std::optional<std::uint64_t>>& at) {
          std::vector<oomlab::Trial> trials;
          for (const auto& a : at)
            trials.push_back(run(a, frontier));
          return trials;
        });
    rounds.push_back(found.rounds);
  }
  EXPECT_LT(rounds[1], rounds[0]);  // measured here: 11, 8, 6, 4
  EXPECT_LT(rounds[2], rounds[1]);
  EXPECT_LE(rounds[3], rounds[2]);
}

}  // namespace
