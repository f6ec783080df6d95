// `oomlab report` of a frontier folder (frontier.json), a fit folder (fit.json) and a whatif folder
// (whatif.json): each leads with its answer; a whatif folder's report is whatif's own, made again
// from whatif.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(testing::test_data_dir());

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_report_search_test_" + name);
}

using ::oomlab::testing::read_text;

using CliOutcome = ::oomlab::testing::CliRun;

CliOutcome oomlab_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

TEST(ReportSearch, AFrontierFolderLeadsWithTheAnswerThenTheTrials) {
  const fs::path dir = temp_folder("frontier");
  const CliOutcome search = oomlab_cli({"frontier", "replay", "--trace",
                                        (kData / "pytorch_gpt_fp32_snapshot.pickle").string(), "-a",
                                        "torch", "--out", (dir / "f").string(), "--quiet"});
  ASSERT_EQ(search.code, 0) << search.err;
  const std::string answer = search.out.substr(0, search.out.find('\n'));
  const nlohmann::json doc = nlohmann::json::parse(read_text(dir / "f" / "frontier.json"));
  EXPECT_EQ(doc.at("answer"), answer) << "frontier.json keeps the line the command printed";

  const CliOutcome report = oomlab_cli({"report", (dir / "f").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string md = read_text(dir / "f" / "report.md");
  const std::string html = read_text(dir / "f" / "report.html");
  EXPECT_LT(md.find("**" + answer + "**"), md.find("## The trials")) << md;
  // One table row per trial, budgets exact.
  for (const nlohmann::json& trial : doc.at("trials")) {
    const auto bytes = trial.at("budget_bytes").get<std::uint64_t>();
    EXPECT_NE(md.find("| " + format_count(bytes) + " |"), std::string::npos) << bytes;
  }
  EXPECT_NE(md.find("max_split_size=max"), std::string::npos) << "options as oomlab writes them";
  const std::size_t lead = html.find("id=\"answer\"");
  ASSERT_NE(lead, std::string::npos) << html;
  EXPECT_LT(lead, html.find("id=\"frontier-trials\""));
  EXPECT_NE(html.find(format_count(doc.at("frontier_bytes").get<std::uint64_t>())),
            std::string::npos);
}

// A frontier.json written before it kept its answer, and one of `frontier exec`'s: the frontier's
// figures lead, and a program's trials show its peak and its own OOM line.
TEST(ReportSearch, AFrontierJsonWithoutItsAnswerLeadsWithTheFrontier) {
  const fs::path dir = temp_folder("exec_frontier");
  std::ofstream(dir / "frontier.json") << R"({
    "schema": "oomlab.frontier.v1", "oomlab": {"version": "0.1.0"},
    "scenario": {"name": "exec", "params": {"command": "python train.py"}},
    "allocator": {"name": "exec", "options": {}}, "simulated": false,
    "upper_bytes": 8589934592, "frontier_bytes": 4294967296, "failing_bytes": 4227858432,
    "timed_out": false, "resolution_bytes": 67108864,
    "trials": [
      {"budget_bytes": 8589934592, "outcome": "completed", "cause": null, "duration_ms": 4100,
       "peak_bytes": 3900000000, "oom_line": "", "confirm": false},
      {"budget_bytes": 4227858432, "outcome": "oom", "cause": "capacity", "duration_ms": 3000,
       "peak_bytes": 4100000000, "oom_line": "torch.OutOfMemoryError: CUDA out of memory.",
       "confirm": false}],
    "program": {"first_bytes": 500000000, "peak_bytes": 4100000000, "usage_source": "nvml"}})";
  const CliOutcome report = oomlab_cli({"report", (dir / "frontier.json").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find("**frontier 4.00 GiB (4,294,967,296 B): completes there and above, not at "
                    "4,227,858,432 B**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("torch.OutOfMemoryError: CUDA out of memory."), std::string::npos) << md;
  EXPECT_NE(md.find("| Command | python train.py |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Program's peak | 3.82 GiB |"), std::string::npos) << md;
}

// `oomlab fit --out DIR` wrote fit.json that `oomlab report DIR` refused ("holds none of ...").
// Its report leads with the command's lines, then a row per trial, then the search's figures.
TEST(ReportSearch, AFitFolderLeadsWithTheAnswerThenTheTrials) {
  const fs::path dir = temp_folder("fit");
  const CliOutcome search =
      oomlab_cli({"fit", "leak", "-a", "sim", "--budget", "1GiB", "-p", "leak=8MiB", "--range",
                  "steps=1..1000", "--confirm", "1", "--out", (dir / "f").string(), "--quiet"});
  ASSERT_EQ(search.code, 0) << search.err;
  const nlohmann::json doc = nlohmann::json::parse(read_text(dir / "f" / "fit.json"));
  const std::string answer = search.out.substr(0, search.out.find('\n'));
  ASSERT_EQ(doc.at("answer").get<std::string>().rfind(answer, 0), 0U) << doc.at("answer");
  const std::string confirmed = search.out.substr(answer.size() + 1);
  ASSERT_EQ(confirmed.rfind("confirmed: ", 0), 0U) << search.out;

  const CliOutcome report = oomlab_cli({"report", (dir / "f").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string md = read_text(dir / "f" / "report.md");
  const std::string html = read_text(dir / "f" / "report.html");
  EXPECT_EQ(md.find("# oomlab fit · leak on sim (simulated)\n\n**" + answer + "**\n\n" +
                    confirmed.substr(0, confirmed.find('\n')) + "\n\n## The trials"),
            0U)
      << md;
  const auto& trials = doc.at("trials");
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const std::string row = "| " + std::to_string(i + 1) + " | " +
                            format_count(trials[i].at("value").get<std::uint64_t>()) + " | " +
                            trials[i].at("role").get<std::string>() + " |";
    EXPECT_NE(md.find(row), std::string::npos) << row;
  }
  const std::string value = "steps=" + std::to_string(doc.at("value").get<std::uint64_t>());
  EXPECT_NE(md.find("| Largest value that completes | " + value + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Budget | 1.00 GiB (1,073,741,824 B) |"), std::string::npos) << md;
  const std::size_t lead = html.find("id=\"answer\"");
  ASSERT_NE(lead, std::string::npos) << html;
  EXPECT_LT(lead, html.find("id=\"fit-trials\""));
  EXPECT_LT(html.find("id=\"fit-trials\""), html.find("id=\"fit-facts\""));
}

// fit replay --from's fit.json: the prediction and the snapshots it was made from are in the facts.
TEST(ReportSearch, AFitMadeFromASeriesSaysWhatItWasMadeFrom) {
  const fs::path series = testing::series_archive("series.tgz");
  const fs::path dir = temp_folder("fit_series");
  const CliOutcome search =
      oomlab_cli({"fit", "replay", "--trace", (series / "gpt2_b{batch}.pickle").string(), "--from",
                  "batch=1,2", "--range", "batch=1..64", "--budget", "16GiB", "--out",
                  (dir / "f").string(), "--quiet"});
  ASSERT_EQ(search.code, 0) << search.err;
  const nlohmann::json doc = nlohmann::json::parse(read_text(dir / "f" / "fit.json"));
  const CliOutcome report = oomlab_cli({"report", (dir / "f" / "fit.json").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string md = read_text(dir / "f" / "report.md");
  EXPECT_NE(md.find("**" + doc.at("answer").get<std::string>() + "**"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| Predicted | batch=" + std::to_string(doc.at("predicted").get<std::uint64_t>())),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| Made from | the snapshots at batch=1,2: "), std::string::npos) << md;
}

// A fit.json without its answer lines (a tool's own, or hand-made): the search's figures lead, and
// a program's trials carry its last words.
TEST(ReportSearch, AFitJsonWithoutItsAnswerLeadsWithTheLargestValue) {
  const fs::path dir = temp_folder("exec_fit");
  std::ofstream(dir / "fit.json") << R"({
    "schema": "oomlab.fit.v1", "oomlab": {"version": "0.1.0"},
    "scenario": {"name": "exec", "params": {"command": "python train.py --batch {batch}"}},
    "allocator": {"name": "exec", "options": {}}, "simulated": false,
    "range": {"name": "batch", "lo": 1, "hi": 64}, "budget_bytes": 25769803776,
    "value": 30, "next_value": 31, "peak_bytes": 25000000000, "headroom_bytes": 769803776,
    "timed_out": false, "stopped": null, "cards": ["H100-80GB"],
    "trials": [
      {"value": 30, "outcome": "completed", "peak": 25000000000, "seconds": 21.0,
       "cause": null, "request_bytes": null, "role": "step", "message": ""},
      {"value": 31, "outcome": "oom", "peak": 25700000000, "seconds": 20.0,
       "cause": "capacity", "request_bytes": 1073741824, "role": "bisection",
       "message": "torch.OutOfMemoryError: CUDA out of memory."}]})";
  const CliOutcome report = oomlab_cli({"report", (dir / "fit.json").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  const std::string md = read_text(dir / "report.md");
  EXPECT_EQ(md.find("# oomlab fit · a program\n\n**batch=30 is the largest that completes under "
                    "24.0 GiB (25,769,803,776 B); batch=31 does not**"),
            0U)
      << md;
  EXPECT_NE(md.find("torch.OutOfMemoryError: CUDA out of memory."), std::string::npos) << md;
  EXPECT_NE(md.find("| Command | python train.py --batch {batch} |"), std::string::npos) << md;
  std::ofstream(dir / "fit.json") << R"({"schema": "oomlab.fit.v1", "scenario": {"name": "x"},
                                         "allocator": {"name": "sim"}})";
  const CliOutcome bad = oomlab_cli({"report", dir.string()});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("'range' must be an object"), std::string::npos) << bad.err;
}

// A job capped until it ran out of memory: its snapshot stops there (every figure a lower bound).
TEST(ReportSearch, AWhatIfFolderIsWhatifsOwnReportMadeAgain) {
  const fs::path dir = temp_folder("whatif");
  const CliOutcome whatif =
      oomlab_cli({"whatif", "--trace", (kData / "pytorch" / "grow_cap2g_native.pickle").string(),
                  "--budget", "2GiB", "--out", (dir / "w").string(), "--quiet"});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const std::string md = read_text(dir / "w" / "report.md");
  const std::string html = read_text(dir / "w" / "report.html");
  fs::remove(dir / "w" / "report.md");
  fs::remove(dir / "w" / "report.html");
  const CliOutcome report = oomlab_cli({"report", (dir / "w").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_EQ(read_text(dir / "w" / "report.md"), md);
  EXPECT_EQ(read_text(dir / "w" / "report.html"), html);
  // It leads with the answer (the best setting), then the table.
  const std::string answer = whatif.out.substr(0, whatif.out.find('\n'));
  EXPECT_LT(md.find("**" + answer.substr(0, 40)), md.find("| setting |")) << md;
}

// A table made from a series gives each row a range (transient requests held or on their lines):
// made again from whatif.json, the report kept none and printed every figure as exact.
TEST(ReportSearch, AWhatIfFolderMadeFromASeriesKeepsItsRangesWhenReportedAgain) {
  const fs::path series = testing::series_archive("series.tgz");
  const fs::path dir = temp_folder("whatif_series");
  const CliOutcome whatif =
      oomlab_cli({"whatif", "--trace", (series / "resnet_b{batch}.pickle").string(), "--from",
                  "batch=1,2", "--at", "batch=16", "--out", (dir / "w").string(), "--quiet"});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const std::string md = read_text(dir / "w" / "report.md");
  ASSERT_NE(md.find(" GiB.."), std::string::npos) << "rows with ranges: " << md;
  fs::remove(dir / "w" / "report.md");
  fs::remove(dir / "w" / "report.html");
  const CliOutcome report = oomlab_cli({"report", (dir / "w").string()});
  ASSERT_EQ(report.code, 0) << report.err;
  EXPECT_EQ(read_text(dir / "w" / "report.md"), md);
}

TEST(ReportSearch, BadFrontierAndWhatIfFilesAreExitTwoNamingTheField) {
  const fs::path dir = temp_folder("bad");
  fs::create_directories(dir / "w");
  std::ofstream(dir / "w" / "whatif.json")
      << R"({"schema": "oomlab.whatif.v1", "trace": {"path": "x.pickle"}, "card_bytes": 1,
            "rows": [{"name": "native", "at_budget": {"outcome": "exploded"}}]})";
  const CliOutcome whatif = oomlab_cli({"report", (dir / "w").string()});
  EXPECT_EQ(whatif.code, 2);
  EXPECT_NE(whatif.err.find("'rows[0].at_budget.outcome' must be one of oom, completed"),
            std::string::npos)
      << whatif.err;
  std::ofstream(dir / "frontier.json") << R"({"schema": "oomlab.frontier.v1"})";
  const CliOutcome frontier = oomlab_cli({"report", (dir / "frontier.json").string()});
  EXPECT_EQ(frontier.code, 2);
  EXPECT_NE(frontier.err.find("'scenario' must be an object"), std::string::npos) << frontier.err;
  fs::create_directories(dir / "empty");
  const CliOutcome empty = oomlab_cli({"report", (dir / "empty").string()});
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(
      empty.err.find("frontier.json (a frontier), fit.json (a fit) or whatif.json (a whatif)"),
      std::string::npos)
      << empty.err;
}

}  // namespace
}  // namespace oomlab
