// A report leads with what the run answers: a search's largest batch with its trials on the
// timeline, mixed precision's table and the trial its OOM came from, where a replayed program
// itself failed, an error and its last events, a soak's verdict, a matrix's counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/report_writer.hpp"
#include "oomlab/units.hpp"
#include "reports/run/summary_json.hpp"
#include "run/run_result.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path temp_folder(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_report_answer_test_" + name);
  fs::remove_all(path);
  return path;
}

using ::oomlab::testing::read_text;

json read_json(const fs::path& path) {
  return json::parse(read_text(path));
}

// `oomlab run ARGS --out DIR -q` in-process, then `oomlab report DIR`; the folder. A soak's
// verdict may be "failed" (exit 1) where this process's resident memory is not its own to judge.
fs::path run_and_report(const std::string& name, std::vector<std::string> args, bool soak = false) {
  const fs::path dir = temp_folder(name);
  args.insert(args.begin(), {"oomlab", "run"});
  for (const std::string& a : {std::string("--out"), dir.string(), std::string("-q")})
    args.push_back(a);
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run_cli(args, out, err);
  if (soak)
    EXPECT_TRUE(code == 0 || code == 1) << code << ' ' << err.str();
  else
    EXPECT_EQ(code, 0) << err.str();
  static_cast<void>(write_reports(dir, ""));
  return dir;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

std::uint64_t metric(const json& summary, const std::string& name) {
  return summary.at("metrics").at(name).get<std::uint64_t>();
}

// The trial of summary.json whose events hold the recorded OOM.
json oom_trial(const json& summary) {
  const std::uint64_t event = summary.at("oom").at("event").get<std::uint64_t>();
  for (const json& t : summary.at("trials")) {
    if (t.at("first_event").get<std::uint64_t>() <= event &&
        event <= t.at("last_event").get<std::uint64_t>()) {
      return t;
    }
  }
  ADD_FAILURE() << "no trial holds the OOM";
  return json::object();
}

TEST(ReportAnswer, GrowingBatchLeadsWithTheMaxBatchAndMarksEveryTrial) {
  const fs::path dir = run_and_report("growing", {"growing-batch", "-a", "sim", "-b", "2GiB"});
  const json summary = read_json(dir / "summary.json");
  const std::uint64_t max_batch = metric(summary, "max_batch");
  ASSERT_GT(max_batch, 0U);
  const std::string html = read_text(dir / "report.html");
  const std::string answer =
      fmt::format("<p class=\"answer\" id=\"answer\">Max batch {} ", max_batch);
  ASSERT_NE(html.find(answer), std::string::npos) << "no headline with the max batch";
  EXPECT_LT(html.find(answer), html.find("id=\"timeline\"")) << "the answer comes first";
  EXPECT_NE(html.find(fmt::format("batch {} ran out of memory", max_batch + 1)), std::string::npos);

  const json& trials = summary.at("trials");
  EXPECT_EQ(trials.size(), metric(summary, "trials"));
  std::size_t failed = 0;
  for (const json& t : trials)
    failed += t.at("fitted").get<bool>() ? 0 : 1;
  EXPECT_EQ(occurrences(html, "<g class=\"trial "), trials.size()) << "every trial on the timeline";
  EXPECT_EQ(occurrences(html, "<g class=\"trial failed\""), failed);
  EXPECT_NE(html.find(fmt::format("<title>trial {}: fitted</title>",
                                  fmt::format("fp32 batch {}", max_batch))),
            std::string::npos);
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find(fmt::format("**Max batch {} ", max_batch)), std::string::npos) << md;
}

TEST(ReportAnswer, MixedPrecisionHasAPrecisionTableAndTheTrialItsOomCameFrom) {
  const fs::path dir = run_and_report(
      "mixed", {"mixed-precision", "-a", "sim", "-b", "2GiB", "-p", "precisions=fp32,fp16"});
  const json summary = read_json(dir / "summary.json");
  const std::string html = read_text(dir / "report.html");
  ASSERT_NE(html.find("id=\"precision-table\""), std::string::npos);
  const std::uint64_t fp32 = metric(summary, "max_batch_fp32");
  const std::uint64_t fp16 = metric(summary, "max_batch_fp16");
  const double ratio = summary.at("metrics").at("ratio_fp16").get<double>();
  EXPECT_NE(html.find(fmt::format("<td>fp32</td><td>{}</td><td>1.00x</td>", format_count(fp32))),
            std::string::npos);
  EXPECT_NE(
      html.find(fmt::format("<td>fp16</td><td>{}</td><td>{:.2f}x</td>", format_count(fp16), ratio)),
      std::string::npos);
  EXPECT_NE(html.find(fmt::format("fp16 {} ({:.2f}x fp32)", fp16, ratio)), std::string::npos)
      << "the headline names each precision's max batch";

  EXPECT_EQ(occurrences(html, "<g class=\"trial-group\">"), 2U)
      << "fp32 and fp16 named on the timeline";
  const std::string label = oom_trial(summary).at("label").get<std::string>();
  EXPECT_EQ(label, fmt::format("fp16 batch {}", fp16 + 1)) << "the search's last trial";
  EXPECT_NE(html.find(fmt::format("The recorded OOM came from trial &apos;{}&apos;", label)),
            std::string::npos);
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find(fmt::format("| fp16 | {} |", format_count(fp16))), std::string::npos) << md;
  EXPECT_NE(md.find(fmt::format("came from trial '{}'", label)), std::string::npos);
}

TEST(ReportAnswer, CompletedReplayMarksWhereTheProgramItselfFailed) {
  const std::string trace = testing::test_data_dir() + "/rmm_allocate_failure.csv";
  const fs::path dir =
      run_and_report("replay", {"replay", "--trace", trace, "-a", "sim", "-b", "8GiB"});
  const json summary = read_json(dir / "summary.json");
  ASSERT_EQ(summary.at("outcome"), "completed");
  const std::uint64_t bytes = metric(summary, "trace_first_failure_bytes");
  const std::string html = read_text(dir / "report.html");
  EXPECT_NE(html.find("The replay completes in 8.00 GiB on sim, where the program itself failed"),
            std::string::npos);
  const std::string marker = "<g id=\"program-failure\"";
  const auto at = html.find(marker);
  ASSERT_NE(at, std::string::npos) << "no marker where the program failed";
  // Labelled as the text names it (a trace entry), never by the chart's own event number.
  const std::string mark = html.substr(at, html.find("</g>", at) - at);
  EXPECT_NE(
      mark.find(fmt::format(
          "failed here (trace entry {})",
          format_count(static_cast<std::uint64_t>(metric(summary, "trace_first_failure_index"))))),
      std::string::npos)
      << mark;
  EXPECT_EQ(mark.find("(event "), std::string::npos) << mark;
  const auto event_at = html.find("data-event=\"", at) + 12;
  const std::uint64_t seq = std::stoull(html.substr(event_at, html.find('"', event_at) - event_at));
  // That event in events.csv is the program's failed request, re-made.
  std::ifstream events(dir / "events.csv");
  std::string row;
  std::string found;
  while (std::getline(events, row)) {
    if (row.starts_with(std::to_string(seq) + ",")) found = row;
  }
  EXPECT_NE(found.find(fmt::format(",alloc,{},", bytes)), std::string::npos) << found;
  EXPECT_NE(html.find(fmt::format("The program itself failed at trace entry {}",
                                  metric(summary, "trace_first_failure_index"))),
            std::string::npos);
}

TEST(ReportAnswer, ABudgetFarAboveTheRunIsNamedAboveTheChartNotDrawnFlat) {
  const std::string trace = testing::test_data_dir() + "/rmm_allocate_failure.csv";
  const fs::path dir =
      run_and_report("huge_budget", {"replay", "--trace", trace, "-a", "sim", "-b", "64GiB"});
  const json summary = read_json(dir / "summary.json");
  ASSERT_LT(summary.at("peak").at("reserved_bytes").get<std::uint64_t>() * 5, 64ULL << 30U);
  const std::string html = read_text(dir / "report.html");
  EXPECT_NE(html.find("budget 64.0 GiB (above the chart"), std::string::npos);
  EXPECT_EQ(html.find(" GiB</text>", html.find("<g class=\"axes\"")), std::string::npos)
      << "the axis is scaled to the run (MiB), not to the budget";
}

TEST(ReportAnswer, ErrorRunLeadsWithTheErrorAndItsLastEvents) {
  RunResult r;
  r.scenario = "fragmentation";
  r.allocator = "cuda";
  r.budget_bytes = 1ULL << 30U;
  r.outcome = Outcome::error;
  r.error_message = "the run failed: cudaErrorIllegalAddress in fill";
  for (std::uint64_t seq = 40; seq < 43; ++seq) {
    r.last_events.push_back({.seq = seq,
                             .op = "alloc",
                             .bytes = seq << 20U,
                             .status = "ok",
                             .phase = "fill",
                             .step = 2,
                             .live_bytes = seq << 21U});
  }
  const fs::path dir = temp_folder("error");
  fs::create_directories(dir);
  std::ofstream(dir / "summary.json") << summary_json(r, {}).dump(2);
  static_cast<void>(write_reports(dir, ""));
  const std::string html = read_text(dir / "report.html");
  const std::string answer =
      "<p class=\"answer answer-failed\" id=\"answer\">Error: " + r.error_message;
  ASSERT_NE(html.find(answer), std::string::npos) << html.substr(0, 3000);
  const auto section = html.find("<section id=\"error\">");
  ASSERT_NE(section, std::string::npos);
  EXPECT_LT(section, html.find("id=\"timeline\""));
  for (const RunResult::RecentEvent& e : r.last_events) {
    EXPECT_NE(html.find(fmt::format("<td>{}</td><td>alloc</td><td>{}</td>", e.seq,
                                    format_bytes(e.bytes))),
              std::string::npos)
        << e.seq;
  }
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find("**Error: " + r.error_message + "**"), std::string::npos) << md;
  EXPECT_NE(md.find("## The last events before the error\n\n| event |"), std::string::npos) << md;
}

TEST(ReportAnswer, SoakFolderLeadsWithTheVerdictOfSoakJson) {
  const fs::path dir = run_and_report(
      "soak", {"leak", "-a", "sim", "-b", "256MiB", "-p", "steps=10", "--repeat", "3"}, true);
  // The verdict is the one soak.json holds, whatever this process's resident memory did (under
  // AddressSanitizer its quarantine grows it by design): both verdicts are written explicitly.
  json soak = read_json(dir / "soak.json");
  ASSERT_TRUE(soak.contains("passed")) << soak.dump(2);
  soak["passed"] = true;
  soak["problems"] = json::array();
  std::ofstream(dir / "soak.json") << soak.dump(2);
  static_cast<void>(write_reports(dir, ""));
  std::string html = read_text(dir / "report.html");
  EXPECT_NE(
      html.find(fmt::format("id=\"answer\">Soak passed: {} of {} cycles",
                            soak.at("cycles").get<int>(), soak.at("cycles_asked").get<int>())),
      std::string::npos);
  EXPECT_NE(html.find("<div class=\"soak-passed\">"), std::string::npos);
  EXPECT_NE(html.find(format_bytes(soak.at("rss_before_bytes").get<std::uint64_t>()) +
                      " before the first cycle"),
            std::string::npos);
  EXPECT_NE(html.find("not measured: no device (simulated)"), std::string::npos);

  json failed = soak;
  failed["passed"] = false;
  failed["problems"] = {"resident memory grew +64.0 MiB after the first tenth of the cycles"};
  std::ofstream(dir / "soak.json") << failed.dump(2);
  static_cast<void>(write_reports(dir, ""));
  html = read_text(dir / "report.html");
  EXPECT_NE(html.find("answer-failed\" id=\"answer\">Soak FAILED: resident memory grew +64.0 MiB"),
            std::string::npos);
  EXPECT_NE(html.find("<div class=\"soak-failed\">"), std::string::npos);
}

TEST(ReportAnswer, MatrixLeadsWithCountsAndDrawsProvokedOomsApartFromFailures) {
  const fs::path fixture = fs::path(testing::test_data_dir()) / "report" / "matrix";
  const fs::path out = temp_folder("matrix");
  static_cast<void>(write_reports(fixture, out));
  const json matrix = read_json(fixture / "matrix.json");
  std::size_t ooms = 0;
  for (const json& cell : matrix.at("cells"))
    ooms += cell.at("outcome") == "oom" ? 1 : 0;
  ASSERT_GT(ooms, 0U);
  const std::string html = read_text(out / "report.html");
  const std::string counts = fmt::format(
      "<p class=\"counts\" id=\"counts\">{} cells: {} OOM as "
      "provoked",
      matrix.at("cells").size(), ooms);
  const auto at = html.find(counts);
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(at, html.find("id=\"environment\"")) << "the counts come first";
  EXPECT_NE(html.find("OOM (provoked: expected)"), std::string::npos);
  // An OOM cell is not coloured as a failed one.
  const auto rule = [&](const std::string& outcome) {
    const auto start = html.find(".cell.outcome-" + outcome + ",");
    return html.substr(start, html.find('\n', start) - start);
  };
  const auto colour = [](const std::string& line) {
    return line.substr(line.find("border-left-color:"));
  };
  EXPECT_NE(colour(rule("oom")), colour(rule("error")));
  EXPECT_NE(colour(rule("oom")), colour(rule("crash")));
  const std::string md = read_text(out / "report.md");
  EXPECT_NE(md.find(fmt::format("**{} cells: {} OOM as provoked", matrix.at("cells").size(), ooms)),
            std::string::npos);
}

}  // namespace
}  // namespace oomlab
