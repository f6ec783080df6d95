// Reading a distributed job's output: the rank marks torch.distributed's excepthook
// ("[rank1]: ...") and torchrun --tee ("[default1]:...") put on lines, the device a PyTorch OOM
// line names, torchrun's failure report and the error file `@record` writes — each in the exact
// shape torch/distributed/elastic prints it.
#include "exec/rank_lines.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pytorch/exec/torchrun.hpp"

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives

namespace {

namespace fs = std::filesystem;
using oomlab::read_rank_marks;

TEST(RankLines, TorchsTracebackMarkIsTheGlobalRank) {
  const auto mark = read_rank_marks("[rank1]: torch.OutOfMemoryError: CUDA out of memory.");
  EXPECT_EQ(mark.rank, 1);
  EXPECT_FALSE(mark.local_rank);
  EXPECT_EQ(mark.text, "torch.OutOfMemoryError: CUDA out of memory.");
}

TEST(RankLines, TorchrunsTeeMarkIsTheLocalRankAndBothMayComeTogether) {
  const auto tee = read_rank_marks("[default0]:step 3 loss 2.1");
  EXPECT_EQ(tee.local_rank, 0);
  EXPECT_FALSE(tee.rank);
  EXPECT_EQ(tee.text, "step 3 loss 2.1");
  const auto both = read_rank_marks("[trainer3]:[rank11]: Traceback (most recent call last):");
  EXPECT_EQ(both.local_rank, 3);
  EXPECT_EQ(both.rank, 11);
  EXPECT_EQ(both.text, "Traceback (most recent call last):");
}

TEST(RankLines, BracketsThatAreNotAMarkStayInTheLine) {
  for (const char* line : {"[0]:", "[W reducer.cpp:1389] Warning", "[rank]: x", "[rank1] x",
                           "  [rank1]: x", "[rank1]"}) {
    const auto mark = read_rank_marks(line);
    EXPECT_FALSE(mark.rank || mark.local_rank) << line;
    EXPECT_EQ(mark.text, line);
  }
}

TEST(RankLines, ThePyTorchOomLineNamesItsDeviceInEachOfItsForms) {
  EXPECT_EQ(oomlab::oom_line_device(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 1 "
                "has a total capacity of 79.18 GiB of which 16.56 MiB is free."),
            1);
  EXPECT_EQ(oomlab::oom_line_device("RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB "
                                    "(GPU 3; 7.93 GiB total capacity; 130.35 MiB already "
                                    "allocated)"),
            3);
  EXPECT_EQ(oomlab::oom_line_device("torch.OutOfMemoryError: Allocation on device 2 would exceed "
                                    "allowed memory. (out of memory)"),
            2);
  EXPECT_FALSE(oomlab::oom_line_device("RuntimeError: CUDA error: out of memory"));
  EXPECT_FALSE(oomlab::oom_line_device("using GPU 1 has a total capacity of 80 GiB"))
      << "not an OOM line";
}

// torch/distributed/elastic/multiprocessing/errors/__init__.py: ChildFailedError's message.
constexpr const char* kTorchrunReport[] = {
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "ddp_uneven.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  time      : 2026-11-25_10:12:09",
    "  host      : gpu-host",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : -15 (pid: 4241)",
    "  error_file: <N/A>",
    "  traceback : Signal 15 (SIGTERM) received by PID 4241",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2026-11-25_10:12:03",
    "  host      : gpu-host",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : 1 (pid: 4242)",
    "  error_file: /tmp/torchelastic_x/none_y/attempt_0/1/error.json",
    "  traceback : Traceback (most recent call last):",
    "    rank      : 7 (local_rank: 7)",
    "============================================================",
};

TEST(RankLines, TorchrunsReportGivesTheRootCauseAndTheOtherFailures) {
  oomlab::torch::TorchrunReport report;
  for (const char* line : kTorchrunReport)
    report.feed_line(line);
  ASSERT_EQ(report.failures().size(), 2U);
  const oomlab::LauncherFailure& other = report.failures().front();
  EXPECT_FALSE(other.root_cause);
  EXPECT_EQ(other.rank, 0);
  EXPECT_EQ(other.exit_code, -15);
  EXPECT_TRUE(other.error_file.empty()) << "<N/A>";
  const oomlab::LauncherFailure* root = report.root_cause();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->rank, 1) << "a traceback line that looks like a field does not count";
  EXPECT_EQ(root->local_rank, 1);
  EXPECT_EQ(root->exit_code, 1);
  EXPECT_EQ(root->pid, 4242);
  EXPECT_EQ(root->time, "2026-11-25_10:12:03");
  EXPECT_EQ(root->error_file, "/tmp/torchelastic_x/none_y/attempt_0/1/error.json");
}

TEST(RankLines, ErrorFilesOfBothShapesAreRead) {
  const fs::path dir =
      fs::temp_directory_path() / ("oomlab-rank-lines-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "new.json")
      << R"({"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate",)"
      << R"( "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1764065523"}}})";
  std::ofstream(dir / "old.json")
      << R"({"message": "RuntimeError: boom", "timestamp": 1700000000})";
  std::ofstream(dir / "bad.json") << "{not json";
  const auto fresh = oomlab::torch::read_elastic_error_file(dir / "new.json");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->message, "OutOfMemoryError: CUDA out of memory. Tried to allocate");
  EXPECT_EQ(fresh->timestamp, 1764065523);
  const auto old = oomlab::torch::read_elastic_error_file(dir / "old.json");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->message, "RuntimeError: boom");
  EXPECT_EQ(old->timestamp, 1700000000);
  EXPECT_FALSE(oomlab::torch::read_elastic_error_file(dir / "bad.json"));
  EXPECT_FALSE(oomlab::torch::read_elastic_error_file(dir / "missing.json"));
  fs::remove_all(dir);
}

}  // namespace
