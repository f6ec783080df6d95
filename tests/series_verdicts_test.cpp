// Issue 44 on real programs' snapshot series (tests/data/series/series.tgz): a what-if row never
// fits under its own frontier, a table or an answer made from snapshots says so and what it was
// made from, a budget is modelled as given, --outside acts. (SeriesFixtures: run in build/ only.)
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/series_cli.hpp"
#include "pytorch/reports/series_report.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string gpt2_pattern() {
  return (::oomlab::testing::series_archive("series.tgz") / "gpt2_b{batch}.pickle").string();
}

json run_json(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  args.emplace_back("--json");
  args.emplace_back("-");
  const ::oomlab::testing::CliRun run = ::oomlab::testing::run_in_process(args);
  EXPECT_EQ(run.code, 0) << run.err;
  return run.code == 0 ? json::parse(run.out) : json::object();
}

json fit_replay(const std::vector<std::string>& more) {
  std::vector<std::string> args = {"fit",    "replay",    "--trace", gpt2_pattern(),
                                   "--from", "batch=1,2", "--range", "batch=1..256"};
  args.insert(args.end(), more.begin(), more.end());
  return run_json(args);
}

// GPT-2 at batch 7 made from 1, 2, 4 and 8, at 12 GiB: garbage_collection_threshold's model
// completes at 12.0 GiB and runs out a little higher, so its first search (from the top) found a
// frontier of 12.6 GiB above a budget where it fits.
TEST(SeriesFixtures, AWhatIfRowNeverFitsUnderItsOwnFrontier) {
  const json doc = run_json({"whatif", "--trace", gpt2_pattern(), "--from", "batch=1,2,4,8", "--at",
                             "batch=7", "--budget", "12GiB"});
  ASSERT_TRUE(doc.contains("rows"));
  const auto budget = doc.at("budget_bytes").get<std::uint64_t>();
  bool any_not_monotonic = false;
  for (const json& row : doc.at("rows")) {
    if (row.at("frontier_bytes").is_null()) continue;
    const auto frontier = row.at("frontier_bytes").get<std::uint64_t>();
    const bool fits = row.at("at_budget").at("outcome") == "completed";
    if (fits) {
      EXPECT_LE(frontier, budget) << row.at("name");
    } else if (frontier <= budget) {
      EXPECT_TRUE(row.contains("not_monotonic")) << row.at("name");
    }
    any_not_monotonic = any_not_monotonic || row.contains("not_monotonic");
  }
  EXPECT_TRUE(any_not_monotonic) << "the garbage_collection_threshold row is not monotonic here";
  EXPECT_NE(doc.at("notes").dump().find("not monotonic in the budget"), std::string::npos);
}

TEST(SeriesFixtures, AMadeTableSaysItIsPredictedAndWhatItWasMadeFrom) {
  const json doc = run_json({"whatif", "--trace", gpt2_pattern(), "--from", "batch=1,2", "--at",
                             "batch=16", "--budget", "24GiB"});
  ASSERT_TRUE(doc.contains("made_from")) << doc.dump();
  EXPECT_EQ(doc.at("predicted"), true);
  EXPECT_EQ(doc.at("trace").at("path"), gpt2_pattern()) << "no file at batch=16 was read";
  const json& made = doc.at("made_from");
  EXPECT_EQ(made.at("at"), 16);
  EXPECT_EQ(made.at("values"), json::array({1, 2}));
  ASSERT_EQ(made.at("files").size(), 2U);
  EXPECT_NE(made.at("files")[0].get<std::string>().find("gpt2_b1.pickle"), std::string::npos);
  EXPECT_EQ(made.at("transients"), "lines");
  EXPECT_EQ(doc.at("answer").get<std::string>().rfind("predicted for batch=16", 0), 0U)
      << doc.at("answer");
}

TEST(SeriesFixtures, FitReplayFromSaysNothingRanAndGivesTheOtherBound) {
  const json doc = fit_replay({"--budget", "12GiB"});
  ASSERT_TRUE(doc.contains("made_from"));
  const std::string answer = doc.at("answer");
  EXPECT_NE(answer.find("replays of the made traces, nothing run"), std::string::npos) << answer;
  EXPECT_EQ(answer.find("prediction held"), std::string::npos) << answer;
  const json& made = doc.at("made_from");
  EXPECT_EQ(made.at("transients"), "lines");
  EXPECT_EQ(made.at("files").size(), 2U);
  ASSERT_TRUE(made.contains("other_bound")) << "GPT-2's cuDNN attention has transient requests";
  EXPECT_EQ(made.at("other_bound").at("transients"), "refusable");
  // Refused transients hold nothing: the most a capped program fits is no less.
  EXPECT_GE(made.at("other_bound").at("value").get<std::uint64_t>(),
            doc.at("value").get<std::uint64_t>());
}

TEST(SeriesFixtures, ABudgetOverTheModelledCardIsTheCardAsked) {
  const json h200 = fit_replay({"--budget", "H200"});
  const json big = fit_replay({"--budget", "200GiB"});
  const json card80 = fit_replay({"--budget", "80GiB"});
  EXPECT_EQ(big.at("budget_bytes"), 200ULL << 30U);
  EXPECT_GT(big.at("value").get<std::uint64_t>(), h200.at("value").get<std::uint64_t>());
  EXPECT_GT(h200.at("value").get<std::uint64_t>(), card80.at("value").get<std::uint64_t>());
}

TEST(SeriesFixtures, OutsideIsTakenFromTheBudget) {
  const json with_outside = fit_replay({"--budget", "12GiB", "--outside", "2GiB"});
  const json smaller = fit_replay({"--budget", "10GiB"});
  EXPECT_EQ(with_outside.at("budget_bytes"), 10ULL << 30U);
  EXPECT_EQ(with_outside.at("outside_bytes"), 2ULL << 30U);
  EXPECT_EQ(with_outside.at("value"), smaller.at("value"));
  EXPECT_LT(with_outside.at("value").get<std::uint64_t>(),
            fit_replay({"--budget", "12GiB"}).at("value").get<std::uint64_t>());
}

// The card table's answer names the best exact setting: an approximate model's reading (backend=
// async, "~15") that holds more is shown as one and said in a note, never the answer.
TEST(SeriesFixtures, ACardTableNamesTheBestExactSettingNotAnApproximateReading) {
  const trace::TraceSeries series = cli::load_series(gpt2_pattern(), {"batch", {1, 2}}, {}, {});
  SeriesTable table;
  const auto row = [](std::string setting, std::uint64_t largest, bool approximate) {
    SeriesRow r;
    r.setting = std::move(setting);
    r.approximate = approximate;
    r.largest = {largest};
    return r;
  };
  table.rows = {row("native", 10, false), row("expandable_segments", 12, false),
                row("backend=async", 15, true)};
  const SeriesTableSubject subject{
      .pattern = gpt2_pattern(),
      .range = {.name = "batch", .lo = 1, .hi = 64},
      .cards = {{.name = "L4", .card_bytes = 22ULL << 30U, .budget_bytes = 22ULL << 30U}}};
  const std::string text = series_table_text(subject, series, table);
  EXPECT_EQ(text.rfind("L4 holds batch=12 with expandable_segments (native: 10)", 0), 0U) << text;
  EXPECT_NE(text.find("~15"), std::string::npos) << text;
  EXPECT_NE(text.find("backend=async reads ~15 on L4, more than expandable_segments's 12"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace oomlab
