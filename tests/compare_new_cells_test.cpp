// `compare` on cells the baseline does not have: one that failed is a regression of its own
// (new-failure, with its message), and one that differs from a missing cell only in its
// allocator's options shows those options on both rows.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/writers/junit.hpp"

namespace oomlab {
namespace {

using nlohmann::json;

json key_of(const std::string& allocator, json options, json params = json::object()) {
  return {{"scenario", "fragmentation"},
          {"allocator", allocator},
          {"options", std::move(options)},
          {"params", std::move(params)},
          {"budget", 1ULL << 30U}};
}

CompareCell cell(json key, const std::string& outcome, const std::string& why = "") {
  CompareCell c;
  c.scenario = key.value("scenario", "");
  c.allocator = key.value("allocator", "");
  c.key = std::move(key);
  c.budget = "1GiB";
  c.outcome = outcome;
  if (outcome == "oom") c.oom = OomRecord{.event = 2'026, .live_bytes = 2ULL << 20U};
  c.why = why;
  return c;
}

CompareInput input_of(std::vector<CompareCell> cells) {
  CompareInput input;
  input.path = "in-memory.json";
  input.kind = "matrix";
  input.environment = json::object();
  input.cells = std::move(cells);
  return input;
}

const json kNoOptions = json::object();

TEST(CompareNewCells, ACellOnlyTheCurrentHasThatFailedIsANewFailureWithItsMessage) {
  const std::string why = "python3: can't open file '/srv/oomlab/probe/fit_truth.py'";
  for (const char* outcome : {"error", "crash", "timeout", "interrupted"}) {
    const Comparison c = compare(input_of({cell(key_of("sim", kNoOptions), "oom")}),
                                 input_of({cell(key_of("sim", kNoOptions), "oom"),
                                           cell(key_of("exec", kNoOptions), outcome, why)}),
                                 0.02);
    ASSERT_EQ(c.cells.size(), 2U);
    const CellVerdict& v = c.cells[1];
    EXPECT_EQ(v.verdict, Verdict::new_failure) << outcome;
    EXPECT_TRUE(is_regression(v.verdict));
    EXPECT_EQ(to_string(v.verdict), "new-failure");
    EXPECT_NE(v.reason.find("new failure"), std::string::npos) << v.reason;
    EXPECT_NE(v.reason.find(why), std::string::npos) << v.reason;
    EXPECT_EQ(c.regressions(), 1U);
    EXPECT_EQ(incomplete_reason(c), "") << "the baseline's one cell matched";
  }
}

TEST(CompareNewCells, ACellOnlyTheCurrentHasThatRanIsAddedAndNoRegression) {
  for (const char* outcome : {"oom", "completed"}) {
    const Comparison c =
        compare(input_of({}), input_of({cell(key_of("sim", kNoOptions), outcome)}), 0.02);
    EXPECT_EQ(c.cells.at(0).verdict, Verdict::added) << outcome;
    EXPECT_EQ(c.regressions(), 0U);
  }
}

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

// A matrix file with one cell per (allocator, options, outcome, why).
std::string matrix_text(const std::vector<CompareCell>& cells) {
  json doc = {{"schema", "oomlab.matrix.v1"}, {"environment", json::object()}};
  doc["cells"] = json::array();
  for (const CompareCell& c : cells) {
    json j = {{"key", c.key}, {"outcome", c.outcome}, {"last_lines", {c.why}}};
    if (c.oom)
      j["summary"] = {{"oom",
                       {{"live_bytes", c.oom->live_bytes},
                        {"step", 0},
                        {"event", c.oom->event},
                        {"request_bytes", 2ULL << 20U},
                        {"reserved_bytes", 2ULL << 20U},
                        {"cause", "capacity"}}}};
    doc["cells"].push_back(j);
  }
  return doc.dump();
}

TEST(CompareNewCells, ANewFailureFailsTheCommandAndItsMessageIsInEveryOutput) {
  const std::string why = "python3: can't open file 'probe/fit_truth.py'";
  const CompareInput baseline =
      parse_compare_input(matrix_text({cell(key_of("sim", kNoOptions), "oom")}), "base.json");
  const CompareInput current =
      parse_compare_input(matrix_text({cell(key_of("sim", kNoOptions), "oom"),
                                       cell(key_of("exec", kNoOptions), "error", why)}),
                          "current.json");
  const Comparison c = compare(baseline, current, 0.02);
  const std::string table = compare_table(c);
  EXPECT_NE(table.find("new-failure"), std::string::npos) << table;
  EXPECT_NE(table.find("regressions:\n  fragmentation/exec @ 1.00 GiB: new failure"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(why), std::string::npos) << table;
  const std::string markdown = compare_markdown(c);
  EXPECT_NE(markdown.find("**new-failure**"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find(why), std::string::npos) << "the job summary says why: " << markdown;
  const std::vector<JUnitCase> cases = compare_junit_cases(c);
  ASSERT_EQ(cases.size(), 2U);
  EXPECT_EQ(cases[1].result, JUnitCase::Result::failure);
  EXPECT_NE(cases[1].message.find(why), std::string::npos) << cases[1].message;
  const auto json_out = compare_json(c);
  EXPECT_EQ(json_out["totals"]["new-failure"], 1);
  EXPECT_EQ(json_out["cells"][1]["verdict"], "new-failure");
  EXPECT_EQ(json_out["cells"][1]["regression"], true);
}

// Two runs of async that differ only in release_threshold (issue 22: two identical rows).
TEST(CompareNewCells, CellsThatDifferOnlyInOptionsShowTheOptionsOnBothRows) {
  const json zero = {{"release_threshold", 0}, {"reuse_opportunistic", true}};
  const json most = {{"release_threshold", UINT64_MAX}, {"reuse_opportunistic", true}};
  const Comparison c = compare(input_of({cell(key_of("async", zero), "oom")}),
                               input_of({cell(key_of("async", most), "oom")}), 0.02);
  ASSERT_EQ(c.cells.size(), 2U);
  EXPECT_EQ(c.cells[0].verdict, Verdict::missing) << "not the same cell: verdicts stay";
  EXPECT_EQ(c.cells[1].verdict, Verdict::added);
  EXPECT_EQ(c.cells[0].allocator_label(), "async (release_threshold=0)");
  EXPECT_EQ(c.cells[1].allocator_label(), "async (release_threshold=max)");
  ASSERT_EQ(c.cells[1].options_differ.size(), 1U) << "reuse_opportunistic is the same";
  EXPECT_EQ(c.cells[1].options_differ[0].option, "release_threshold");
  EXPECT_EQ(options_differ_text(c.cells[0]),
            "options differ: release_threshold=0 (baseline) vs release_threshold=max (current)");

  const std::string table = compare_table(c);
  EXPECT_NE(table.find("fragmentation  async (release_threshold=0)  "), std::string::npos) << table;
  EXPECT_NE(table.find("fragmentation  async (release_threshold=max)"), std::string::npos) << table;
  EXPECT_NE(table.find("fragmentation/async @ 1GiB: options differ: release_threshold=0 "
                       "(baseline) vs release_threshold=max (current)"),
            std::string::npos)
      << table;
  EXPECT_NE(compare_markdown(c).find("async (release_threshold=max)"), std::string::npos);
  const auto j = compare_json(c);
  EXPECT_EQ(j["cells"][0]["allocator"], "async") << "fields keep their meaning";
  EXPECT_EQ(j["cells"][1]["options_differ"][0]["current"], "max");
  EXPECT_EQ(j["cells"][0]["options_differ"][0]["baseline"], "0");
  const std::vector<JUnitCase> cases = compare_junit_cases(c);
  EXPECT_NE(cases[0].name, cases[1].name);
}

TEST(CompareNewCells, OptionsArePairedOnlyWhenEverythingElseIsTheSame) {
  const json page2 = {{"page", 2ULL << 20U}};
  const json page4 = {{"page", 4ULL << 20U}};
  const Comparison other_params =
      compare(input_of({cell(key_of("sim", page2, {{"block", 65536}}), "oom")}),
              input_of({cell(key_of("sim", page4, {{"block", 4096}}), "oom")}), 0.02);
  EXPECT_TRUE(other_params.cells[0].options_differ.empty());
  EXPECT_EQ(other_params.cells[1].allocator_label(), "sim");

  // A matrix's label already names the option as asked: it is not said twice.
  CompareCell asked = cell(key_of("sim", page4), "oom");
  asked.allocator = "sim:page=4MiB";
  const Comparison labelled =
      compare(input_of({cell(key_of("sim", page2), "oom")}), input_of({asked}), 0.02);
  EXPECT_EQ(labelled.cells[0].allocator_label(), "sim (page=2MiB)");
  EXPECT_EQ(labelled.cells[1].allocator_label(), "sim:page=4MiB");

  // An option only one side records.
  const Comparison one_sided = compare(input_of({cell(key_of("sim", page2), "oom")}),
                                       input_of({cell(key_of("sim", kNoOptions), "oom")}), 0.02);
  EXPECT_EQ(one_sided.cells[1].allocator_label(), "sim (page not set)");
}

}  // namespace
}  // namespace oomlab
