// `oomlab matrix` through the real binary: each cell a child process, so that a cell that aborts
// or hangs is recorded as crash or timeout while every other cell stays intact.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/child_process.hpp"
#include "cli/matrix_plan.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;
using oomlab::testing::test_plugin;
using json = nlohmann::json;

struct Matrix {
  ChildResult child;
  fs::path out;
  json matrix;
};

// Runs `oomlab matrix ARGS --out <fresh folder>`, with the tests' fault scenarios loaded unless
// `with_faults` is false.
Matrix run_matrix(const std::string& name, std::vector<std::string> args, bool with_faults = true) {
  const fs::path out = fs::temp_directory_path() / ("oomlab_matrix_test_" + name);
  fs::remove_all(out);
  if (with_faults) args.insert(args.begin(), {"--plugin", test_plugin("faults")});
  args.insert(args.begin(), {oomlab_binary(), "matrix"});
  args.insert(args.end(), {"--out", out.string()});
  Matrix m{.child = run_child(args, {.timeout = std::chrono::seconds(120)}),
           .out = out,
           .matrix = nullptr};
  if (std::ifstream file(out / "matrix.json"); file) m.matrix = json::parse(file);
  return m;
}

const json& cell(const json& matrix, const std::string& id) {
  for (const json& c : matrix.at("cells")) {
    if (c.at("id") == id) return c;
  }
  throw std::runtime_error("no cell " + id);
}

TEST(Matrix, CrashAndHangStayInTheirCells_OnSim) {
  const Matrix m =
      run_matrix("faults", {"-s", "fragmentation,test-abort,test-hang,leak", "-a", "sim",
                            "--budget", "256MiB", "--timeout", "2", "--junit",
                            (fs::temp_directory_path() / "oomlab_matrix_test.junit.xml").string()});
  EXPECT_EQ(m.child.exit_code, 4) << m.child.err_tail;
  ASSERT_TRUE(m.matrix.is_object()) << m.child.err_tail;
  EXPECT_EQ(m.matrix.at("schema"), "oomlab.matrix.v1");
  ASSERT_EQ(m.matrix.at("cells").size(), 4U);

  const json& crash = cell(m.matrix, "test-abort-sim");
  EXPECT_EQ(crash.at("outcome"), "crash");
  EXPECT_EQ(crash.at("signal"), "SIGABRT");
  EXPECT_TRUE(crash.at("summary").is_null());
  EXPECT_EQ(crash.at("last_lines").back(), "test-abort: about to abort");

  const json& hang = cell(m.matrix, "test-hang-sim");
  EXPECT_EQ(hang.at("outcome"), "timeout");
  EXPECT_EQ(hang.at("last_lines").back(), "test-hang: hanging");
  EXPECT_LT(hang.at("duration_ms").get<double>(), 15'000.0)
      << "killed at the deadline, not waited for";

  for (const char* intact : {"fragmentation-sim", "leak-sim"}) {
    const json& c = cell(m.matrix, intact);
    EXPECT_EQ(c.at("outcome"), "oom") << intact;
    EXPECT_EQ(c.at("exit_code"), 0) << intact;
    ASSERT_TRUE(c.at("summary").is_object()) << intact;
    EXPECT_EQ(c.at("summary").at("schema"), "oomlab.run.v1");
    EXPECT_GT(c.at("summary").at("oom").at("live_bytes").get<std::uint64_t>(), 0U);
    EXPECT_TRUE(fs::exists(m.out / c.at("dir").get<std::string>() / "summary.json")) << intact;
    EXPECT_TRUE(fs::exists(m.out / c.at("dir").get<std::string>() / "events.csv")) << intact;
  }
  EXPECT_EQ(cell(m.matrix, "leak-sim").at("summary").at("oom").at("cause"), "leak");
  // The table names both failures.
  EXPECT_NE(m.child.out.find("crash (SIGABRT)"), std::string::npos) << m.child.out;
  EXPECT_NE(m.child.out.find("timeout"), std::string::npos) << m.child.out;

  std::ifstream junit_file(fs::temp_directory_path() / "oomlab_matrix_test.junit.xml");
  const std::string junit((std::istreambuf_iterator<char>(junit_file)),
                          std::istreambuf_iterator<char>());
  EXPECT_NE(junit.find("tests=\"4\" failures=\"0\" errors=\"2\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("classname=\"oomlab.matrix.test-abort\""), std::string::npos);
}

TEST(Matrix, RepeatMeasuresTheSpreadOfTheOomPoint_OnSim) {
  const Matrix m = run_matrix(
      "repeat", {"-s", "fragmentation", "-a", "sim", "--budget", "128MiB", "--repeat", "3"});
  EXPECT_EQ(m.child.exit_code, 0) << m.child.err_tail;
  ASSERT_TRUE(m.matrix.is_object());
  const json& c = cell(m.matrix, "fragmentation-sim");
  ASSERT_EQ(c.at("repeats").size(), 3U);
  const json& spread = c.at("spread");
  EXPECT_EQ(spread.at("runs"), 3);
  EXPECT_EQ(spread.at("oom_runs"), 3);
  const auto& live = spread.at("oom_live_bytes");
  EXPECT_LE(live.at("min").get<std::uint64_t>(), live.at("median").get<std::uint64_t>());
  EXPECT_LE(live.at("median").get<std::uint64_t>(), live.at("max").get<std::uint64_t>());
  EXPECT_EQ(c.at("summary").at("oom").at("live_bytes"), live.at("median"))
      << "the cell shows its median run";
  for (int r = 1; r <= 3; ++r)
    EXPECT_TRUE(
        fs::exists(m.out / "fragmentation-sim" / ("r" + std::to_string(r)) / "summary.json"));
}

TEST(Matrix, CellsOnDifferentDevicesRunInParallel) {
  // Two cells that each hang until their 2 s deadline: one after the other they take 2 x (2 s +
  // 3 s grace); on two devices at once, one such span.
  const Matrix m =
      run_matrix("parallel", {"-s", "test-hang", "-a", "sim,sim:total=1GiB", "--devices", "0,1",
                              "--budget", "64MiB", "--timeout", "2"});
  EXPECT_EQ(m.child.exit_code, 4);
  ASSERT_TRUE(m.matrix.is_object());
  ASSERT_EQ(m.matrix.at("cells").size(), 2U);
  EXPECT_NE(m.matrix.at("cells")[0].at("device"), m.matrix.at("cells")[1].at("device"));
  EXPECT_LT(m.child.seconds, 8.5);
}

TEST(Matrix, ParamsGoOnlyToScenariosThatDeclareThem) {
  const Matrix m = run_matrix("params", {"-s", "fragmentation,leak", "-a", "sim", "--budget",
                                         "128MiB", "-p", "kind=cache"});
  EXPECT_EQ(m.child.exit_code, 0) << m.child.err_tail;
  ASSERT_TRUE(m.matrix.is_object());
  EXPECT_EQ(cell(m.matrix, "leak-sim").at("key").at("params").at("kind"), "cache");
  EXPECT_FALSE(cell(m.matrix, "fragmentation-sim").at("key").at("params").contains("kind"));
  EXPECT_EQ(cell(m.matrix, "leak-sim").at("key").at("budget"), 128ULL << 20U);
}

TEST(Matrix, AllSkipsScenariosThatNeedAParameterAndSaysSo) {
  const Matrix m = run_matrix(
      "all", {"-s", "all", "-a", "sim", "--budget", "64MiB", "-p", "steps=2", "--timeout", "60"},
      false);
  ASSERT_TRUE(m.matrix.is_object()) << m.child.err_tail;
  EXPECT_NE(m.child.err_tail.find("skipping 'replay': it needs --param trace="), std::string::npos)
      << m.child.err_tail;
  for (const json& c : m.matrix.at("cells")) {
    EXPECT_NE(c.at("scenario"), "replay");
    EXPECT_FALSE(c.at("scenario").get<std::string>().starts_with("test-"))
        << "the product ships no test scenarios";
  }
}

struct BadMatrix {
  std::vector<std::string> args;
  std::string fragment;
};

void PrintTo(const BadMatrix& bad, std::ostream* os) {
  *os << "expects '" << bad.fragment << "'";
}

class MatrixRejects : public ::testing::TestWithParam<BadMatrix> {};

TEST_P(MatrixRejects, WithExitTwoBeforeAnyCellRuns) {
  const Matrix m = run_matrix(
      "bad_" + std::to_string(std::hash<std::string>{}(GetParam().fragment)), GetParam().args);
  EXPECT_EQ(m.child.exit_code, 2) << m.child.err_tail;
  EXPECT_NE(m.child.err_tail.find(GetParam().fragment), std::string::npos) << m.child.err_tail;
  EXPECT_TRUE(m.matrix.is_null()) << "nothing ran";
}

INSTANTIATE_TEST_SUITE_P(
    BadInvocations, MatrixRejects,
    ::testing::Values(
        BadMatrix{{"-s", "fragmentaton", "-a", "sim"}, "did you mean 'fragmentation'"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim,cudaa"}, "cudaa"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "--repeat", "0"}, "--repeat"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "--timeout", "-1"}, "--timeout"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "--devices", "x"}, "--devices"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "-p", "nosuch=1"},
                  "no chosen scenario takes 'nosuch'"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "--budget", "8XB"}, "--budget"},
        BadMatrix{{"-s", "fragmentation", "-a", "sim", "-p", "block=huge"}, "block"}));

struct Ending {
  ChildResult child;
  const char* summary_outcome;  // nullptr: the child printed no summary
  const char* expected;
};

class CellOutcome : public ::testing::TestWithParam<Ending> {};

TEST_P(CellOutcome, FollowsHowTheChildEnded) {
  const Ending& e = GetParam();
  const json summary = e.summary_outcome != nullptr ? json{{"outcome", e.summary_outcome}} : json();
  EXPECT_EQ(cell_outcome(e.child, summary), e.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Endings, CellOutcome,
    ::testing::Values(
        Ending{{.exit_code = 0}, "oom", "oom"}, Ending{{.exit_code = 0}, "completed", "completed"},
        // run's exit 1 after a failed check: the summary says oom, the cell failed.
        Ending{{.exit_code = 1}, "oom", "error"}, Ending{{.exit_code = 1}, "completed", "error"},
        Ending{{.exit_code = 1}, nullptr, "error"}, Ending{{.exit_code = 2}, nullptr, "error"},
        Ending{{.exit_code = 3}, nullptr, "error"},
        // exit(7) from inside a library: not one of oomlab's codes.
        Ending{{.exit_code = 7}, nullptr, "crash"}, Ending{{.signal = 6}, nullptr, "crash"},
        Ending{{.signal = 6}, "oom", "crash"},
        Ending{{.signal = 15, .timed_out = true}, nullptr, "timeout"},
        Ending{{.signal = 15, .stopped = true}, nullptr, "interrupted"},
        // The child ended its run and exited on its own; the stop or the deadline came after.
        Ending{{.exit_code = 0, .stopped = true}, "oom", "oom"},
        Ending{{.exit_code = 0, .timed_out = true}, "completed", "completed"},
        Ending{{.exit_code = 130, .stopped = true}, "interrupted", "interrupted"},
        Ending{{.exit_code = 130, .timed_out = true}, "interrupted", "timeout"},
        // run's exit 5: a file it could not write.
        Ending{{.exit_code = 5}, "oom", "error"}, Ending{{.exit_code = 5}, nullptr, "error"},
        Ending{{.exit_code = 0, .out_overflow = true}, "oom", "error"}));

TEST(RunJunit, OneTestcaseFailedWhenTheExpectationIsNotMet) {
  const fs::path junit = fs::temp_directory_path() / "oomlab_run_junit.xml";
  const fs::path out = fs::temp_directory_path() / "oomlab_run_junit";
  fs::remove_all(out);
  const ChildResult child =
      run_child({oomlab_binary(), "run", "leak", "-a", "sim", "--budget", "64MiB",
                 "--expect-no-oom", "--quiet", "--out", out.string(), "--junit", junit.string()},
                {.timeout = std::chrono::seconds(60)});
  EXPECT_EQ(child.exit_code, 1);
  std::ifstream file(junit);
  const std::string xml((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("tests=\"1\" failures=\"1\" errors=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"--expect-no-oom: the run ran out of memory (leak)\""),
            std::string::npos)
      << xml;
}

}  // namespace
}  // namespace oomlab::cli

namespace oomlab::cli {
namespace {

// A cell whose repeats ran out of memory at these live bytes (0: the repeat completed).
MatrixCell repeated_cell(std::initializer_list<std::uint64_t> oom_live) {
  MatrixCell cell{.id = "leak-sim", .scenario = "leak", .allocator = "sim"};
  std::uint64_t step = 10;
  for (const std::uint64_t live : oom_live) {
    MatrixRepeat r{.outcome = live == 0 ? "completed" : "oom"};
    r.summary = {{"outcome", r.outcome}};
    if (live != 0) {
      r.summary["oom"] = {
          {"event", step * 2}, {"step", step++}, {"live_bytes", live}, {"request_bytes", 1}};
    }
    cell.repeats.push_back(std::move(r));
  }
  return cell;
}

// The table's spread column and matrix.json's spread are one computation (cell_spread).
TEST(MatrixSpread, TheTableShowsHalfTheRangeOfTheJsonsSpreadOverItsMedian) {
  const MatrixCell cell = repeated_cell({120, 100, 110});
  const auto spread = cell_json(cell)["spread"];
  EXPECT_EQ(spread["oom_live_bytes"]["min"], 100);
  EXPECT_EQ(spread["oom_live_bytes"]["median"], 110);
  EXPECT_EQ(spread["oom_live_bytes"]["max"], 120);
  EXPECT_EQ(spread["oom_step"]["median"], 11);
  // (120 - 100) / 2 over 110: 9.1%.
  EXPECT_NE(matrix_table({cell}).find("±9.1% (3/3)"), std::string::npos) << matrix_table({cell});
}

TEST(MatrixSpread, RepeatsThatMostlyCompletedShowHowManyRanOut) {
  const MatrixCell cell = repeated_cell({0, 100, 0});
  EXPECT_EQ(cell_json(cell)["spread"]["oom_runs"], 1);
  EXPECT_NE(matrix_table({cell}).find("1/3 oom"), std::string::npos) << matrix_table({cell});
  EXPECT_EQ(cell_json(repeated_cell({100}))["spread"], nullptr);
  EXPECT_EQ(matrix_table({repeated_cell({100})}).find("oom ("), std::string::npos);
}

}  // namespace
}  // namespace oomlab::cli
