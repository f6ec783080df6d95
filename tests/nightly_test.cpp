// The real ci/nightly.sh on the sim, run as a fleet runs it: a cell that fails fails the night
// with the baseline or without one (and is never written as the baseline), the fleet's programs
// run in the caller's directory, and a scenario list without `replay` runs. Each night is one
// cheap cell or two (64 MiB, one repeat).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/child_process.hpp"
#include "io/file_digest.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fresh_folder(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_nightly_test_" + name);
  fs::remove_all(path);
  fs::create_directories(path);
  return fs::canonical(path);
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

using ::oomlab::testing::read_text;

fs::path repository() {
  return fs::path(testing::test_data_dir()) / ".." / "..";
}

// One night: ci/nightly.sh started in `caller` with these settings (on top of the sim, one
// repeat, 64 MiB, fragmentation alone) and these arguments.
struct Night {
  fs::path caller;
  fs::path baselines;
  std::vector<std::string> settings;

  [[nodiscard]] cli::ChildResult run(const std::string& out,
                                     std::vector<std::string> extra = {}) const {
    const std::string bin = fs::path(testing::oomlab_binary()).parent_path().string();
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-C",
                                     caller.string(),
                                     "NIGHTLY_SCENARIOS=fragmentation",
                                     "NIGHTLY_ALLOCATORS=sim",
                                     "NIGHTLY_REPEAT=1",
                                     "NIGHTLY_BUDGET=64MiB",
                                     "NIGHTLY_EXEC=",
                                     "NIGHTLY_BASELINES=" + baselines.string()};
    argv.insert(argv.end(), settings.begin(), settings.end());  // later ones win
    argv.insert(argv.end(), {"bash", (repository() / "ci" / "nightly.sh").string(), "--bin", bin,
                             "--out", out});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return cli::run_child(argv, {.timeout = std::chrono::seconds(120)});
  }
};

// The one baseline a night in `baselines` wrote or would write (its name is the GPU's, or
// no-gpu-none.json here).
std::vector<fs::path> baselines_in(const fs::path& folder) {
  std::vector<fs::path> files;
  if (fs::is_directory(folder)) {
    for (const auto& entry : fs::directory_iterator(folder))
      files.push_back(entry.path());
  }
  return files;
}

// A program that is not there fails under `oomlab exec` with or without a GPU: without one, exec
// refuses to start (no device); with one, the shell cannot find it.
constexpr const char* kBrokenProgram = "NIGHTLY_EXEC=broken=./no-such-program --steps 3";

TEST(Nightly, AFailingProgramCellWithABaselineFailsTheNightAndIsNamed) {
  const fs::path folder = fresh_folder("failing");
  const Night night{folder, folder / "baselines", {}};
  const cli::ChildResult first = night.run("first");
  ASSERT_EQ(first.exit_code, 0) << first.err_tail << first.out;
  ASSERT_EQ(baselines_in(folder / "baselines").size(), 1U) << first.out;
  const fs::path baseline = baselines_in(folder / "baselines").front();
  const std::string written = read_text(baseline);

  const Night failing{folder, folder / "baselines", {kBrokenProgram}};
  const cli::ChildResult second = failing.run("second");
  EXPECT_EQ(second.exit_code, 1) << second.err_tail << second.out;
  EXPECT_NE(second.out.find("nightly: FAILED: cells that crashed, timed out or ended in error"),
            std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("  exec:broken on exec: error: "), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("new-failure"), std::string::npos) << "compare's own verdict";
  EXPECT_NE(second.out.find("nightly: compare exited 1 (matrix exited 1): the night exits 1"),
            std::string::npos)
      << second.out;
  // The job summary (compare.md) and the JUnit files carry the cell's own message.
  // matrix.txt lists it as "exec:broken on exec: error: oomlab: <why>"; compare says <why>.
  const std::string table = read_text(folder / "second" / "matrix.txt");
  const std::string marker = "exec:broken on exec: error: ";
  ASSERT_NE(table.find(marker), std::string::npos) << table;
  std::string why = table.substr(table.find(marker) + marker.size());
  why = why.substr(0, why.find('\n'));
  if (why.starts_with("oomlab: ")) why.erase(0, 8);
  const std::string words = why.substr(0, 25);
  EXPECT_NE(read_text(folder / "second" / "compare.md").find(words), std::string::npos) << words;
  EXPECT_NE(read_text(folder / "second" / "compare.junit.xml").find(words), std::string::npos);
  EXPECT_NE(read_text(folder / "second" / "matrix.junit.xml").find(words), std::string::npos);

  // --refresh-baseline with a failing cell keeps the baseline as it was.
  const cli::ChildResult refresh = failing.run("refresh", {"--refresh-baseline"});
  EXPECT_EQ(refresh.exit_code, 1) << refresh.out;
  EXPECT_EQ(read_text(baseline), written);
  EXPECT_NE(refresh.out.find("did not write the baseline"), std::string::npos) << refresh.out;
}

TEST(Nightly, AFirstNightWithAFailingCellWritesNoBaselineAndExitsOne) {
  const fs::path folder = fresh_folder("first");
  const Night night{folder, folder / "baselines", {kBrokenProgram}};
  const cli::ChildResult first = night.run("first");
  EXPECT_EQ(first.exit_code, 1) << first.err_tail << first.out;
  EXPECT_TRUE(baselines_in(folder / "baselines").empty()) << first.out;
  EXPECT_FALSE(fs::exists(folder / "first" / "baseline.json"));
  EXPECT_NE(first.out.find("  exec:broken on exec: error: "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("nightly: did not write the baseline"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("wrote the baseline"), std::string::npos) << first.out;
}

// The matrix exits 4 for a cell that timed out (or crashed): the night's code is still 1. (At
// 64 GiB the sim's fragmentation runs for about 0.3 s, past the matrix's first check at 0.1 s.)
TEST(Nightly, ACellThatTimesOutFailsTheNightWithExitOne) {
  const fs::path folder = fresh_folder("timeout");
  const cli::ChildResult night =
      Night{folder, folder / "baselines", {"NIGHTLY_TIMEOUT=0.001", "NIGHTLY_BUDGET=64GiB"}}.run(
          "night");
  EXPECT_EQ(night.exit_code, 1) << night.err_tail << night.out;
  EXPECT_NE(night.out.find("(matrix exited 4):\n  fragmentation on sim: timeout: "),
            std::string::npos)
      << night.out;
  EXPECT_TRUE(baselines_in(folder / "baselines").empty()) << night.out;
}

// A night run with another budget than its baseline's is not green (compare's 6 passes on).
TEST(Nightly, ARunWithAnotherBudgetThanItsBaselineExitsSix) {
  const fs::path folder = fresh_folder("budget");
  const auto night = [&](const std::string& budget, const std::string& out) {
    return Night{folder, folder / "baselines", {"NIGHTLY_BUDGET=" + budget}}.run(out);
  };
  const cli::ChildResult first = night("64MiB", "first");
  ASSERT_EQ(first.exit_code, 0) << first.err_tail << first.out;
  EXPECT_NE(first.out.find("wrote the baseline"), std::string::npos) << first.out;
  const cli::ChildResult same = night("64MiB", "same");
  EXPECT_EQ(same.exit_code, 0) << same.err_tail << same.out;
  const cli::ChildResult other = night("128MiB", "other");
  EXPECT_EQ(other.exit_code, 6) << other.err_tail << other.out;
  EXPECT_NE(other.out.find("nightly: compare exited 6 (matrix exited 0): the night exits 6"),
            std::string::npos)
      << other.out;
}

// NIGHTLY_SCENARIOS=fragmentation was refused ("--param: no chosen scenario takes 'trace'").
TEST(Nightly, AScenarioListWithoutReplayRuns) {
  const fs::path folder = fresh_folder("no_replay");
  const cli::ChildResult night = Night{folder, folder / "baselines", {}}.run("night");
  EXPECT_EQ(night.exit_code, 0) << night.err_tail << night.out;
  const json matrix = read_json(folder / "night" / "matrix" / "matrix.json");
  ASSERT_EQ(matrix.at("cells").size(), 1U);
  EXPECT_EQ(matrix.at("cells").at(0).at("outcome"), "oom");
  EXPECT_TRUE(matrix.at("config").at("params").empty());
}

// --out was emptied with `rm -rf`: a folder of someone's files went without a word.
TEST(Nightly, AnOutFolderHoldingOtherFilesIsRefusedAndLeftAsItWas) {
  const fs::path folder = fresh_folder("foreign_out");
  fs::create_directories(folder / "mine");
  {
    std::ofstream notes(folder / "mine" / "notes.txt");
    notes << "my notes\n";
  }
  const cli::ChildResult night = Night{folder, folder / "baselines", {}}.run("mine");
  EXPECT_EQ(night.exit_code, 2) << night.err_tail << night.out;
  EXPECT_EQ(read_text(folder / "mine" / "notes.txt"), "my notes\n");
  EXPECT_FALSE(fs::exists(folder / "mine" / "matrix"));
  EXPECT_NE(night.err_tail.find("nightly: --out mine holds files this script did not write"),
            std::string::npos)
      << night.err_tail;
  EXPECT_EQ(std::count(night.err_tail.begin(), night.err_tail.end(), '\n'), 1) << night.err_tail;
  EXPECT_FALSE(fs::exists(folder / "baselines")) << "nothing ran";
}

// `--out` with nothing after it ended in bash's "$2: unbound variable", `--bin` naming no folder
// in bash's `cd` error, both exit 1: each is one line naming the flag, exit 2, before anything is
// built, written or removed.
TEST(Nightly, AFlagWithoutItsValueOrABinFolderThatIsNotThereIsOneLineAndExitTwo) {
  const fs::path folder = fresh_folder("flags");
  const std::string bin = fs::path(testing::oomlab_binary()).parent_path().string();
  const std::string script = (repository() / "ci" / "nightly.sh").string();
  const std::string missing = (folder / "no-such-folder").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bin", bin, "--out"}, "nightly: --out needs a folder: --out DIR (see --help)"},
      {{"--bin", bin, "--out", "--refresh-baseline"},
       "nightly: --out needs a folder: --out DIR (see --help)"},
      {{"--bin", bin, "--out", ""}, "nightly: --out needs a folder: --out DIR (see --help)"},
      {{"--out", (folder / "out").string(), "--bin"},
       "nightly: --bin needs a folder: --bin DIR (see --help)"},
      {{"--bin", missing, "--out", (folder / "out").string()},
       "nightly: --bin " + missing +
           ": no such folder (give the folder holding the oomlab binary)"},
      {{"--bin", folder.string(), "--out", (folder / "out").string()},
       "nightly: --bin " + folder.string() + ": no oomlab binary in it"},
  };
  for (const auto& [args, line] : cases) {
    std::vector<std::string> argv = {"/usr/bin/env", "-C", folder.string(), "bash", script};
    argv.insert(argv.end(), args.begin(), args.end());
    const cli::ChildResult night = cli::run_child(argv, {.timeout = std::chrono::seconds(30)});
    EXPECT_EQ(night.exit_code, 2) << night.err_tail << night.out;
    EXPECT_EQ(night.err_tail, line + "\n");
    EXPECT_EQ(night.out, "") << "nothing ran";
  }
  EXPECT_FALSE(fs::exists(folder / "out")) << "no --out folder was made";
  EXPECT_FALSE(fs::exists(folder / "nightly-out")) << "nor the default one";
}

// Its own earlier output (marked .oomlab-nightly), an empty folder or a new one are written anew.
TEST(Nightly, ANightReplacesItsOwnEarlierOutputAndTakesAnEmptyFolder) {
  const fs::path folder = fresh_folder("own_out");
  fs::create_directories(folder / "empty");
  const Night night{folder, folder / "baselines", {}};
  const cli::ChildResult first = night.run("empty");
  ASSERT_EQ(first.exit_code, 0) << first.err_tail << first.out;
  EXPECT_TRUE(fs::exists(folder / "empty" / ".oomlab-nightly"));
  { std::ofstream(folder / "empty" / "stale.txt") << "from the first night\n"; }
  const cli::ChildResult second = night.run("empty");
  EXPECT_EQ(second.exit_code, 0) << second.err_tail << second.out;
  EXPECT_FALSE(fs::exists(folder / "empty" / "stale.txt")) << "the folder was replaced";
  EXPECT_TRUE(fs::exists(folder / "empty" / "matrix" / "matrix.json"));
}

// Started from elsewhere, the nightly still finds oomlab's trace; the key names the file and
// its content, never the path of the checkout, so the cell matches the committed baselines'.
TEST(Nightly, TheReplayCellIsKeyedByTheTracesNameAndContentFromAnyDirectory) {
  const fs::path folder = fresh_folder("replay");
  const cli::ChildResult night =
      Night{folder, folder / "baselines", {"NIGHTLY_SCENARIOS=replay"}}.run("night");
  ASSERT_EQ(night.exit_code, 0) << night.err_tail << night.out;
  const json cell = read_json(folder / "night" / "matrix" / "matrix.json").at("cells").at(0);
  EXPECT_EQ(cell.at("key").at("params").at("trace"), "pytorch_gpt_fp32_snapshot.pickle");
  EXPECT_EQ(cell.at("key").at("files").at("trace"),
            file_digest(repository() / "tests" / "data" / "pytorch_gpt_fp32_snapshot.pickle"));
  const json committed = read_json(repository() / "ci" / "baselines" / "nvidia-h200-580.json");
  for (const json& c : committed.at("cells")) {
    if (c.at("scenario") == "replay") {
      EXPECT_EQ(c.at("key").at("files"), cell.at("key").at("files"));
    }
  }
}

// The program's command is relative to the caller's directory (the fleet's checkout), where the
// matrix runs its cells; on a GPU the program really runs there and leaves its mark.
TEST(Nightly, ProgramCellsRunInTheCallersDirectory) {
  const fs::path folder = fresh_folder("caller");
  const fs::path fleet = folder / "fleet";
  fs::create_directories(fleet / "jobs");
  {
    std::ofstream script(fleet / "jobs" / "mark.sh");
    script << "#!/bin/sh\necho ran > ran-here\n";
  }
  fs::permissions(fleet / "jobs" / "mark.sh", fs::perms::owner_all);
  const Night night{fleet, folder / "baselines", {"NIGHTLY_EXEC=mark=./jobs/mark.sh"}};
  const cli::ChildResult result = night.run((folder / "night").string());
  const json matrix = read_json(folder / "night" / "matrix" / "matrix.json");
  EXPECT_EQ(matrix.at("config").at("directory"), fleet.string());
  EXPECT_NE(result.err_tail.find("matrix: programs run in " + fleet.string()), std::string::npos)
      << result.err_tail;
  EXPECT_EQ(matrix.at("cells").at(1).at("key").at("params").at("command"), "./jobs/mark.sh");
  EXPECT_FALSE(fs::exists(repository() / "ran-here")) << "not in oomlab's checkout";
  OOMLAB_REQUIRE_GPU();  // without one, `oomlab exec` refuses before the program starts
  EXPECT_EQ(result.exit_code, 0) << result.err_tail << result.out;
  EXPECT_EQ(matrix.at("cells").at(1).at("outcome"), "completed");
  EXPECT_TRUE(fs::exists(fleet / "ran-here"));
}

}  // namespace
}  // namespace oomlab
