// `oomlab compare` through the command line: exit codes 0, 1 and 2, the table, JSON, Markdown
// and JUnit outputs, on an H100 baseline against an H200 run with a newer driver
// (tests/data/compare).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fixture(const std::string& name) {
  return testing::test_data_dir() + "/compare/" + name;
}

using ::oomlab::testing::read_text;

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_compare_test_" + name);
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

using Outcome = ::oomlab::testing::CliRun;

Outcome oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), {"oomlab", "compare"});
  return ::oomlab::testing::run_in_process(args);
}

// The row of a cell in the table: scenario and allocator, then the rest.
std::string row_of(const std::string& table, const std::string& scenario,
                   const std::string& allocator) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string s;
    std::string a;
    words >> s >> a;
    if (s == scenario && a == allocator) return line;
  }
  return "(no row for " + scenario + "/" + allocator + ")";
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.ends_with(tail);
}

TEST(CompareCli, H100BaselineAgainstH200WarnsShowsBothEnvironmentsAndFailsOnItsRegressions) {
  const Outcome o = oomlab({fixture("h100_matrix.json"), fixture("h200_matrix.json")});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(
      o.err.find(
          "oomlab: warning: comparing different environments: device NVIDIA H100 80GB HBM3 vs "
          "NVIDIA H200; driver 575.57.08 vs 580.159.04; CUDA runtime 12.9 (12090) vs 13.0 (13000)"),
      std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NVIDIA H200"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("575.57.08"), std::string::npos);
  EXPECT_NE(o.out.find("580.159.04"), std::string::npos);
  const std::vector<std::tuple<std::string, std::string, std::string>> expected = {
      {"fragmentation", "cuda", "same"},
      {"fragmentation", "async", "earlier-oom"},
      {"growing-batch", "async", "same"},
      {"growing-batch", "managed", "later-oom"},
      {"leak", "async", "same"},
      {"leak", "cuda", "missing"},
      {"mixed-precision", "async", "crash"},
      {"mixed-precision", "managed", "fixed"},
      {"leak", "managed", "added"}};
  for (const auto& [scenario, allocator, verdict] : expected) {
    const std::string row = row_of(o.out, scenario, allocator);
    EXPECT_TRUE(ends_with(row, verdict)) << scenario << "/" << allocator << ": " << row;
  }
  EXPECT_NE(row_of(o.out, "fragmentation", "async").find("2.25 GiB @ event 196,609"),
            std::string::npos);
  EXPECT_NE(
      o.out.find(
          "verdicts: 3 same, 1 earlier-oom, 1 later-oom, 1 fixed, 1 crash, 1 missing, 1 added"),
      std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("REGRESSION: 2 of 9 cells (1 earlier-oom, 1 crash)"), std::string::npos)
      << o.out;
}

// The two baselines that ci/nightly.sh wrote on real GPUs (ci/baselines): an H100 80 GB and an
// H200 141 GB, same driver. The budget is held by a ballast, so the driver runs out at the same
// place on both: every cell matches and none moved, and the environments still differ.
TEST(CompareCli, TheCommittedH100AndH200BaselinesMatchCellByCellWithAWarning) {
  const fs::path baselines = fs::path(testing::test_data_dir()) / ".." / ".." / "ci" / "baselines";
  const Outcome o = oomlab({(baselines / "nvidia-h100-80gb-hbm3-580.json").string(),
                            (baselines / "nvidia-h200-580.json").string()});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("oomlab: warning: comparing different environments: device NVIDIA H100 "
                       "80GB HBM3 vs NVIDIA H200"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.err.find("driver"), std::string::npos) << "one driver on both: " << o.err;
  for (const char* scenario :
       {"fragmentation", "growing-batch", "leak", "mixed-precision", "replay"}) {
    for (const char* allocator : {"cuda", "async", "managed"}) {
      const std::string row = row_of(o.out, scenario, allocator);
      EXPECT_TRUE(ends_with(row, "same")) << row;
      EXPECT_NE(row.find("+0.0% / +0.0%"), std::string::npos) << row;
    }
  }
  EXPECT_NE(o.out.find("verdicts: 15 same"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("no regression in 15 cells"), std::string::npos) << o.out;
}

TEST(CompareCli, NoRegressionExitsZero) {
  const Outcome itself = oomlab({fixture("h100_matrix.json"), fixture("h100_matrix.json")});
  EXPECT_EQ(itself.code, 0) << itself.err;
  EXPECT_EQ(itself.err, "") << "same environment: no warning";
  EXPECT_NE(itself.out.find("no regression in 8 cells"), std::string::npos) << itself.out;
  // Two run summaries of growing-batch on async, H100 then H200: +0.2% live bytes, same step.
  const Outcome runs = oomlab(
      {fixture("h100_run_growing-batch_async.json"), fixture("h200_run_growing-batch_async.json")});
  EXPECT_EQ(runs.code, 0) << runs.err;
  EXPECT_TRUE(ends_with(row_of(runs.out, "growing-batch", "async"), "same")) << runs.out;
  EXPECT_NE(runs.out.find("+0.2% / +0.0%"), std::string::npos) << runs.out;
}

TEST(CompareCli, ARegressionBecomesSameWithAWiderTolerance) {
  const Outcome o = oomlab({fixture("h100_run_growing-batch_async.json"),
                            fixture("h200_run_growing-batch_async.json"), "--tolerance", "0.1%"});
  EXPECT_EQ(o.code, 0) << "+0.2% is later, not a regression";
  EXPECT_TRUE(ends_with(row_of(o.out, "growing-batch", "async"), "later-oom")) << o.out;
  EXPECT_EQ(oomlab({fixture("h100_run_growing-batch_async.json"),
                    fixture("h100_run_growing-batch_async.json"), "--tolerance", "0%"})
                .code,
            0);
}

TEST(CompareCli, BadInputExitsTwoWithOneLineNamingTheFile) {
  const fs::path folder = temp_folder("bad");
  write(folder / "broken.json", "{\"schema\": \"oomlab.matrix.v1\",\n \"cells\": [,]}\n");
  write(folder / "frontier.json", R"({"schema": "oomlab.frontier.v1"})");
  const std::string good = fixture("h100_matrix.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{good, (folder / "nothing.json").string()},
       "current: " + (folder / "nothing.json").string() + ": cannot read"},
      {{(folder / "broken.json").string(), good},
       "baseline: " + (folder / "broken.json").string() + ":2:12: not valid JSON"},
      {{good, (folder / "frontier.json").string()},
       "schema 'oomlab.frontier.v1' is not one compare reads"},
      {{good, folder.string()}, "the folder holds neither matrix.json nor summary.json"},
      {{good, good, "--tolerance", "-1%"}, "--tolerance: '-1%' must not be negative"},
      {{good, good, "--tolerance", "101%"}, "--tolerance: '101%' is out of range"},
      {{good, good, "--tolerance", "lots"}, "--tolerance: 'lots' is not a percentage"},
      {{good, good, "--tolerance", "2"}, "--tolerance: '2' is not a percentage"},
      {{good, good, "--json", "-", "--markdown", "-"},
       "only one of --json, --markdown and --junit"},
      {{good}, "current is required"},
  };
  for (const auto& [args, fragment] : cases) {
    const Outcome o = oomlab(args);
    EXPECT_EQ(o.code, 2) << fragment << ": " << o.err;
    EXPECT_EQ(o.err.rfind("oomlab: error: ", 0), 0U) << o.err;
    EXPECT_NE(o.err.find(fragment), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "one line: " << o.err;
    EXPECT_EQ(o.out, "");
  }
}

TEST(CompareCli, JsonToStdoutIsTheDocumentAloneWithTheSchema) {
  const Outcome o =
      oomlab({fixture("h100_matrix.json"), fixture("h200_matrix.json"), "--json", "-"});
  EXPECT_EQ(o.code, 1);
  const json doc = json::parse(o.out);  // throws if anything else is on stdout
  EXPECT_EQ(doc.at("schema"), "oomlab.compare.v1");
  EXPECT_EQ(doc.at("tolerance"), 0.02);
  EXPECT_EQ(doc.at("baseline").at("environment").at("device").at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(doc.at("current").at("environment").at("driver"), "580.159.04");
  EXPECT_TRUE(doc.at("environments_differ").get<bool>());
  ASSERT_EQ(doc.at("cells").size(), 9U);
  const json& fragmentation = doc.at("cells").at(1);
  EXPECT_EQ(fragmentation.at("key").at("allocator"), "async");
  EXPECT_EQ(fragmentation.at("verdict"), "earlier-oom");
  EXPECT_TRUE(fragmentation.at("regression").get<bool>());
  EXPECT_EQ(fragmentation.at("baseline").at("oom").at("live_bytes"), 2'415'919'104ULL);
  EXPECT_EQ(fragmentation.at("current").at("oom").at("live_bytes"), 2'231'369'728ULL);
  EXPECT_EQ(fragmentation.at("step_measure"), "event");
  EXPECT_EQ(doc.at("cells").at(5).at("current"), nullptr) << "missing";
  EXPECT_EQ(doc.at("totals").at("cells"), 9);
  EXPECT_EQ(doc.at("totals").at("regressions"), 2);
  EXPECT_EQ(doc.at("totals").at("same"), 3);
  EXPECT_EQ(doc.at("totals").at("crash"), 1);
  EXPECT_TRUE(doc.at("regression").get<bool>());
  EXPECT_NE(o.err.find("verdict"), std::string::npos) << "the table goes to stderr";
}

TEST(CompareCli, JUnitHasOneTestcasePerCellAndFailuresForRegressions) {
  const fs::path folder = temp_folder("junit");
  const fs::path xml = folder / "ci" / "compare.xml";
  const fs::path md = folder / "compare.md";
  const fs::path js = folder / "compare.json";
  const Outcome o = oomlab({fixture("h100_matrix.json"), fixture("h200_matrix.json"), "--junit",
                            xml.string(), "--markdown", md.string(), "--json", js.string()});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("REGRESSION"), std::string::npos) << "the table stays on stdout";
  const std::string text = read_text(xml);
  const auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("<testcase "), 9U) << text;
  EXPECT_EQ(count("<failure "), 2U) << text;
  EXPECT_EQ(count("<skipped "), 1U) << "missing is a warning";
  EXPECT_NE(text.find("tests=\"9\" failures=\"2\""), std::string::npos) << text;
  EXPECT_NE(text.find("classname=\"oomlab.compare.fragmentation\" name=\"async @ 8GiB\""),
            std::string::npos);
  EXPECT_NE(text.find("message=\"crash: the current cell crashed (SIGSEGV: Segmentation fault"),
            std::string::npos)
      << text;
  const std::string markdown = read_text(md);
  EXPECT_NE(markdown.find("| scenario | allocator | budget |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| **earlier-oom** |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| driver | **575.57.08** | **580.159.04** |"), std::string::npos)
      << markdown;
  EXPECT_EQ(json::parse(read_text(js)).at("schema"), "oomlab.compare.v1");
}

TEST(CompareCli, MarkdownToStdoutIsTheDocumentAlone) {
  const Outcome o =
      oomlab({fixture("h100_matrix.json"), fixture("h100_matrix.json"), "--markdown", "-"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out.rfind("# oomlab compare\n", 0), 0U) << o.out;
  EXPECT_NE(o.err.find("no regression in 8 cells"), std::string::npos) << o.err;
}

TEST(CompareCli, ARunSummaryMatchesItsCellOfAMatrix) {
  // matrix writes each cell's key as a run's own: the H100 run of growing-batch/async is that cell.
  const Outcome o =
      oomlab({fixture("h100_run_growing-batch_async.json"), fixture("h200_matrix.json")});
  EXPECT_TRUE(ends_with(row_of(o.out, "growing-batch", "async"), "same")) << o.out;
  EXPECT_NE(o.out.find("verdicts: 1 same, 1 new-failure, 6 added"), std::string::npos) << o.out;
  const std::string crashed = row_of(o.out, "mixed-precision", "async");
  EXPECT_NE(crashed.find(" crash "), std::string::npos) << crashed;
  // Only in the current, but crashed: no baseline excuses a failure (issue 28).
  EXPECT_TRUE(ends_with(crashed, "new-failure")) << crashed;
  EXPECT_EQ(o.code, 1) << o.err;
}

TEST(CompareCli, WarnsWhenNoCellMatches) {
  const fs::path folder = temp_folder("nomatch");
  json run = json::parse(read_text(fixture("h200_run_growing-batch_async.json")));
  run["budget_bytes"] = 16ULL << 30U;
  std::ofstream(folder / "summary.json") << run.dump();
  const Outcome o = oomlab({fixture("h100_matrix.json"), folder.string()});
  EXPECT_EQ(o.code, 6) << "nothing matched: not a pass (compare_incomplete_test.cpp)";
  EXPECT_NE(o.err.find("oomlab: warning: no baseline cell is in the current"), std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("8 missing, 1 added"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace oomlab
