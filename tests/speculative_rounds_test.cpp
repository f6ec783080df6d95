// The budget search in rounds (run/speculative_rounds.hpp) against the same search one run at a
// time: for every frontier, prediction, width and --confirm, the same answer and the same trials,
// run for run; never more rounds than it has runs; fewer with more GPUs.
#include "run/speculative_rounds.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "oomlab/units.hpp"

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
                if (made == 0) EXPECT_EQ(at.size(), 1U) << "the top run goes alone";
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
