// `oomlab report`: self-contained HTML and Markdown for runs and matrices, the downsampled
// timeline, bad inputs. What a real browser shows of a report: report_browser_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/report_writer.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "reports/matrix/matrix_report.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/markdown_report.hpp"
#include "reports/writers/report_content.hpp"
#include "reports/writers/svg_chart.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

fs::path report_data() {
  return fs::path(testing::test_data_dir()) / "report";
}
fs::path run_fixture() {
  return report_data() / "run_sim";
}
fs::path matrix_fixture() {
  return report_data() / "matrix";
}

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_report_test_" + name);
}

using ::oomlab::testing::read_text;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

// What makes a page fetch something or run something: none may appear in a report.
void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  for (const char* handler : {"onload=", "onclick=", "onerror=", "javascript:"}) {
    EXPECT_EQ(html.find(handler), std::string::npos) << handler;
  }
  EXPECT_NE(html.find("<style>"), std::string::npos) << "CSS is inline";
}

TEST(ReportRun, HtmlIsSelfContainedWithMarkerBudgetAndEnvironment) {
  const RunReport run = load_run_report(run_fixture());
  ASSERT_TRUE(run.oom.has_value());
  const std::string html = run_html(run);
  expect_self_contained(html);
  EXPECT_EQ(occurrences(html, "id=\"oom-marker\""), 1U);
  EXPECT_NE(html.find(std::string("fill=\"") + kOomColour), std::string::npos);
  EXPECT_NE(html.find("id=\"budget-line\""), std::string::npos);
  EXPECT_NE(html.find("budget " + format_bytes(run.budget_bytes)), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  // The environment comes first, before the chart.
  const std::size_t environment = html.find("id=\"environment\"");
  ASSERT_NE(environment, std::string::npos);
  EXPECT_LT(environment, html.find("<svg"));
  for (const char* fact : {"GPU", "Driver", "CUDA runtime", "CUDA driver API", "oomlab", "Host"}) {
    EXPECT_NE(html.find(fmt::format("<b>{}</b>", fact), environment), std::string::npos) << fact;
  }
  EXPECT_NE(html.find("simulated"), std::string::npos);
  EXPECT_NE(html.find(run.platform.oomlab_version), std::string::npos);
}

TEST(ReportRun, HtmlAndMarkdownCarryTheOomRecord) {
  const RunReport run = load_run_report(run_fixture());
  const std::string html = run_html(run);
  const std::string md = run_markdown(run);
  for (const std::string& text : {html, md}) {
    EXPECT_NE(text.find(format_bytes(run.oom->request_bytes)), std::string::npos);
    EXPECT_NE(text.find(format_bytes(run.oom->live_bytes)), std::string::npos);
    EXPECT_NE(text.find(format_bytes(run.oom->reserved_bytes)), std::string::npos);
    EXPECT_NE(text.find("Largest free block"), std::string::npos);
    EXPECT_NE(text.find(to_string(run.oom->diagnosis.cause)), std::string::npos);
    EXPECT_NE(text.find("event " + format_count(run.oom->event)), std::string::npos);
    EXPECT_NE(text.find("CUDA driver API"), std::string::npos);
  }
  EXPECT_NE(html.find("Advice:"), std::string::npos);
  EXPECT_NE(md.find("**Advice:**"), std::string::npos);
  EXPECT_NE(md.find("| Environment | |"), std::string::npos);
}

TEST(ReportRun, CompletedRunHasNoOomMarker) {
  const RunReport run = load_run_report(matrix_fixture() / "leak-sim" / "summary.json");
  EXPECT_EQ(run.outcome, Outcome::completed);
  const std::string html = run_html(run);
  EXPECT_EQ(html.find("oom-marker"), std::string::npos);
  EXPECT_NE(html.find("id=\"budget-line\""), std::string::npos);
}

// events.csv text: a header, then `rows` rows whose live bytes follow `live(i)`.
template <typename Live>
std::string events_csv(std::uint64_t rows, Live live) {
  std::string text =
      "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes\n";
  for (std::uint64_t i = 0; i < rows; ++i) {
    const std::uint64_t bytes = live(i);
    text += fmt::format("{},{},0,\"a, quoted phase\",alloc,1,0x1,0x0,0,ok,{},{}\n", i, i * 10,
                        bytes, bytes + 4096);
  }
  return text;
}

TEST(ReportTimeline, DownsamplingKeepsThePeakAndTheDip) {
  constexpr std::uint64_t kRows = 300'001;
  constexpr std::uint64_t kPeakAt = 123'457;
  constexpr std::uint64_t kDipAt = 250'003;
  std::istringstream in(events_csv(kRows, [](std::uint64_t i) -> std::uint64_t {
    if (i == kPeakAt) return 9_GiB;
    if (i == kDipAt) return 0;
    return 1_GiB + (i % 7) * 1_MiB;
  }));
  const Timeline t = read_timeline(in, "events.csv");
  EXPECT_EQ(t.events, kRows);
  EXPECT_EQ(t.first_seq, 0U);
  EXPECT_EQ(t.last_seq, kRows - 1);
  EXPECT_LE(t.live.size(), 2000U);
  EXPECT_GE(t.live.size(), 1000U);
  EXPECT_EQ(t.peak_live_bytes, 9_GiB);
  const auto has = [&](std::uint64_t seq, std::uint64_t bytes) {
    return std::any_of(t.live.begin(), t.live.end(),
                       [&](const TimelinePoint& p) { return p.seq == seq && p.bytes == bytes; });
  };
  EXPECT_TRUE(has(kPeakAt, 9_GiB)) << "the spike survives at its own event";
  EXPECT_TRUE(has(kDipAt, 0)) << "so does the dip";
  EXPECT_TRUE(
      std::is_sorted(t.live.begin(), t.live.end(),
                     [](const TimelinePoint& a, const TimelinePoint& b) { return a.seq < b.seq; }));
  EXPECT_EQ(t.reserved.size(), t.live.size());
}

TEST(ReportTimeline, FewEventsAreDrawnWhole) {
  std::istringstream in(events_csv(10, [](std::uint64_t i) { return i * 1_MiB; }));
  const Timeline t = read_timeline(in, "events.csv");
  ASSERT_EQ(t.live.size(), 10U);
  EXPECT_EQ(t.live[9].bytes, 9_MiB);
  EXPECT_EQ(t.reserved[9].bytes, 9_MiB + 4096);
  EXPECT_NE(timeline_caption(t).find("every event drawn"), std::string::npos);
}

TEST(ReportTimeline, NiceTicksCoverTheMaximum) {
  const std::vector<double> ticks = nice_ticks(7.44, 6);
  EXPECT_EQ(ticks.front(), 0.0);
  EXPECT_GE(ticks.back(), 7.44);
  EXPECT_LE(ticks.size(), 10U);
}

TEST(ReportRun, MissingOrEmptyEventsStillGiveAReport) {
  const fs::path dir = temp_folder("no_events");
  fs::copy_file(run_fixture() / "summary.json", dir / "summary.json");
  RunReport run = load_run_report(dir);
  EXPECT_NE(run.timeline.missing.find("events.csv is missing"), std::string::npos);
  std::string html = run_html(run);
  EXPECT_NE(html.find("events.csv is missing"), std::string::npos);
  EXPECT_NE(html.find("id=\"oom-marker\""), std::string::npos);
  EXPECT_NE(run_markdown(run).find("events.csv is missing"), std::string::npos);

  write_text(dir / "events.csv", "");
  run = load_run_report(dir);
  EXPECT_NE(run.timeline.missing.find("empty"), std::string::npos);
  html = run_html(run);
  EXPECT_NE(html.find("events.csv is empty"), std::string::npos);
}

const MatrixReportCell& cell_of(const MatrixReport& m, const std::string& scenario,
                                const std::string& allocator) {
  const MatrixReportCell* cell = find_cell(m, scenario, allocator);
  if (cell == nullptr) throw std::runtime_error("no cell " + scenario + "-" + allocator);
  return *cell;
}

TEST(ReportMatrix, OneCellPerScenarioAndAllocatorWithOutcomeAndLink) {
  const MatrixReport m = load_matrix_report(matrix_fixture());
  ASSERT_EQ(m.scenarios, (std::vector<std::string>{"fragmentation", "leak"}));
  ASSERT_EQ(m.allocators, (std::vector<std::string>{"sim", "cuda", "async"}));
  const std::string html = matrix_html(m);
  expect_self_contained(html);
  EXPECT_EQ(occurrences(html, "<td class=\"cell "), 6U);
  struct Expected {
    const char* id;
    const char* outcome;
    bool linked;
  };
  for (const Expected& e :
       {Expected{"fragmentation-sim", "oom", true}, Expected{"fragmentation-cuda", "crash", false},
        Expected{"fragmentation-async", "error", false}, Expected{"leak-sim", "completed", true},
        Expected{"leak-cuda", "timeout", false}, Expected{"leak-async", "interrupted", false}}) {
    const std::string td =
        fmt::format("<td class=\"cell outcome-{}\" id=\"cell-{}\">", e.outcome, e.id);
    const std::size_t at = html.find(td);
    ASSERT_NE(at, std::string::npos) << td;
    const std::string cell = html.substr(at, html.find("</td>", at) - at);
    const std::string link = fmt::format("<a href=\"{}/report.html\">", e.id);
    EXPECT_EQ(cell.find(link) != std::string::npos, e.linked) << cell;
  }
  const MatrixReportCell& oom = cell_of(m, "fragmentation", "sim");
  ASSERT_TRUE(oom.oom.has_value());
  EXPECT_NE(html.find("live " + format_bytes(oom.oom->live_bytes) + " at OOM"), std::string::npos);
  EXPECT_NE(html.find(fmt::format("step {} · event {}", oom.oom->step, oom.oom->event)),
            std::string::npos);
  EXPECT_NE(html.find("ended by SIGSEGV"), std::string::npos);
  EXPECT_NE(html.find("<b>Driver</b>580.159.04"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H100 80GB HBM3"), std::string::npos);
}

TEST(ReportMatrix, MarkdownHasTheSameGridWithLinksToMarkdown) {
  const std::string md = matrix_markdown(load_matrix_report(matrix_fixture() / "matrix.json"));
  EXPECT_NE(md.find("| scenario \\\\ allocator | sim | cuda | async |"), std::string::npos) << md;
  EXPECT_NE(md.find("[report](fragmentation-sim/report.md)"), std::string::npos);
  EXPECT_NE(md.find("**crash**<br>ended by SIGSEGV"), std::string::npos);
  EXPECT_NE(md.find("| Driver | 580.159.04 |"), std::string::npos);
}

TEST(ReportMatrix, WritesEveryCellRunReportWhereTheLinksPoint) {
  const fs::path out = temp_folder("matrix_out");
  const WrittenReports written = write_reports(matrix_fixture(), out);
  EXPECT_TRUE(written.warnings.empty());
  const std::vector<fs::path> expected = {out / "report.html",
                                          out / "report.md",
                                          out / "fragmentation-sim" / "report.html",
                                          out / "fragmentation-sim" / "report.md",
                                          out / "leak-sim" / "report.html",
                                          out / "leak-sim" / "report.md"};
  EXPECT_EQ(written.files, expected);
  for (const fs::path& file : expected)
    EXPECT_TRUE(fs::is_regular_file(file)) << file;
  EXPECT_NE(read_text(out / "fragmentation-sim" / "report.html").find("id=\"oom-marker\""),
            std::string::npos);
}

TEST(ReportMatrix, RepeatsShowTheirSpreadAndLinkEachRun) {
  const fs::path dir = temp_folder("matrix_repeats");
  const std::string summary = read_text(matrix_fixture() / "fragmentation-sim" / "summary.json");
  for (const char* r : {"r1", "r2", "r3"})
    write_text(dir / "frag-sim" / r / "summary.json", summary);
  write_text(dir / "matrix.json", R"({"schema": "oomlab.matrix.v1",
    "oomlab": {"version": "0.1.0", "git": "abc1234"},
    "environment": {"device": null, "driver": null, "cuda_driver_api": 0, "cuda_runtime": 0,
                    "simulated": true, "host": "h"},
    "config": {"scenarios": ["frag"], "allocators": ["sim"], "budget": "16MiB", "seed": "1",
               "repeat": 3, "timeout_s": "600"},
    "cells": [{"id": "frag-sim", "scenario": "frag", "allocator": "sim", "outcome": "oom",
      "exit_code": 0, "signal": null, "duration_ms": 30, "dir": "frag-sim", "last_lines": [],
      "summary": {"oom": {"event": 512, "step": 0, "live_bytes": 524288, "request_bytes": 2097152,
                          "reserved_bytes": 4194304, "cause": "fragmentation"}},
      "repeats": [
        {"outcome": "oom", "dir": "frag-sim/r1", "oom_event": 500, "oom_live_bytes": 400000},
        {"outcome": "oom", "dir": "frag-sim/r2", "oom_event": 512, "oom_live_bytes": 524288},
        {"outcome": "completed", "dir": "frag-sim/r3"}],
      "spread": {"runs": 3, "oom_runs": 2,
                 "oom_live_bytes": {"min": 400000, "median": 524288, "max": 524288},
                 "oom_step": {"min": 0, "median": 0, "max": 0},
                 "oom_event": {"min": 500, "median": 512, "max": 512}}}]})");
  const MatrixReport m = load_matrix_report(dir);
  const MatrixReportCell& cell = cell_of(m, "frag", "sim");
  EXPECT_EQ(cell.report_dir, "frag-sim/r2") << "the repeat whose OOM point the cell shows";
  EXPECT_EQ(cell.repeat_report_dirs.size(), 3U);
  const std::string html = matrix_html(m);
  EXPECT_NE(html.find("3 runs, 2 OOM"), std::string::npos);
  EXPECT_EQ(m.seed, "1") << "the matrix writes its config as asked, text or numbers";
  EXPECT_EQ(m.repeat, "3");
  EXPECT_NE(html.find("live " + format_bytes(400000) + " .. " + format_bytes(524288)),
            std::string::npos);
  EXPECT_NE(html.find("<a href=\"frag-sim/r2/report.html\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"frag-sim/r3/report.html\">3</a>"), std::string::npos);
  const WrittenReports written = write_reports(dir, {});
  EXPECT_EQ(written.files.size(), 2U + 3U * 2U);
}

struct BadInput {
  std::string name;
  std::string file;  // written under the case's folder
  std::string text;
  std::string fragment;  // expected in the message, besides the file's name
};

class ReportRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(ReportRejects, WithAnInputErrorNamingTheFile) {
  const BadInput& c = GetParam();
  const fs::path dir = temp_folder("bad_" + c.name);
  fs::path input = dir / "missing-folder";
  if (!c.file.empty()) {
    if (c.file == "events.csv") fs::copy_file(run_fixture() / "summary.json", dir / "summary.json");
    write_text(dir / c.file, c.text);
    input = c.file == "events.csv" ? dir : dir / c.file;
  }
  try {
    (void)write_reports(input, dir / "out");
    ADD_FAILURE() << "no error for " << c.name;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string message = e.what();
    EXPECT_NE(message.find((c.file.empty() ? input : dir / c.file).string()), std::string::npos)
        << message;
    EXPECT_NE(message.find(c.fragment), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, ReportRejects,
    ::testing::Values(
        BadInput{"missing", "", "", "no such file or folder"},
        BadInput{"not_json", "summary.json", "{\n  \"schema\": \"oomlab.run.v1\",\n  oops\n}",
                 "line 3"},
        BadInput{"wrong_schema", "summary.json", R"({"schema": "oomlab.compare.v1"})",
                 "'schema' must be \"oomlab.run.v1\""},
        BadInput{"not_an_object", "summary.json", "[1, 2]", "must be an object"},
        BadInput{"wrong_shape", "summary.json",
                 R"({"schema": "oomlab.run.v1", "environment": {}, "scenario": {"name": "x"},
                     "allocator": {"name": "sim"}, "budget_bytes": "8GiB", "outcome": "oom"})",
                 "'budget_bytes' must be a whole number"},
        BadInput{"matrix_cells", "matrix.json",
                 R"({"schema": "oomlab.matrix.v1", "environment": {}, "cells": [{"scenario": 1}]})",
                 "'cells[0].scenario' must be a string"},
        BadInput{"matrix_escape", "matrix.json",
                 R"({"schema": "oomlab.matrix.v1", "environment": {}, "cells": [
                     {"scenario": "a", "allocator": "b", "outcome": "oom", "dir": "../../etc"}]})",
                 "inside the matrix folder"},
        BadInput{"events_row", "events.csv",
                 "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes\n"
                 "0,1,0,p,alloc,1,0x1,0x0,0,ok,1,2\n"
                 "1,1,0,p,alloc,1,0x1,0x0,0,ok,lots,2\n",
                 ":3: live_bytes 'lots' is not a whole number"},
        BadInput{"events_header", "events.csv", "a,b,c\n1,2,3\n", ":1: not an oomlab events.csv"}),
    [](const ::testing::TestParamInfo<BadInput>& param) { return param.param.name; });

}  // namespace
}  // namespace oomlab
