// `oomlab report` on the command line: where the reports go, what it prints, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli.hpp"
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

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

using CliOutcome = ::oomlab::testing::CliRun;

CliOutcome oomlab_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

TEST(ReportCli, WritesBesideOrIntoOutAndPrintsThePaths) {
  const fs::path run = temp_folder("cli_run");
  fs::copy(run_fixture(), run);
  const CliOutcome beside = oomlab_cli({"report", (run / "summary.json").string()});
  EXPECT_EQ(beside.code, 0) << beside.err;
  EXPECT_EQ(beside.out,
            (run / "report.html").string() + "\n" + (run / "report.md").string() + "\n");
  EXPECT_TRUE(fs::is_regular_file(run / "report.html"));

  const fs::path out = temp_folder("cli_out");
  const CliOutcome two =
      oomlab_cli({"report", run.string(), matrix_fixture().string(), "--out", out.string()});
  EXPECT_EQ(two.code, 0) << two.err;
  EXPECT_TRUE(fs::is_regular_file(out / "oomlab_report_test_cli_run" / "report.html")) << two.out;
  EXPECT_TRUE(fs::is_regular_file(out / "matrix" / "report.html")) << two.out;
  EXPECT_TRUE(fs::is_regular_file(out / "matrix" / "leak-sim" / "report.md")) << two.out;
}

TEST(ReportCli, BadInputIsExitTwoWithOneLine) {
  const fs::path dir = temp_folder("cli_bad");
  write_text(dir / "summary.json", "{\"schema\": ");
  const CliOutcome o = oomlab_cli({"report", dir.string()});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err.rfind("oomlab: error: " + (dir / "summary.json").string(), 0), 0U) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

}  // namespace
}  // namespace oomlab
