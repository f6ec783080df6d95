// Where a command's files go: --no-out writes no folder, --out refuses a folder that holds a run,
// a matrix, a frontier or a what-if unless --force, an output that cannot be written is exit 5
// with the system's reason, `matrix --junit -` and `run --junit -` are stdout (not with
// --json -), and a matrix stopped right after a cell
// keeps that cell's outcome.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/child_process.hpp"
#include "cli/signals.hpp"
#include "test_support.hpp"

extern char** environ;  // NOLINT: POSIX

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::oomlab_binary;

fs::path fresh_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_run_outputs_test_" + name);
}

using ::oomlab::testing::read_text;

cli::ChildResult oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), oomlab_binary());
  return cli::run_child(args, {.timeout = std::chrono::seconds(120)});
}

// In `folder` as the working directory, where a default run folder would appear.
// A soak (--repeat) judges its own resident memory: under AddressSanitizer the child runs without
// the quarantine, which holds freed memory by design (harmless in any other build).
cli::ChildResult oomlab_in(const fs::path& folder, const std::string& args) {
  return cli::run_child(
      {"/bin/sh", "-c",
       "cd '" + folder.string() +
           "' && "
           "ASAN_OPTIONS=\"$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0\" "
           "exec '" +
           oomlab_binary() + "' " + args},
      {.timeout = std::chrono::seconds(60)});
}

TEST(NoOut, PrintsTheJsonAndWritesNoFolder) {
  const fs::path cwd = fresh_folder("no_out");
  const cli::ChildResult r =
      oomlab_in(cwd, "run fragmentation -a sim --budget 64MiB --no-out --json -");
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  EXPECT_EQ(json::parse(r.out).at("outcome"), "oom");
  EXPECT_TRUE(fs::is_empty(cwd)) << "no oomlab-runs/ folder";

  const cli::ChildResult csv =
      oomlab_in(cwd, "run fragmentation -a sim --budget 64MiB --no-out --json - --csv events.csv");
  EXPECT_EQ(csv.exit_code, 0) << csv.err_tail;
  EXPECT_EQ(read_text(cwd / "events.csv").rfind("seq,t_ns,step,", 0), 0U)
      << "the events go straight to --csv";
  EXPECT_EQ(std::distance(fs::directory_iterator(cwd), fs::directory_iterator()), 1);

  const cli::ChildResult both = oomlab_in(cwd, "run fragmentation -a sim --no-out --out x");
  EXPECT_EQ(both.exit_code, 2) << both.err_tail;
  EXPECT_FALSE(fs::exists(cwd / "x"));
}

TEST(OutFolder, HoldingARunIsRefusedUnlessForced) {
  const fs::path out = fresh_folder("existing") / "run";
  const std::vector<std::string> run = {"run",      "fragmentation", "-a",    "sim",
                                        "--budget", "64MiB",         "--out", out.string(),
                                        "--quiet",  "--seed",        "1"};
  ASSERT_EQ(oomlab(run).exit_code, 0);
  const std::string first = read_text(out / "summary.json");
  std::ofstream(out / "report.html") << "<p>the first run's report</p>";

  std::vector<std::string> again = run;
  again.back() = "2";
  const cli::ChildResult refused = oomlab(again);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err_tail, "oomlab: error: --out: " + out.string() +
                                  " already holds a run (summary.json): give a new folder, or "
                                  "--force to replace it\n");
  EXPECT_EQ(read_text(out / "summary.json"), first) << "untouched";

  again.emplace_back("--force");
  const cli::ChildResult forced = oomlab(again);
  EXPECT_EQ(forced.exit_code, 0) << forced.err_tail;
  EXPECT_EQ(json::parse(read_text(out / "summary.json")).at("scenario").at("seed"), 2);
  EXPECT_FALSE(fs::exists(out / "report.html")) << "the old run's report goes with it";
}

TEST(OutFolder, AMatrixFolderIsRefusedUnlessForcedAndItsCellsAreReplaced) {
  const fs::path out = fresh_folder("matrix") / "m";
  const std::vector<std::string> matrix = {"matrix",     "-s",       "fragmentation", "-a",
                                           "sim",        "--budget", "64MiB",         "--out",
                                           out.string(), "--quiet"};
  ASSERT_EQ(oomlab(matrix).exit_code, 0);
  const cli::ChildResult refused = oomlab(matrix);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err_tail.find("already holds a matrix (matrix.json)"), std::string::npos)
      << refused.err_tail;

  std::vector<std::string> forced = matrix;
  forced.emplace_back("--force");
  const cli::ChildResult again = oomlab(forced);
  EXPECT_EQ(again.exit_code, 0) << again.err_tail << again.out;
  const json doc = json::parse(read_text(out / "matrix.json"));
  EXPECT_EQ(doc.at("cells").at(0).at("outcome"), "oom") << "the cell's own folder was replaced";
}

// whatif and frontier overwrote an earlier result where run refused: one rule, one --force.
TEST(OutFolder, WhatIfAndFrontierRefuseAnEarlierResultUnlessForcedAsRunDoes) {
  const fs::path folder = fresh_folder("searches");
  const std::string sample = testing::test_data_dir() + "/pytorch_gpt_fp32_snapshot.pickle";
  const std::vector<std::vector<std::string>> commands = {
      {"whatif", "--trace", sample, "--quiet", "--out", (folder / "w").string()},
      {"frontier", "leak", "-a", "sim", "-p", "steps=100", "-p", "leak=8MiB", "--budget", "4GiB",
       "--quiet", "--out", (folder / "f").string()}};
  for (const auto& command : commands) {
    SCOPED_TRACE(command.front());
    ASSERT_EQ(oomlab(command).exit_code, 0);
    const cli::ChildResult refused = oomlab(command);
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err_tail.find(command.front() == "whatif"
                                        ? "already holds a what-if (whatif.json): give a new "
                                          "folder, or --force to replace it"
                                        : "already holds a frontier (frontier.json)"),
              std::string::npos)
        << refused.err_tail;
    EXPECT_EQ(refused.err_tail.find(" B "), std::string::npos) << "refused before any trial";
    std::vector<std::string> forced = command;
    forced.emplace_back("--force");
    EXPECT_EQ(oomlab(forced).exit_code, 0);
  }
}

// A command refused after it made its --out folder (a trace it cannot read) leaves no empty
// folder behind; a folder that was there before stays, as it was.
TEST(OutFolder, ACommandThatFailsBeforeWritingLeavesNoFolderItMade) {
  const fs::path folder = fresh_folder("refused");
  const fs::path bad = folder / "bad.csv";
  std::ofstream(bad) << "seq,t_ns,step,phase,op,bytes,ptr,stream\n0,0,0,p,alloc,abc,0x1,0\n";
  const fs::path out = folder / "made" / "frontier";
  const std::vector<std::string> args = {"frontier",   "replay", "--trace",
                                         bad.string(), "--out",  out.string()};
  const cli::ChildResult r = oomlab(args);
  EXPECT_EQ(r.exit_code, 2) << r.err_tail;
  EXPECT_NE(r.err_tail.find("bad.csv:1"), std::string::npos) << r.err_tail;
  EXPECT_FALSE(fs::exists(folder / "made")) << "nor the parent it made: " << r.err_tail;
  fs::create_directories(out);
  EXPECT_EQ(oomlab(args).exit_code, 2);
  EXPECT_TRUE(fs::is_directory(out)) << "a folder it did not make is not its to remove";
}

// A read-only file system is exit 5 with its own reason, before the work, whichever command.
TEST(OutFolder, AReadOnlyFileSystemIsExitFiveNamedAsSuchForEveryCommand) {
  const fs::path ro = fresh_folder("read_only");
  if (::mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a read-only tmpfs (needs root, as CI has)";
  const std::string sample = testing::test_data_dir() + "/pytorch_gpt_fp32_snapshot.pickle";
  const std::vector<std::vector<std::string>> commands = {
      {"run", "fragmentation", "-a", "sim", "--budget", "64MiB", "--no-out", "--json",
       (ro / "x.json").string()},
      {"run", "fragmentation", "-a", "sim", "--budget", "64MiB", "--out", (ro / "run").string()},
      {"whatif", "--trace", sample, "--out", (ro / "w").string()},
      {"frontier", "leak", "-a", "sim", "-p", "steps=100", "--junit", (ro / "f.xml").string()},
      {"matrix", "-s", "fragmentation", "-a", "sim", "--budget", "64MiB", "--junit",
       (ro / "m.xml").string(), "--out", (fresh_folder("read_only_matrix") / "m").string()}};
  for (const auto& command : commands) {
    const cli::ChildResult r = oomlab(command);
    EXPECT_EQ(r.exit_code, 5) << command.front() << ": " << r.err_tail;
    EXPECT_NE(r.err_tail.find("Read-only file system"), std::string::npos) << r.err_tail;
    EXPECT_EQ(r.err_tail.find("permission denied"), std::string::npos) << r.err_tail;
  }
  ::umount2(ro.c_str(), MNT_DETACH);
}

// `matrix --junit -` wrote a file named "-": the XML goes alone to stdout, as compare's does.
TEST(OutFolder, MatrixJunitDashIsTheXmlAloneOnStdout) {
  const fs::path cwd = fresh_folder("junit_dash");
  const cli::ChildResult r =
      oomlab_in(cwd, "matrix -s fragmentation -a sim --budget 64MiB --out m --junit - --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  EXPECT_EQ(r.out.rfind("<?xml", 0), 0U) << r.out;
  EXPECT_FALSE(fs::exists(cwd / "-"));
  EXPECT_NE(r.err_tail.find("fragmentation"), std::string::npos) << "the table: " << r.err_tail;
}

// `run --junit -` wrote a file named "-": the XML goes alone to stdout, as `--json -` does the
// JSON, and the summary to stderr; a soak's lines too.
TEST(OutFolder, RunJunitDashIsTheXmlAloneOnStdout) {
  const fs::path cwd = fresh_folder("run_junit_dash");
  for (const std::string repeat : {"", " --repeat 2"}) {
    SCOPED_TRACE(repeat);
    const cli::ChildResult r =
        oomlab_in(cwd, "run fragmentation -a sim --budget 64MiB --no-out --junit -" + repeat);
    EXPECT_EQ(r.exit_code, 0) << r.err_tail;
    EXPECT_EQ(r.out.rfind("<?xml", 0), 0U) << r.out;
    EXPECT_NE(r.out.find("<testcase classname=\"oomlab.run.fragmentation\" name=\"sim\""),
              std::string::npos)
        << r.out;
    EXPECT_TRUE(r.out.ends_with("</testsuites>\n")) << "nothing after the XML: " << r.out;
    EXPECT_NE(r.err_tail.find(repeat.empty() ? "oom" : "soak"), std::string::npos)
        << "the words on stderr: " << r.err_tail;
    EXPECT_FALSE(fs::exists(cwd / "-"));
  }
}

// Both on stdout would be one unreadable stream: refused before anything runs, as frontier does.
TEST(OutFolder, JsonDashAndJunitDashTogetherAreRefusedForRunAndExec) {
  const fs::path cwd = fresh_folder("json_junit_dash");
  for (const std::string command :
       {"run fragmentation -a sim --budget 64MiB --out r --json - --junit -",
        "exec --budget 1GiB --out r --json - --junit - -- true"}) {
    SCOPED_TRACE(command);
    const cli::ChildResult r = oomlab_in(cwd, command);
    EXPECT_EQ(r.exit_code, 2) << r.err_tail;
    EXPECT_EQ(r.err_tail, "oomlab: error: only one of --json and --junit can be '-' (stdout)\n");
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(fs::is_empty(cwd)) << "no run folder, no file named '-'";
  }
}

pid_t spawn_quiet(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Ctrl-C the moment the first cell's child has written its record: that cell stays what its
// child said, the matrix ends interrupted.
TEST(MatrixStop, ACellWhoseChildEndedItsRunStaysCompletedWhenStoppedRightAfter) {
  const fs::path out = fresh_folder("stop") / "m";
  const pid_t pid = spawn_quiet({oomlab_binary(), "matrix", "-s", "fragmentation,leak", "-a", "sim",
                                 "--budget", "64MiB", "--out", out.string()});
  ASSERT_GT(pid, 0);
  const fs::path first = out / "fragmentation-sim" / "summary.json";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(first) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(fs::exists(first)) << "the first cell never wrote its record";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const json doc = json::parse(read_text(out / "matrix.json"));
  const json& cell = doc.at("cells").at(0);
  ASSERT_EQ(cell.at("id"), "fragmentation-sim");
  EXPECT_EQ(cell.at("outcome"), json::parse(read_text(first)).at("outcome"));
  EXPECT_EQ(cell.at("outcome"), "oom");
  EXPECT_EQ(cell.at("exit_code"), 0);
}

// The race behind the test above, made certain: the command's work is over (its StopOnSignal
// gone) when the stop arrives. The process ends with its own result; a second signal kills it.
int exit_after_signals(int signals) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    { const cli::StopOnSignal during_the_command; }
    for (int i = 0; i < signals; ++i)
      ::raise(SIGTERM);
    std::_Exit(cli::StopOnSignal::flag()->load() ? 0 : 3);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

TEST(StopOnSignal, AStopAfterTheCommandEndedLetsTheProcessExitWithItsResult) {
  EXPECT_EQ(exit_after_signals(1), 0) << "the first signal only sets the flag";
  EXPECT_EQ(exit_after_signals(2), -SIGTERM) << "a second one ends the process at once";
}

}  // namespace
}  // namespace oomlab
