// `exec` of a distributed job on stand-in devices and stand-in ranks: shell processes that print
// the marks torch.distributed and torchrun put on their lines, write torchrun's report and the
// error file `@record` writes, fill a device, or wait forever in a "collective". Pins which rank
// is named, the hang ended after --grace as an OOM (not a timeout) with nothing left running,
// each device's own budget, ballast and timeline, and NVLink multicast kept off.
#include <gtest/gtest.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): setenv is POSIX
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/exec_run.hpp"
#include "fake_exec_devices.hpp"
#include "oomlab/units.hpp"
#include "reports/run/program_summary.hpp"
#include "reports/run/run_report.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/device_timelines.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::Outcome;
using oomlab::testing::FakeDevices;

using ::oomlab::testing::read_text;

// PyTorch 2.x's message, as rank 1 raises it on its cuda:1.
const std::string kRank1Oom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 1 has a total "
    "capacity of 79.11 GiB of which 20.00 MiB is free. Including non-PyTorch memory, this process "
    "has 1.98 GiB memory in use. Of the allocated memory 1.50 GiB is allocated by PyTorch, and "
    "100.00 MiB is reserved by PyTorch but unallocated.";

class ExecRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-ranks-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    usage_ = dir_ / "usage";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `script` by sh on `devices` stand-in devices; $USAGE, $USAGE.1 are their usage files, $DIR
  // a scratch folder.
  oomlab::RunResult run(const std::string& script, std::size_t devices = 2,
                        std::chrono::milliseconds grace = 300ms) {
    devices_ = std::make_unique<FakeDevices>(usage_, devices);
    config_.command = {"/bin/sh", "-c",
                       "USAGE=" + usage_.string() + "; DIR=" + dir_.string() + "; " + script};
    if (config_.device_budgets.empty())
      config_.budget = {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{2_GiB}};
    config_.interval = 2ms;
    config_.folder = dir_ / "run";
    config_.out_fd = -1;
    config_.err_fd = -1;
    config_.timeout = 20s;  // a hang the run failed to end is a failed test, not a stuck one
    config_.grace = grace;
    config_.environment = oomlab::Environment{};
    return oomlab::run_exec(config_, *devices_);
  }

  // Whether the process whose pid a stand-in wrote to `file` is gone (or only a zombie).
  bool ended(const std::string& file) const {
    const pid_t pid = std::stoi(read_text(dir_ / file));
    if (::kill(pid, 0) != 0) return true;
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    return stat.find(") Z") != std::string::npos;
  }

  fs::path dir_;
  fs::path usage_;
  oomlab::ExecConfig config_;
  std::unique_ptr<FakeDevices> devices_;
};

// Rank 0 waits forever in its "collective"; rank 1 runs out of memory and its process stays
// (stuck in its own teardown), the way an NCCL job hangs instead of failing.
TEST_F(ExecRanks, AJobLeftWaitingAfterARanksOomIsEndedAfterGraceAsAnOom) {
  const auto start = std::chrono::steady_clock::now();
  const oomlab::RunResult r =
      run("echo 1000000000 > $USAGE; echo 1000000000 > $USAGE.1;"
          "sh -c 'echo $$ > '$DIR'/rank0.pid; echo \"[rank0]: step 1 done\"; exec sleep 60' &"
          "sleep 0.1; echo 2100000000 > $USAGE.1; echo \"[rank1]: step 1 done\";"
          "echo '[rank1]: " +
          kRank1Oom + "' >&2; wait");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  ASSERT_TRUE(r.program && r.program->failing_rank);
  const oomlab::FailingRank& f = *r.program->failing_rank;
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.device, 1);
  EXPECT_EQ(f.verdict.find("rank 1 (GPU 1) ran out of memory at "), 0U) << f.verdict;
  EXPECT_NE(f.verdict.find(" s; ranks 0 were left waiting"), std::string::npos) << f.verdict;
  EXPECT_EQ(f.waiting, std::vector<int>{0});
  ASSERT_TRUE(r.program->waiting_ended_after_s);
  EXPECT_DOUBLE_EQ(*r.program->waiting_ended_after_s, 0.3);
  EXPECT_LT(seconds, 8.0) << "ended after --grace, not at --timeout";
  EXPECT_TRUE(ended("rank0.pid")) << "the waiting rank was left running";
  ASSERT_EQ(r.program->ranks.size(), 2U);
  EXPECT_EQ(r.program->ranks[0].last_lines, std::vector<std::string>{"step 1 done"});
  EXPECT_EQ(r.program->ranks[0].memory_rose_after_oom, false);
  EXPECT_TRUE(r.program->ranks[1].ran_out);
  EXPECT_EQ(r.oom->request_bytes, 256_MiB) << "the mark is taken off before the line is read";
  EXPECT_EQ(r.oom->program->line.rfind("torch.OutOfMemoryError", 0), 0U) << r.oom->program->line;
}

// The record (summary.json) and the report of the same kind of job: each device's figures, the
// ranks, the verdict, one chart per device with the failing rank's device marked.
TEST_F(ExecRanks, TheRecordAndTheReportCarryEachDeviceAndTheFailingRank) {
  const oomlab::RunResult r =
      run("echo 1000000000 > $USAGE; echo 1000000000 > $USAGE.1; sleep 0.05;"
          "echo 2100000000 > $USAGE.1; echo '[rank1]: " +
          kRank1Oom + "' >&2; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  const fs::path folder = dir_ / "run";
  const auto doc = oomlab::summary_json(r, {.argv = {"oomlab"}, .folder = folder});
  std::ofstream(folder / "summary.json") << doc.dump(2);
  const auto& program = doc["program"];
  ASSERT_EQ(program["device_usage"].size(), 2U);
  EXPECT_EQ(program["device_usage"][1]["events"], "events-gpu1.csv");
  EXPECT_EQ(program["device_usage"][1]["peak_bytes"], 2100000000U);
  EXPECT_EQ(program["failing_rank"]["rank"], 1);
  EXPECT_EQ(program["failing_rank"]["device"], 1);
  EXPECT_EQ(program["failing_rank"]["waiting"], nlohmann::ordered_json::array({0}));
  EXPECT_EQ(program["ranks"].size(), 2U);
  EXPECT_TRUE(program["waiting_ended_after_s"].is_null());
  const oomlab::RunReport report = oomlab::load_run_report(folder);
  ASSERT_EQ(report.device_timelines.size(), 2U);
  EXPECT_FALSE(report.device_timelines[0].failing);
  EXPECT_TRUE(report.device_timelines[1].failing);
  EXPECT_EQ(report.device_timelines[1].budget_bytes, 2_GiB);
  EXPECT_EQ(report.device_timelines[1].timeline.failed_seqs.size(), 1U) << "its own oom row";
  EXPECT_TRUE(report.device_timelines[0].timeline.failed_seqs.empty());
  const std::string html = oomlab::device_timelines_html(report);
  EXPECT_NE(html.find("<h3 id=\"gpu-1\" class=\"failing\">GPU 1 · budget 2.00 GiB"),
            std::string::npos)
      << html.substr(0, 600);
  EXPECT_NE(html.find("rank 1 (GPU 1) ran out of memory at"), std::string::npos);
  std::size_t charts = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++charts;
  EXPECT_EQ(charts, 2U);
}

// Rank 1 runs out on GPU 1 while GPU 0 holds memory too, 3.4 GB on the two together against
// 2 GiB each: the OOM's figures are GPU 1's own, against its own budget, not the sum against one.
TEST_F(ExecRanks, TheOomsFiguresAreTheFailingDevicesOwnNotTheDevicesSummed) {
  const oomlab::RunResult r =
      run("echo 1500000000 > $USAGE; echo 1900000000 > $USAGE.1; sleep 0.05; echo '[rank1]: " +
          kRank1Oom + "' >&2; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  ASSERT_TRUE(r.oom);
  EXPECT_LT(r.oom->live_bytes, 2_GiB) << "the message's 1.98 GiB, not 3.4 GB summed";
  EXPECT_LT(r.oom->reserved_bytes, 2_GiB);
  EXPECT_GT(r.oom->diagnosis.free_bytes, 0U) << "GPU 1's budget less what it took";
  const std::string text = oomlab::program_summary(r, "");
  EXPECT_NE(text.find(" on GPU 1 · request 256 MiB · the program used 1.98 GiB there · "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("memory     GPU 1 (rank 1 ran out): peak 1.77 GiB (88.5% of its 2.00 GiB "
                      "budget)"),
            std::string::npos)
      << text;
}

TEST_F(ExecRanks, AOneProcessJobThatGoesQuietAfterAnOomIsNotEnded) {
  const oomlab::RunResult r =
      run("echo '" + kRank1Oom + "' >&2; sleep 1; exit 1", 1, std::chrono::milliseconds(200));
  EXPECT_EQ(r.outcome, Outcome::oom);
  EXPECT_FALSE(r.program->waiting_ended_after_s) << "a survivor of its OOM may be quiet a while";
  EXPECT_EQ(r.program->exit_code, 1);
  EXPECT_FALSE(r.program->failing_rank);
}

// torchrun --tee marks lines by local rank and reports the first failure with its error file.
TEST_F(ExecRanks, TorchrunsRootCauseAndErrorFileNameTheRank) {
  const std::string error_file = (dir_ / "error.json").string();
  const oomlab::RunResult r = run(
      "echo '{\"message\": {\"message\": \"OutOfMemoryError: CUDA out of memory.\", "
      "\"extraInfo\": {\"py_callstack\": \"\", \"timestamp\": \"1764065523\"}}}' > " +
      error_file +
      ";echo '[default0]:epoch 0'; echo '[default1]:epoch 0';"
      "echo '[default1]:RuntimeError: CUDA error: out of memory' >&2;"
      "printf 'Root Cause (first observed failure):\\n[0]:\\n  time      : 2026-11-25_10:12:03\\n"
      "  rank      : 1 (local_rank: 1)\\n  exitcode  : 1 (pid: 42)\\n  error_file: " +
      error_file + "\\n  traceback : x\\n' >&2; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  ASSERT_TRUE(r.program->failing_rank);
  const oomlab::FailingRank& f = *r.program->failing_rank;
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.local_rank, 1);
  EXPECT_EQ(f.device, 1) << "local rank 1 runs on the program's cuda:1";
  ASSERT_GE(f.evidence.size(), 2U);
  EXPECT_NE(f.evidence[0].find("local rank 1 (torchrun --tee)"), std::string::npos)
      << f.evidence[0];
  EXPECT_NE(f.evidence[1].find("torchrun's root cause (first observed failure) names rank 1, "
                               "exit code 1; its error file (" +
                               error_file + ") holds the OOM"),
            std::string::npos)
      << f.evidence[1];
  EXPECT_FALSE(r.program->waiting_ended_after_s) << "the job ended by itself";
}

// No OOM line at all: the device that filled its budget names the rank.
TEST_F(ExecRanks, WithoutAnOomLineTheDeviceThatFilledItsBudgetNamesTheRank) {
  const oomlab::RunResult r =
      run("echo 500000000 > $USAGE; echo 500000000 > $USAGE.1; sleep 0.1;"
          "echo 2100000000 > $USAGE.1; sleep 0.1; echo 'Segmentation fault' >&2; exit 139");
  ASSERT_EQ(r.outcome, Outcome::error);
  ASSERT_TRUE(r.program->failing_rank);
  EXPECT_EQ(r.program->failing_rank->rank, 1);
  EXPECT_EQ(r.program->failing_rank->evidence.front(),
            "no OOM line named a rank; GPU 1 filled its budget first");
  ASSERT_EQ(r.program->device_runs.size(), 2U);
  EXPECT_TRUE(r.program->device_runs[1].full_ms);
  EXPECT_FALSE(r.program->device_runs[0].full_ms);
}

TEST_F(ExecRanks, EachDeviceHasItsOwnBudgetBallastAndTimeline) {
  config_.device_budgets = {
      {0, {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{2_GiB}}},
      {1, {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{3_GiB}}}};
  const oomlab::RunResult r =
      run("echo 1000000000 > $USAGE; echo 2000000000 > $USAGE.1; sleep 0.1");
  ASSERT_EQ(r.outcome, Outcome::completed) << r.error_message;
  ASSERT_EQ(r.program->device_runs.size(), 2U);
  const oomlab::DeviceRun& d0 = r.program->device_runs[0];
  const oomlab::DeviceRun& d1 = r.program->device_runs[1];
  EXPECT_EQ(d0.budget_bytes, 2_GiB);
  EXPECT_EQ(d1.budget_bytes, 3_GiB);
  EXPECT_EQ(d0.ballast_bytes, 68_GiB);
  EXPECT_EQ(d1.ballast_bytes, 67_GiB);
  EXPECT_EQ(d0.peak_bytes, 1000000000U);
  EXPECT_EQ(d1.peak_bytes, 2000000000U);
  EXPECT_EQ(r.program->peak_bytes, 3000000000U) << "events.csv keeps the devices summed";
  EXPECT_EQ(d1.events_file, "events-gpu1.csv");
  const std::string own = read_text(dir_ / "run" / "events-gpu1.csv");
  EXPECT_NE(own.find(",sample,"), std::string::npos);
  EXPECT_NE(own.find(",2000000000,"), std::string::npos) << "device 1's own figure";
  EXPECT_EQ(own.find(",3000000000,"), std::string::npos) << "not the sum";
  EXPECT_TRUE(fs::exists(dir_ / "run" / "events.csv"));
}

TEST_F(ExecRanks, OneDeviceKeepsItsOutputNames) {
  const oomlab::RunResult r = run("echo 1000 > $USAGE", 1);
  ASSERT_EQ(r.outcome, Outcome::completed);
  ASSERT_EQ(r.program->device_runs.size(), 1U);
  EXPECT_TRUE(r.program->device_runs[0].events_file.empty());
  EXPECT_FALSE(fs::exists(dir_ / "run" / "events-gpu0.csv"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "events.csv"));
}

TEST_F(ExecRanks, NvlinkMulticastIsOffWhateverTheEnvironmentSays) {
  ::setenv("NCCL_NVLS_ENABLE", "1", 1);
  ::setenv("NVSHMEM_DISABLE_NVLS", "0", 1);
  config_.program_environment = {{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "0"}};
  config_.variables = {{"NCCL_NVLS_ENABLE", "1"}};
  const oomlab::RunResult r =
      run("echo \"$NCCL_NVLS_ENABLE $TORCH_SYMM_MEM_DISABLE_MULTICAST $NVSHMEM_DISABLE_NVLS\" > "
          "$DIR/seen",
          1);
  ::unsetenv("NCCL_NVLS_ENABLE");
  ::unsetenv("NVSHMEM_DISABLE_NVLS");
  ASSERT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(read_text(dir_ / "seen"), "0 1 1\n");
}

}  // namespace
