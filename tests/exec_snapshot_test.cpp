// exec's PyTorch snapshot on the CPU: python3 runs tests/data/exec/snapshot_program.py under
// run_exec (stand-in devices) with a stand-in torch (tests/data/exec/fake_torch) on its
// PYTHONPATH, so the embedded shim, the environment oomlab gives the program and what oomlab
// reads back are all the real ones. The stand-in's CUDA starts at its first allocation and its
// OOM calls PyTorch's observers, then raises PyTorch's own message.
#include <gtest/gtest.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): setenv is POSIX
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/child_process.hpp"
#include "exec/exec_run.hpp"
#include "exec/program.hpp"
#include "fake_exec_devices.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::Outcome;

using ::oomlab::testing::read_text;

class ExecSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto python = oomlab::find_program("python3");
    if (!python) GTEST_SKIP() << "needs python3 on PATH";
    python_ = python->string();
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-snapshot-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    devices_ = std::make_unique<oomlab::testing::FakeDevices>(dir_ / "usage");
    data_ = oomlab::testing::test_data_dir() + "/exec";
    if (const char* old = std::getenv("PYTHONPATH")) old_python_path_ = old;
    python_path(data_ + "/fake_torch");
  }
  void TearDown() override {
    if (old_python_path_) {
      ::setenv("PYTHONPATH", old_python_path_->c_str(), 1);
    } else {
      ::unsetenv("PYTHONPATH");
    }
    fs::remove_all(dir_);
  }

  // The PYTHONPATH the program would have without oomlab.
  static void python_path(const std::string& value) { ::setenv("PYTHONPATH", value.c_str(), 1); }

  // snapshot_program.py MODE (after `env SETTINGS...` when given), into run folder `name`.
  oomlab::RunResult run(const std::string& mode, oomlab::SnapshotOptions snapshot = {},
                        const std::vector<std::string>& settings = {},
                        const std::string& name = "run") {
    oomlab::ExecConfig config;
    if (!settings.empty()) config.command = {"/usr/bin/env"};
    config.command.insert(config.command.end(), settings.begin(), settings.end());
    config.command.insert(config.command.end(), {python_, data_ + "/snapshot_program.py", mode});
    config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{2_GiB}};
    config.interval = 2ms;
    if (!name.empty()) {
      config.folder = dir_ / name;
      fs::create_directories(config.folder);
    }
    config.out_fd = -1;
    config.err_fd = -1;
    config.grace = 500ms;
    config.environment = oomlab::Environment{};
    config.snapshot = std::move(snapshot);
    return oomlab::run_exec(config, *devices_);
  }

  // The program's stdout and stderr in run folder `name`.
  std::string output(const std::string& name = "run") const {
    return read_text(dir_ / name / "stdout.txt") + "\n--- stderr ---\n" +
           read_text(dir_ / name / "stderr.txt");
  }

  // The snapshot's dict, through Python's own pickle.
  nlohmann::json snapshot(const fs::path& file) const {
    const oomlab::cli::ChildResult r = oomlab::cli::run_child(
        {python_, "-c",
         "import json, pickle, sys; print(json.dumps(pickle.load(open(sys.argv[1], 'rb'))))",
         file.string()},
        {.timeout = 30s});
    EXPECT_EQ(r.exit_code, 0) << r.err_tail;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  static std::vector<std::string> actions(const nlohmann::json& snap) {
    std::vector<std::string> found;
    for (const auto& entry : snap.at("device_traces").at(0))
      found.push_back(entry.at("action").get<std::string>());
    return found;
  }

  fs::path dir_;
  std::string python_;
  std::string data_;
  std::unique_ptr<oomlab::testing::FakeDevices> devices_;
  std::optional<std::string> old_python_path_;
};

TEST_F(ExecSnapshot, NothingIsRecordedUntilTheProgramFirstUsesCuda) {
  const oomlab::RunResult r = run("complete");
  ASSERT_EQ(r.outcome, Outcome::completed) << output();
  EXPECT_EQ(read_text(dir_ / "run" / "stdout.txt"),
            "torch at start: False\n"
            "torch found: True\n"
            "queued at import: 1\n"
            "recording before CUDA: None\n"
            "recording after CUDA: [('context', None), ('enabled', 'all'), ('max_entries', "
            "9223372036854775807), ('stacks', 'python')]\n")
      << "the shim imports nothing, asks torch.cuda._lazy_call at torch's import, and records "
         "alloc/free and segments only, without stacks, PyTorch's own limit";
  ASSERT_EQ(r.program->snapshots.size(), 1U) << r.program->snapshot_note;
  const fs::path file = r.program->snapshots.front();
  EXPECT_EQ(file.parent_path(), fs::absolute(dir_ / "run"));
  EXPECT_EQ(file.filename().string().rfind("snapshot-pid", 0), 0U) << file;
  EXPECT_EQ(actions(snapshot(file)), (std::vector<std::string>{"alloc", "free_completed"}))
      << "written at exit: the whole history";
  EXPECT_TRUE(r.program->snapshot_note.empty()) << r.program->snapshot_note;
}

TEST_F(ExecSnapshot, AnUnhandledOomKeepsTheSnapshotTakenAtTheOom) {
  const oomlab::RunResult r = run("oom");
  ASSERT_EQ(r.outcome, Outcome::oom) << output();
  ASSERT_EQ(r.program->snapshots.size(), 1U) << r.program->snapshot_note;
  const nlohmann::json snap = snapshot(r.program->snapshots.front());
  EXPECT_EQ(actions(snap), (std::vector<std::string>{"alloc", "oom"}))
      << "the block freed as the exception unwound is not in it: not the exit's";
  EXPECT_EQ(snap.at("segments").size(), 1U) << "768 MiB held at the OOM";
}

TEST_F(ExecSnapshot, AnotherExceptionAfterACaughtOomAlsoKeepsTheOomSnapshot) {
  const oomlab::RunResult r = run("oom-other");
  ASSERT_EQ(r.program->exit_code, 1) << output();
  ASSERT_EQ(r.program->snapshots.size(), 1U) << r.program->snapshot_note;
  EXPECT_EQ(actions(snapshot(r.program->snapshots.front())), (std::vector<std::string>{"oom"}));
}

TEST_F(ExecSnapshot, AProgramThatSurvivedAnOomWritesItsWholeHistoryAtExit) {
  const oomlab::RunResult r = run("survive");
  ASSERT_EQ(r.outcome, Outcome::completed) << output();
  ASSERT_EQ(r.program->snapshots.size(), 1U) << r.program->snapshot_note;
  EXPECT_EQ(
      actions(snapshot(r.program->snapshots.front())),
      (std::vector<std::string>{"alloc", "oom", "alloc", "free_completed", "free_completed"}));
}

TEST_F(ExecSnapshot, AForkedChildDoesNotWriteItsParentsHistory) {
  const oomlab::RunResult r = run("fork");
  ASSERT_EQ(r.outcome, Outcome::completed) << output();
  EXPECT_EQ(r.program->snapshots.size(), 1U) << "the child ran Python's exit handlers too";
}

TEST_F(ExecSnapshot, RankNamesTheFileElseLocalRank) {
  const oomlab::RunResult ranked = run("complete", {}, {"RANK=3"});
  ASSERT_EQ(ranked.program->snapshots.size(), 1U) << ranked.program->snapshot_note;
  EXPECT_EQ(ranked.program->snapshots.front().filename(), "snapshot-rank3.pickle");
  const oomlab::RunResult local = run("complete", {}, {"LOCAL_RANK=1"}, "local");
  ASSERT_EQ(local.program->snapshots.size(), 1U) << local.program->snapshot_note;
  EXPECT_EQ(local.program->snapshots.front().filename(), "snapshot-rank1.pickle");
}

TEST_F(ExecSnapshot, PythonStacksAndALimitReachPyTorch) {
  const oomlab::RunResult r = run("complete", {.python_stacks = true, .max_entries = 1000});
  EXPECT_NE(read_text(dir_ / "run" / "stdout.txt")
                .find("recording after CUDA: [('context', 'alloc'), ('enabled', 'all'), "
                      "('max_entries', 1000), ('stacks', 'python')]"),
            std::string::npos)
      << output();
}

TEST_F(ExecSnapshot, PyTorch20sLegacySignatureIsUsed) {
  const oomlab::RunResult r = run("complete", {}, {"FAKE_TORCH_API=legacy"});
  EXPECT_NE(read_text(dir_ / "run" / "stdout.txt")
                .find("recording after CUDA: [('enabled', 'all'), ('max_entries', "
                      "9223372036854775807), ('record_context', False), "
                      "('trace_alloc_record_context', False)]"),
            std::string::npos)
      << output();
  EXPECT_EQ(r.program->snapshots.size(), 1U) << r.program->snapshot_note;
}

TEST_F(ExecSnapshot, ATorchWithoutTheApisRunsUntouchedAndTheNoteSaysWhy) {
  const oomlab::RunResult r = run("complete", {}, {"FAKE_TORCH_API=no-history"});
  ASSERT_EQ(r.outcome, Outcome::completed) << output();
  EXPECT_TRUE(r.program->snapshots.empty());
  EXPECT_EQ(r.program->snapshot_note,
            "torch 2.99.0+fake lacks torch.cuda.memory._record_memory_history");
}

TEST_F(ExecSnapshot, AHistoryThatCannotStartIsNotedNotRaised) {
  const oomlab::RunResult r = run("oom", {}, {"FAKE_TORCH_API=failing"});
  ASSERT_EQ(r.outcome, Outcome::oom) << output();
  EXPECT_EQ(r.program->snapshot_note,
            "the shim failed: starting PyTorch's memory history: RuntimeError: cudaMallocAsync "
            "does not yet support recordHistory");
}

TEST_F(ExecSnapshot, AProgramWithoutTorchRunsAsItWouldAndTheNoteSaysSo) {
  const oomlab::RunResult with = run("no-torch");
  const oomlab::RunResult without = run("no-torch", {.enabled = false}, {}, "plain");
  EXPECT_EQ(with.program->exit_code, 3);
  EXPECT_EQ(output(), output("plain"));
  EXPECT_TRUE(with.program->snapshots.empty());
  EXPECT_EQ(with.program->snapshot_note, "the program never imported torch");
  EXPECT_EQ(without.program->snapshot_note, "--no-snapshot");
}

TEST_F(ExecSnapshot, ANonPythonProgramGetsANoteAndNoFile) {
  oomlab::ExecConfig config;
  config.command = {"/bin/sh", "-c", "echo not python"};
  config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{2_GiB}};
  config.out_fd = -1;
  config.err_fd = -1;
  config.environment = oomlab::Environment{};
  const oomlab::RunResult r = oomlab::run_exec(config, *devices_);
  EXPECT_TRUE(r.program->snapshots.empty());
  EXPECT_EQ(r.program->snapshot_note,
            "no Python process of the program loaded oomlab's shim (not a Python program, or "
            "Python run with -E, -I or -S)");
}

TEST_F(ExecSnapshot, TheEnvironmentsSitecustomizeStillRunsAndSysPathIsAsItWas) {
  const fs::path theirs = dir_ / "theirs";
  fs::create_directories(theirs);
  std::ofstream(theirs / "sitecustomize.py")
      << "import sys\nCHAINED = 'yes'\nsys.stderr.write('their sitecustomize ran\\n')\n";
  python_path(theirs.string() + ":" + data_ + "/fake_torch");
  const oomlab::RunResult with = run("path");
  const oomlab::RunResult without = run("path", {.enabled = false}, {}, "plain");
  EXPECT_NE(output().find("chained: yes"), std::string::npos) << output();
  EXPECT_NE(output().find("their sitecustomize ran"), std::string::npos) << output();
  EXPECT_EQ(output(), output("plain")) << "sys.path, the module and its output: as without us";
  EXPECT_EQ(with.program->exit_code, without.program->exit_code);
}

TEST_F(ExecSnapshot, AnErrorInTheEnvironmentsSitecustomizeReadsAsPythonWouldPrintIt) {
  const fs::path theirs = dir_ / "theirs";
  fs::create_directories(theirs);
  std::ofstream(theirs / "sitecustomize.py") << "raise ValueError('their own bug')\n";
  python_path(theirs.string() + ":" + data_ + "/fake_torch");
  const oomlab::RunResult with = run("no-torch");
  const oomlab::RunResult without = run("no-torch", {.enabled = false}, {}, "plain");
  EXPECT_NE(output().find("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                          "ValueError: their own bug\n"),
            std::string::npos)
      << output();
  EXPECT_EQ(output(), output("plain"));
  EXPECT_EQ(with.program->exit_code, without.program->exit_code);
}

TEST_F(ExecSnapshot, AFailureInsideTheShimIsSwallowedAndNoted) {
  std::ofstream(dir_ / "a-file") << "not a folder\n";
  const oomlab::RunResult with = run("oom", {.folder = dir_ / "a-file" / "snapshots"});
  const oomlab::RunResult without = run("oom", {.enabled = false}, {}, "plain");
  EXPECT_EQ(output(), output("plain")) << "the program's output and traceback, byte for byte";
  EXPECT_EQ(with.program->exit_code, without.program->exit_code);
  EXPECT_EQ(with.outcome, Outcome::oom);
  EXPECT_TRUE(with.program->snapshots.empty());
  EXPECT_EQ(with.program->snapshot_note.rfind("the shim failed: writing snapshot-pid", 0), 0U)
      << with.program->snapshot_note;
  EXPECT_NE(with.program->snapshot_note.find("at the OOM: NotADirectoryError"), std::string::npos)
      << with.program->snapshot_note;
}

TEST_F(ExecSnapshot, TheShimIsTheRepositorysFileAndItsFolderGoesAtTheEnd) {
  static_cast<void>(run("shim"));
  const std::string out = read_text(dir_ / "run" / "stdout.txt");
  const std::string folder = out.substr(0, out.find('\n'));
  const fs::path root = fs::path(data_) / "../../..";
  EXPECT_EQ(out.substr(folder.size() + 1),
            "== sitecustomize.py\n" + read_text(root / "harness/src/exec/shim/sitecustomize.py") +
                "== oomlab_shim.py\n" + read_text(root / "harness/src/exec/shim/oomlab_shim.py") +
                "== oomlab_pytorch_shim.py\n" +
                read_text(root / "frameworks/pytorch/exec/oomlab_pytorch_shim.py"))
      << "the binary carries the repository's shim and PyTorch's module of it, unchanged";
  EXPECT_FALSE(fs::exists(folder)) << folder;
}

TEST_F(ExecSnapshot, WithoutARunFolderNothingIsKeptUnlessAFolderIsNamed) {
  const oomlab::RunResult bare = run("complete", {}, {}, "");
  EXPECT_TRUE(bare.program->snapshots.empty());
  EXPECT_EQ(bare.program->snapshot_note,
            "1 snapshot(s) written, then removed with the temporary folder: the run had no "
            "folder to keep them in");
  const oomlab::RunResult named = run("complete", {.folder = dir_ / "kept"}, {}, "");
  ASSERT_EQ(named.program->snapshots.size(), 1U) << named.program->snapshot_note;
  EXPECT_EQ(named.program->snapshots.front().parent_path(), fs::absolute(dir_ / "kept"));
  EXPECT_TRUE(fs::is_regular_file(named.program->snapshots.front()))
      << "a search's first run keeps its snapshot where the caller said";
}

}  // namespace
