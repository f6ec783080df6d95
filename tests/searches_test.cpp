// The budget and value searches on stand-in runs: each run's outcome is a rule of its value, so
// that every path is pinned without a device: monotone runs, runs that contradict each other, a
// failure other than memory, a timeout, confirmation, a prediction that holds and one that does
// not.
#include "run/searches.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "oomlab/units.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// A stand-in run at `value`: how it ends is `outcome_at(value)`; `top` is the budget a run at the
// request as given gets.
struct StandIn {
  std::function<Outcome(std::uint64_t)> outcome_at;
  std::uint64_t top = 0;
  std::uint64_t used = 0;  // what a run took of its budget
  // What an OOM's line says the device had free at a budget; unset: the line does not say.
  std::function<std::uint64_t(std::uint64_t)> free_at;
  std::vector<std::uint64_t> values;
  Trial operator()(std::optional<std::uint64_t> value) {
    const std::uint64_t v = value.value_or(top);
    values.push_back(v);
    Trial t{.value = v, .budget_bytes = v, .outcome = outcome_at(v), .used_bytes = used};
    if (t.outcome == Outcome::oom) {
      t.cause = Cause::capacity;
      t.request_bytes = 64_MiB;
      if (free_at) t.free_bytes = free_at(v);
    }
    if (t.outcome == Outcome::error) {
      t.message = "RuntimeError: CUDA error: an illegal memory access was encountered";
      t.exit_code = 1;
    }
    return t;
  }
};

Outcome fits_up_to(std::uint64_t largest, std::uint64_t value) {
  return value <= largest ? Outcome::completed : Outcome::oom;
}

BoundaryResult values(StandIn& runs, ValueSearch search) {
  return search_values(search, [&](std::optional<std::uint64_t> v) { return runs(v); });
}

TEST(ValueSearch, DoublesFromLoThenBisectsToTheLargestValueThatCompletes) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512});
  ASSERT_TRUE(r.answer);
  EXPECT_EQ(*r.answer, 30U);
  EXPECT_EQ(r.beyond, 31U);
  EXPECT_EQ(std::vector<std::uint64_t>(runs.values.begin(), runs.values.begin() + 6),
            (std::vector<std::uint64_t>{1, 2, 4, 8, 16, 32}));
  EXPECT_LE(static_cast<double>(r.runs()), 2 * std::log2(512.0 - 1) + 2);
  EXPECT_EQ(r.trials.front().role, TrialRole::probe);
  EXPECT_EQ(r.trials.at(1).role, TrialRole::step);
  EXPECT_EQ(r.trials.back().role, TrialRole::bisection);
}

TEST(ValueSearch, StepsDoubleFromLoItself) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(100, v); }};
  const BoundaryResult r = values(runs, {.lo = 8, .hi = 1000});
  EXPECT_EQ(r.answer, 100U);
  EXPECT_EQ(std::vector<std::uint64_t>(runs.values.begin(), runs.values.begin() + 5),
            (std::vector<std::uint64_t>{8, 16, 32, 64, 128}));
}

TEST(ValueSearch, SaysWhenNotEvenLoOrAllOfTheRangeCompletes) {
  StandIn none{.outcome_at = [](std::uint64_t v) { return fits_up_to(3, v); }};
  const BoundaryResult low = values(none, {.lo = 4, .hi = 64});
  EXPECT_FALSE(low.answer);
  EXPECT_EQ(low.beyond, 4U);
  EXPECT_EQ(none.values, (std::vector<std::uint64_t>{4})) << "nothing under LO is tried";
  StandIn all{.outcome_at = [](std::uint64_t v) { return fits_up_to(1000, v); }};
  const BoundaryResult high = values(all, {.lo = 1, .hi = 100});
  EXPECT_EQ(high.answer, 100U);
  EXPECT_FALSE(high.beyond);
  EXPECT_EQ(all.values.back(), 100U) << "HI itself is tried";
}

TEST(ValueSearch, AFailureOtherThanMemoryStopsTheSearchWithItsMessage) {
  StandIn runs{
      .outcome_at = [](std::uint64_t v) { return v == 8 ? Outcome::error : fits_up_to(30, v); }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512});
  EXPECT_FALSE(r.answer);
  EXPECT_EQ(runs.values, (std::vector<std::uint64_t>{1, 2, 4, 8}));
  EXPECT_NE(r.stopped.find("illegal memory access"), std::string::npos) << r.stopped;
  EXPECT_TRUE(r.stopped_early());
}

TEST(ValueSearch, ATimeoutStopsTheSearchWithNoAnswer) {
  StandIn runs{
      .outcome_at = [](std::uint64_t v) { return v == 16 ? Outcome::timeout : fits_up_to(30, v); }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512});
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.answer);
  EXPECT_EQ(runs.values.back(), 16U);
}

TEST(ValueSearch, ConfirmationRerunsTheAnswerAndTheValueAbove) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512, .confirm = 2});
  EXPECT_EQ(r.answer, 30U);
  EXPECT_EQ(r.confirmation.runs, 2U);
  EXPECT_EQ(r.confirmation.answer_completed, 2U);
  EXPECT_EQ(r.confirmation.beyond_completed, 0U);
  EXPECT_FALSE(r.not_monotonic);
  EXPECT_EQ(std::vector<std::uint64_t>(runs.values.end() - 4, runs.values.end()),
            (std::vector<std::uint64_t>{30, 31, 30, 31}));
  EXPECT_EQ(r.trials.back().role, TrialRole::confirm);
}

TEST(ValueSearch, ALargerValueCompletingAfterItFailedIsReportedNotSmoothedOver) {
  // 31 fails the first time and completes on a rerun (a flaky program, a fragmented device).
  int at_31 = 0;
  StandIn runs{.outcome_at = [&](std::uint64_t v) {
    if (v == 31) return ++at_31 == 1 ? Outcome::oom : Outcome::completed;
    return fits_up_to(30, v);
  }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512, .confirm = 1});
  ASSERT_TRUE(r.not_monotonic);
  EXPECT_EQ(r.not_monotonic->first.value, 31U);
  EXPECT_EQ(r.not_monotonic->first.outcome, Outcome::oom);
  EXPECT_NE(r.not_monotonic->first.role, TrialRole::confirm);
  EXPECT_EQ(r.not_monotonic->second.value, 31U);
  EXPECT_EQ(r.not_monotonic->second.outcome, Outcome::completed);
  EXPECT_EQ(r.not_monotonic->second.role, TrialRole::confirm);
}

TEST(ValueSearch, NonMonotoneRunsStillEndInAClosedBracket) {
  // Completes at 1..10 and 20..25 only: the search ends with an answer whose next value failed.
  StandIn runs{.outcome_at = [](std::uint64_t v) {
    return v <= 10 || (v >= 20 && v <= 25) ? Outcome::completed : Outcome::oom;
  }};
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 100});
  ASSERT_TRUE(r.answer && r.beyond);
  EXPECT_EQ(*r.beyond, *r.answer + 1);
  EXPECT_EQ(runs.outcome_at(*r.answer), Outcome::completed);
  EXPECT_EQ(runs.outcome_at(*r.beyond), Outcome::oom);
}

TEST(ValueSearch, ARightPredictionAfterTwoRunsCostsTwoMore) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  int asked = 0;
  const BoundaryResult r =
      values(runs, {.lo = 4, .hi = 512, .predict = [&](const std::vector<Trial>& so_far) {
                      ++asked;
                      if (so_far.size() < 2) return Prediction{.note = "not yet"};
                      return Prediction{.value = 30, .note = "predicted 30"};
                    }});
  EXPECT_EQ(r.answer, 30U);
  EXPECT_EQ(runs.values, (std::vector<std::uint64_t>{4, 8, 30, 31}));
  EXPECT_EQ(r.predicted, 30U);
  EXPECT_EQ(r.prediction_note, "predicted 30");
  EXPECT_EQ(r.trials.at(2).role, TrialRole::prediction);
  EXPECT_TRUE(r.trials.at(2).verifies_prediction);
  EXPECT_TRUE(r.trials.at(3).verifies_prediction);
  EXPECT_FALSE(r.trials.at(1).verifies_prediction);
  EXPECT_EQ(asked, 2);
}

TEST(ValueSearch, AWrongPredictionFallsBackToStepsFromItWithTheSameAnswer) {
  for (const std::uint64_t predicted : {20U, 29U, 31U, 45U, 600U}) {
    StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
    const BoundaryResult r = values(runs, {.lo = 4, .hi = 512, .predict = [&](const auto& so_far) {
                                             if (so_far.size() < 2) return Prediction{};
                                             return Prediction{.value = predicted};
                                           }});
    EXPECT_EQ(r.answer, 30U) << "predicted " << predicted;
    EXPECT_EQ(r.beyond, 31U);
    EXPECT_LE(r.runs(), 2 + 2 * std::log2(std::abs(30.0 - predicted) + 1) + 2) << predicted;
  }
}

// fit exec's far second run (Prediction::next): the model's own run goes before the steps, as
// a step; the search goes on from it, and the model is asked again.
TEST(ValueSearch, TheModelsOwnRunGoesNextAndItsPredictionAfterIt) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  int asked = 0;
  const BoundaryResult r = values(runs, {.lo = 1, .hi = 512, .predict = [&](const auto& so_far) {
                                           ++asked;
                                           if (so_far.size() == 1) return Prediction{.next = 12};
                                           return Prediction{.value = 30, .note = "from 1 and 12"};
                                         }});
  EXPECT_EQ(r.answer, 30U);
  EXPECT_EQ(runs.values, (std::vector<std::uint64_t>{1, 12, 30, 31}));
  EXPECT_EQ(r.trials.at(1).role, TrialRole::step);
  EXPECT_FALSE(r.trials.at(1).verifies_prediction);
  EXPECT_EQ(r.trials.at(2).role, TrialRole::prediction);
  EXPECT_TRUE(r.trials.at(3).verifies_prediction);
  EXPECT_EQ(asked, 2) << "asked after each completed run until it predicted";
}

TEST(ValueSearch, AModelsOwnRunThatFailsIsBisectedAtOnce) {
  StandIn runs{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  const BoundaryResult r =
      values(runs, {.lo = 1, .hi = 512, .predict = [](const auto& so_far) {
                      return so_far.size() == 1 ? Prediction{.next = 100} : Prediction{};
                    }});
  EXPECT_EQ(r.answer, 30U);
  EXPECT_EQ(r.beyond, 31U);
  ASSERT_GE(runs.values.size(), 3U);
  EXPECT_EQ(runs.values.at(1), 100U);
  EXPECT_EQ(r.trials.at(2).role, TrialRole::bisection) << "no steps down from 100: 1..100 is cut";
  EXPECT_EQ(runs.values.at(2), 51U);
  EXPECT_LE(r.runs(), 2 + std::log2(100.0) + 1);
  EXPECT_EQ(r.prediction_note,
            "no prediction: the run the model asked for, at 100, did not complete");
  // Asked for once only: a model that asks again is not followed twice.
  StandIn again{.outcome_at = [](std::uint64_t v) { return fits_up_to(30, v); }};
  const BoundaryResult twice = values(
      again, {.lo = 1, .hi = 512, .predict = [](const auto&) { return Prediction{.next = 20}; }});
  EXPECT_EQ(twice.answer, 30U);
  EXPECT_EQ(std::count(again.values.begin(), again.values.end(), 20U), 1);
  EXPECT_EQ(again.values.at(2), 39U) << "steps from 20 as far apart as 1 and 20 were, doubling";
}

BoundaryResult budgets(StandIn& runs, BudgetSearch search) {
  return search_budgets(search, [&](std::optional<std::uint64_t> v) { return runs(v); });
}

TEST(BudgetSearch, FindsTheFrontierFromWhatTheTopRunTookPlusTheMargin) {
  StandIn runs{
      .outcome_at = [](std::uint64_t b) { return b >= 3_GiB ? Outcome::completed : Outcome::oom; },
      .top = 8_GiB,
      .used = 3_GiB - 2_MiB};
  const BoundaryResult r = budgets(runs, {.probe_margin_bytes = 2_MiB});
  EXPECT_EQ(r.answer, 3_GiB);
  EXPECT_EQ(r.beyond, 3_GiB - 2_MiB);
  EXPECT_EQ(runs.values, (std::vector<std::uint64_t>{8_GiB, 3_GiB, 3_GiB - 2_MiB}));
  EXPECT_EQ(r.trials.front().role, TrialRole::top);
  EXPECT_EQ(r.trials.at(1).role, TrialRole::probe);
  EXPECT_FALSE(r.trials.at(1).verifies_prediction);
}

TEST(BudgetSearch, AnErrorIsAFailureUnlessItStopsTheSearch) {
  const auto outcome = [](std::uint64_t b) {
    return b >= 3_GiB ? Outcome::completed : b >= 2_GiB ? Outcome::error : Outcome::oom;
  };
  StandIn counted{.outcome_at = outcome, .top = 8_GiB, .used = 3_GiB};
  EXPECT_EQ(budgets(counted, {}).answer, 3_GiB) << "a program's own words at a small budget";
  StandIn stopping{.outcome_at = outcome, .top = 8_GiB, .used = 3_GiB};
  const BoundaryResult r = budgets(stopping, {.errors_stop = true});
  EXPECT_FALSE(r.answer);
  EXPECT_FALSE(r.stopped.empty());
}

TEST(BudgetSearch, APredictionIsVerifiedAndATopThatFailsIsNoSearch) {
  StandIn runs{
      .outcome_at = [](std::uint64_t b) { return b >= 1_GiB ? Outcome::completed : Outcome::oom; },
      .top = 8_GiB,
      .used = 5_GiB};
  const BoundaryResult r =
      budgets(runs, {.predict = [](const Trial&) { return Prediction{.value = 1_GiB}; }});
  EXPECT_EQ(r.answer, 1_GiB);
  EXPECT_EQ(r.runs(), 3U) << "the top, the prediction, one resolution under it";
  EXPECT_EQ(r.trials.at(1).role, TrialRole::prediction);
  EXPECT_TRUE(r.trials.at(2).verifies_prediction);
  StandIn failing{.outcome_at = [](std::uint64_t) { return Outcome::oom; }, .top = 8_GiB};
  const BoundaryResult none = budgets(failing, {});
  EXPECT_FALSE(none.answer);
  EXPECT_EQ(none.beyond, 8_GiB);
  EXPECT_EQ(none.runs(), 1U);
}

TEST(BudgetSearch, TheShortfallIsTheRequestAndThePageBeyondItLessWhatWasFree) {
  Trial refused{.outcome = Outcome::oom, .request_bytes = 192_MiB, .free_bytes = 186_MiB + 640_KiB};
  EXPECT_EQ(shortfall_bytes(refused), 192_MiB + 2_MiB - (186_MiB + 640_KiB));
  refused.request_bytes = 18_MiB;  // refused with more than the request free: the page beyond it
  refused.free_bytes = 18_MiB + 576_KiB;
  EXPECT_EQ(shortfall_bytes(refused), 2_MiB - 576_KiB);
  refused.free_bytes = 21_MiB;  // room for it and its page: the line gives nothing to aim by
  EXPECT_FALSE(shortfall_bytes(refused));
  refused.free_bytes.reset();
  EXPECT_FALSE(shortfall_bytes(refused));
}

// A device where a run at budget b < 3 GiB fails its 64 MiB request with 3 GiB - b less than
// the request and its page free: exactly what it lacked.
StandIn lacking_runs() {
  return StandIn{
      .outcome_at = [](std::uint64_t b) { return b >= 3_GiB ? Outcome::completed : Outcome::oom; },
      .top = 8_GiB,
      .used = 5_GiB,
      .free_at = [](std::uint64_t b) { return 64_MiB + 2_MiB - (3_GiB - b); }};
}

TEST(BudgetSearch, APredictionThatRunsOutIsReaimedByWhatItsOomLineSaysItLacked) {
  StandIn runs = lacking_runs();
  const BoundaryResult r =
      budgets(runs, {.predict = [](const Trial&) { return Prediction{.value = 3_GiB - 6_MiB}; }});
  EXPECT_EQ(r.answer, 3_GiB);
  EXPECT_EQ(runs.values, (std::vector<std::uint64_t>{8_GiB, 3_GiB - 6_MiB, 3_GiB, 3_GiB - 2_MiB}))
      << "the top, the prediction, the re-aim, one resolution under it";
  EXPECT_EQ(r.trials.at(2).role, TrialRole::reaim);
  EXPECT_EQ(to_string(r.trials.at(2).role), "re-aim");
  EXPECT_FALSE(r.trials.at(3).verifies_prediction) << "the prediction failed: nothing verifies it";
}

TEST(BudgetSearch, AnOomLineThatClaimsMoreThanTheModelsErrorIsNotAimedBy) {
  // 3 GiB - 6 MiB fails a 512 MiB request with 34 MiB free: a re-aim would go 480 MiB up.
  StandIn runs = lacking_runs();
  runs.free_at = [](std::uint64_t) { return 34_MiB; };
  runs.values.clear();
  const BoundaryResult r =
      search_budgets({.predict = [](const Trial&) { return Prediction{.value = 3_GiB - 6_MiB}; }},
                     [&](std::optional<std::uint64_t> v) {
                       Trial t = runs(v);
                       if (t.outcome == Outcome::oom) t.request_bytes = 512_MiB;
                       return t;
                     });
  EXPECT_EQ(r.answer, 3_GiB);
  for (const Trial& t : r.trials)
    EXPECT_NE(t.role, TrialRole::reaim);
  EXPECT_EQ(runs.values.at(2), 3_GiB - 4_MiB) << "a step of one resolution up from the prediction";
  EXPECT_LE(r.runs(), 5U);
}

TEST(BudgetSearch, AReaimThatFallsShortStepsOnDoublingAndAProbeIsNeverReaimed) {
  StandIn runs = lacking_runs();
  runs.free_at = [](std::uint64_t b) {
    return 64_MiB + 2_MiB - (3_GiB - b) + 4_MiB;
  };  // says 4 MiB less
  const BoundaryResult r =
      budgets(runs, {.predict = [](const Trial&) { return Prediction{.value = 3_GiB - 10_MiB}; }});
  EXPECT_EQ(r.answer, 3_GiB);
  EXPECT_EQ(runs.values.at(2), 3_GiB - 4_MiB) << "moved up by the 6 MiB its line said";
  EXPECT_EQ(r.trials.at(3).role, TrialRole::step);
  StandIn blind = lacking_runs();
  blind.used = 3_GiB - 8_MiB;  // the first probe, no prediction, fails: steps, no re-aim
  const BoundaryResult plain = budgets(blind, {});
  EXPECT_EQ(plain.answer, 3_GiB);
  for (const Trial& t : plain.trials)
    EXPECT_NE(t.role, TrialRole::reaim);
}

TEST(BudgetSearch, ATimeoutStopsItWithNoFrontierAndConfirmCountsBothSides) {
  StandIn slow{
      .outcome_at =
          [](std::uint64_t b) { return b < 4_GiB ? Outcome::timeout : Outcome::completed; },
      .top = 8_GiB,
      .used = 1_GiB};
  const BoundaryResult stopped = budgets(slow, {});
  EXPECT_TRUE(stopped.timed_out);
  EXPECT_FALSE(stopped.answer);
  StandIn runs{
      .outcome_at = [](std::uint64_t b) { return b >= 3_GiB ? Outcome::completed : Outcome::oom; },
      .top = 8_GiB,
      .used = 3_GiB};
  const BoundaryResult confirmed = budgets(runs, {.confirm = 2});
  EXPECT_EQ(confirmed.confirmation.answer_completed, 2U);
  EXPECT_EQ(confirmed.confirmation.beyond_completed, 0U);
  EXPECT_EQ(std::vector<std::uint64_t>(runs.values.end() - 2, runs.values.end()),
            (std::vector<std::uint64_t>{3_GiB, 3_GiB - 2_MiB}));
}

}  // namespace
}  // namespace oomlab
