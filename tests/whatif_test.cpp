// `oomlab whatif`: a PyTorch snapshot under several settings of the model of PyTorch's caching
// allocator, one table with the answer first; its frontiers are `oomlab frontier`'s, its budget
// is said or its absence explained, and bad input is exit 2 with one line.
#include "pytorch/settings/whatif.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "pytorch/model/torch_options.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace oomlab::literals;

const fs::path kSample = fs::path(testing::test_data_dir()) / "pytorch_gpt_fp32_snapshot.pickle";
const fs::path kJobs = fs::path(testing::test_data_dir()) / "pytorch";

using Cli = ::oomlab::testing::CliRun;

Cli oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

fs::path temp_path(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_whatif_test_" + name);
  fs::remove_all(path);
  return path;
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

const json& row_named(const json& doc, const std::string& name) {
  for (const json& row : doc.at("rows")) {
    if (row.at("name") == name) return row;
  }
  throw std::runtime_error("no row " + name + " in " + doc.dump());
}

// The line of the table that starts with `name` and two spaces.
std::string table_line(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(name + "  ")) return line;
  }
  return {};
}

TEST(WhatIf, NativeFrontierIsTheFrontierCommandsForTheSameSettings) {
  const fs::path json_path = temp_path("sample.json");
  const Cli whatif = oomlab({"whatif", "--trace", kSample.string(), "--json", json_path.string()});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const json doc = read_json(json_path);
  EXPECT_EQ(doc.at("schema"), "oomlab.whatif.v1");
  const json& native = row_named(doc, "native");
  ASSERT_TRUE(native.at("frontier_bytes").is_number());

  const fs::path frontier_path = temp_path("frontier.json");
  const Cli frontier = oomlab(
      {"frontier", "replay", "--trace", kSample.string(), "--no-probe", "--budget", "all", "-a",
       "torch:upstream=sim,expandable_segments=off,backend=native,max_split_size=max,"
       "garbage_collection_threshold=0,roundup_power2_divisions=0,budget_by=device,"
       "max_non_split_rounding=20MiB,large_segment_size=20MiB",
       "--json", frontier_path.string(), "--quiet"});
  ASSERT_EQ(frontier.code, 0) << frontier.err;
  const json expected = read_json(frontier_path);
  EXPECT_EQ(native.at("frontier_bytes"), expected.at("frontier_bytes"));
  EXPECT_EQ(native.at("failing_bytes"), expected.at("failing_bytes"));
  EXPECT_EQ(native.at("options"), expected.at("allocator").at("options"));
}

TEST(WhatIf, ExpandableSegmentsNeedNoMoreThanNativeWhenShapesChange) {
  const WhatIfResult r = what_if({.trace = kJobs / "infer_varlen_native.pickle"});
  ASSERT_TRUE(r.native);
  const auto find = [&](const std::string& name) -> const WhatIfRow& {
    for (const WhatIfRow& row : r.rows) {
      if (row.setting == name) return row;
    }
    throw std::runtime_error("no row " + name);
  };
  const WhatIfRow& native = find("native");
  const WhatIfRow& expandable = find("expandable_segments");
  ASSERT_TRUE(native.frontier_bytes && expandable.frontier_bytes);
  EXPECT_LE(*expandable.frontier_bytes, *native.frontier_bytes);
  EXPECT_LT(*expandable.frontier_bytes, *native.frontier_bytes * 0.85)
      << "PyTorch needed ~25% less with expandable segments on this job";
  EXPECT_TRUE(expandable.options.flag("expandable_segments"));
  EXPECT_FALSE(native.options.flag("expandable_segments"));
}

TEST(WhatIf, FractionCappedSnapshotShowsOnlyFrontiersAndSaysWhy) {
  const Cli r = oomlab({"whatif", "--trace", kSample.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string header = table_line(r.out, "setting");
  ASSERT_FALSE(header.empty()) << r.out;
  EXPECT_NE(header.find("frontier"), std::string::npos);
  EXPECT_EQ(header.find("at "), std::string::npos) << "no budget column: " << header;
  EXPECT_NE(r.out.find("set_per_process_memory_fraction, whose cap a snapshot does not record"),
            std::string::npos)
      << r.out;
  // The fraction it ran under is a question of its own (--fraction), not a recorded setting.
  EXPECT_TRUE(table_line(r.out, "as recorded").empty()) << r.out;
  for (const char* row :
       {"native", "expandable_segments", "max_split_size=128MiB", "max_split_size=512MiB",
        "garbage_collection_threshold=0.8 (fraction cap)", "backend=async"}) {
    EXPECT_FALSE(table_line(r.out, row).empty()) << row << " missing in\n" << r.out;
  }
}

TEST(WhatIf, AtTheOriginalBudgetNativeFailsWherePyTorchDid) {
  const fs::path out = temp_path("out");
  const Cli r = oomlab({"whatif", "--trace", kSample.string(), "--budget", "8501749350", "--out",
                        out.string(), "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string native = table_line(r.err, "native");
  EXPECT_NE(native.find("OOM at entry 16,794"), std::string::npos) << r.err;
  const json doc = json::parse(r.out);  // stdout: the JSON alone
  EXPECT_EQ(doc.at("budget_bytes"), 8501749350ULL);
  EXPECT_EQ(doc.at("budget_source"), "--budget");
  const json& at = row_named(doc, "native").at("at_budget");
  EXPECT_EQ(at.at("outcome"), "oom");
  EXPECT_EQ(at.at("first_failure_index"), 16794);
  EXPECT_TRUE(at.at("cause").is_string());
  EXPECT_TRUE(doc.at("best").is_string());
  for (const char* file : {"whatif.json", "report.html", "report.md"})
    EXPECT_TRUE(fs::exists(out / file)) << file;
  std::ifstream html_file(out / "report.html");
  const std::string html((std::istreambuf_iterator<char>(html_file)), {});
  EXPECT_LT(html.find("id=\"answer\""), html.find("id=\"whatif-table\""));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("OOM at entry 16,794"), std::string::npos);
  fs::remove_all(out);
}

// "garbage_collection_threshold=0.8 (fraction cap) fits in 3.60 GiB" was the answer to which card:
// a cap on the modelled card is no card.
TEST(WhatIf, AFractionCapRowIsNotTheSmallestCard) {
  const auto row = [](std::string name, std::uint64_t frontier, bool fraction) {
    WhatIfRow r;
    r.setting = std::move(name);
    r.options = Params(torch::torch_option_spec());
    r.fraction_cap = fraction;
    r.frontier_bytes = frontier;
    return r;
  };
  const std::vector<WhatIfRow> rows = {
      row("native", 4_GiB, false),
      row("garbage_collection_threshold=0.8 (fraction cap)", 3_GiB + 600_MiB, true),
      row("expandable_segments", 3_GiB + 800_MiB, false)};
  EXPECT_EQ(smallest_frontier(rows, BudgetQuestion::card), 2U);
  EXPECT_EQ(smallest_frontier(rows, BudgetQuestion::fraction), 1U);
}

WhatIfRow row_at(std::string name, std::uint64_t frontier, const std::string& backend) {
  WhatIfRow row;
  row.setting = std::move(name);
  row.options = Params(torch::torch_option_spec());
  row.frontier_bytes = frontier;
  row.options.set("backend", backend);
  return row;
}

// backend=async's figure is approximate: "async ~10.5 GiB (10.1..11.6) beats native 10.6 GiB" led
// with a setting PyTorch may need more for. It leads only when even its range's top is below the
// smallest exact frontier.
TEST(WhatIf, AnApproximateRowLeadsOnlyWhenTheTopOfItsRangeIsBelowTheBestExactFrontier) {
  const std::uint64_t native = 10_GiB + 600_MiB;
  const std::uint64_t close = native - 100_MiB;
  const auto close_range = torch::frontier_range(row_at("a", close, "async").options, close);
  ASSERT_TRUE(close_range.has_value());
  ASSERT_GT(close_range->high_bytes, native) << "its range reaches over native's frontier";
  std::vector<WhatIfRow> rows = {row_at("native", native, "native"),
                                 row_at("backend=async", close, "async")};
  EXPECT_EQ(smallest_frontier(rows, BudgetQuestion::card), 0U);
  // Far enough under native that the whole range is below it: the approximate row leads.
  std::uint64_t far = close;
  while (torch::frontier_range(rows[1].options, far)->high_bytes >= native)
    far -= 100_MiB;
  rows[1].frontier_bytes = far;
  EXPECT_EQ(smallest_frontier(rows, BudgetQuestion::card), 1U);
  // With no exact row to compare with, the smallest figure leads.
  rows[0] = row_at("own backend=async", native, "async");
  rows[1].frontier_bytes = close;
  EXPECT_EQ(smallest_frontier(rows, BudgetQuestion::card), 1U);
}

// grow_native.pickle: backend=async's frontier is the smallest of the table, but its range reaches
// above the best exact row's: that row leads, and a note says why.
TEST(WhatIf, TheExactRowThatLeadsOverASmallerApproximateFigureIsExplainedInANote) {
  const WhatIfResult r = what_if({.trace = kJobs / "grow_native.pickle"});
  ASSERT_TRUE(r.best.has_value());
  const WhatIfRow& best = r.rows[*r.best];
  const auto async = std::find_if(r.rows.begin(), r.rows.end(), [](const WhatIfRow& row) {
    return row.setting == "backend=async";
  });
  ASSERT_NE(async, r.rows.end());
  ASSERT_LT(*async->frontier_bytes, *best.frontier_bytes) << "the case this test is about";
  EXPECT_NE(best.setting, "backend=async");
  EXPECT_FALSE(torch::frontier_range(best.options, *best.frontier_bytes).has_value())
      << best.setting << " is exact";
  const std::string note = best.setting + " leads, not backend=async: backend=async's frontier, ~" +
                           format_bytes(*async->frontier_bytes) + ", is the smaller";
  EXPECT_NE(std::find_if(r.notes.begin(), r.notes.end(),
                         [&](const std::string& n) { return n.starts_with(note); }),
            r.notes.end())
      << note;
}

// A range whose ends read the same ("~7.52 GiB (7.52 GiB..7.52 GiB)") is printed as the figure
// alone; one whose ends differ keeps its "~" and its range.
TEST(WhatIf, ARangeWhoseEndsReadTheSameIsPrintedAsThePlainFigure) {
  const std::uint64_t frontier = 7_GiB + 532_MiB;
  WhatIfResult r{.upper_bytes = 80_GiB};
  r.rows = {row_at("native", frontier, "native"), row_at("expandable_segments", frontier, "native"),
            row_at("max_split_size=128MiB", frontier, "native")};
  r.rows[0].made_range = {frontier, frontier};
  r.rows[1].made_range = {frontier - 2_MiB, frontier};
  ASSERT_EQ(format_bytes(frontier - 2_MiB), format_bytes(frontier)) << "the same in display";
  r.rows[2].made_range = {frontier - 512_MiB, frontier};
  r.native = 0;
  const WhatIfTable table = whatif_table(r);
  EXPECT_EQ(table.rows[0][1], format_bytes(frontier));
  EXPECT_EQ(table.rows[1][1], format_bytes(frontier));
  EXPECT_EQ(table.rows[2][1], "~" + format_bytes(frontier) + " (" +
                                  format_bytes(frontier - 512_MiB) + ".." + format_bytes(frontier) +
                                  ")");
}

TEST(WhatIf, StopsWhenAsked) {
  const std::atomic<bool> stop{true};
  EXPECT_THROW((void)what_if({.trace = kJobs / "grow_native.pickle", .stop = &stop}), Interrupted);
}

struct BadWhatIf {
  std::vector<std::string> args;
  std::string fragment;
};

class WhatIfRejects : public ::testing::TestWithParam<BadWhatIf> {};

TEST_P(WhatIfRejects, WithExitTwoAndOneLine) {
  std::vector<std::string> args = {"whatif"};
  for (std::string a : GetParam().args) {
    if (a == "@sample") a = kSample.string();
    if (a.starts_with("@data")) a.replace(0, 5, testing::test_data_dir());
    args.push_back(a);
  }
  const Cli r = oomlab(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().fragment), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, WhatIfRejects,
    ::testing::Values(
        BadWhatIf{{}, "--trace is required"},
        BadWhatIf{{"--trace", "/nonexistent/snapshot.pickle"}, "/nonexistent/snapshot.pickle"},
        BadWhatIf{{"--trace", "@data/rmm_allocate_failure.csv"},
                  "rmm_allocate_failure.csv: not a PyTorch memory snapshot (it reads as rmm)"},
        BadWhatIf{{"--trace", "@data"}, "is a folder"},
        BadWhatIf{{"--trace", "@sample", "--budget", "0"}, "--budget: a budget of 0 bytes"},
        BadWhatIf{{"--trace", "@sample", "--budget", "lots"}, "--budget:"},
        BadWhatIf{{"--trace", "@sample", "--level", "segment"}, "--level: 'segment'"},
        BadWhatIf{{"--trace", "@sample", "--level", "tensr"},
                  "--level: 'tensr' is not a level (did you mean 'tensor'?): whatif takes tensor"},
        BadWhatIf{{"@sample"}, "give the file with --trace (oomlab whatif --trace "},
        BadWhatIf{{"--trace", "@sample", "--device", "x"}, "--device:"}));

// An output that cannot be written is exit 5 for every command, and found before the replays.
TEST(WhatIf, AnUnwritableJsonIsExitFiveBeforeAnyReplay) {
  const Cli r = oomlab({"whatif", "--trace", kSample.string(), "--json", "/nonexistent/w.json"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_NE(r.err.find("--json: cannot write /nonexistent/w.json: no folder"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace oomlab
