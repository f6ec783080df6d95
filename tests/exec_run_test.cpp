// `exec` end to end on stand-in devices: the ballast leaves the budget free, the program's memory
// is sampled into events.csv, its OOM line becomes the OOM record (figures, cause, advice), and
// every outcome is told apart. The devices are a fake whose "program usage" is a number the
// stand-in program writes to a file.
#include "exec/exec_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fake_exec_devices.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::Outcome;
using oomlab::testing::FakeDevices;

class ExecRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oomlab-exec-run-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "run");
    usage_ = dir_ / "usage";
    devices_ = std::make_unique<FakeDevices>(usage_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The stand-in: `script` run by sh, with $USAGE the file its "device memory" is read from.
  oomlab::RunResult run(const std::string& script, const std::string& budget_gib = "2") {
    oomlab::ExecConfig config;
    config.command = {"/bin/sh", "-c", "USAGE=" + usage_.string() + "; " + script};
    config.budget = {.kind = oomlab::BudgetRequest::Kind::bytes,
                     .bytes = oomlab::Bytes{std::stoull(budget_gib) * 1_GiB}};
    config.interval = 2ms;
    config.folder = dir_ / "run";
    config.out_fd = -1;
    config.err_fd = -1;
    config.timeout = timeout_;
    config.grace = 500ms;
    config.environment = oomlab::Environment{};
    config.notice = [this](std::string_view text) { notices_.emplace_back(text); };
    return oomlab::run_exec(config, *devices_);
  }

  std::vector<std::string> rows(const std::string& op) const {
    std::ifstream in(dir_ / "run" / "events.csv");
    std::vector<std::string> found;
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("," + op + ",") != std::string::npos) found.push_back(line);
    }
    return found;
  }

  fs::path dir_;
  fs::path usage_;
  std::unique_ptr<FakeDevices> devices_;
  std::optional<std::chrono::milliseconds> timeout_;
  std::vector<std::string> notices_;
};

constexpr const char* kPyTorchOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a total "
    "capacity of 79.11 GiB of which 100.00 MiB is free. Including non-PyTorch memory, this "
    "process has 1.90 GiB memory in use. Of the allocated memory 1.50 GiB is allocated by "
    "PyTorch, and RESERVED is reserved by PyTorch but unallocated. If reserved but unallocated "
    "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.";

std::string pytorch_oom(const std::string& reserved) {
  std::string line = kPyTorchOom;
  line.replace(line.find("RESERVED"), 8, reserved);
  return line;
}

TEST_F(ExecRun, APyTorchOomIsRecordedWithItsFiguresAndTheCacheDecidesTheCause) {
  const oomlab::RunResult r =
      run("echo 1073741824 > $USAGE; sleep 0.2; echo 2000000000 > $USAGE; sleep 0.2; echo '" +
          pytorch_oom("100.00 MiB") + "' >&2; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  ASSERT_TRUE(r.oom && r.oom->program);
  EXPECT_EQ(r.oom->program->framework, "PyTorch");
  EXPECT_EQ(r.oom->request_bytes, 256_MiB);
  EXPECT_EQ(r.oom->diagnosis.cause, oomlab::Cause::capacity) << "100 MiB cached < 256 MiB asked";
  EXPECT_EQ(r.oom->live_bytes, 2000000000U) << "the program's usage when the line came";
  EXPECT_EQ(r.budget_bytes, 2_GiB);
  EXPECT_EQ(r.ballast_bytes, 68_GiB);
  EXPECT_EQ(r.peak_live_bytes, 2000000000U);
  ASSERT_TRUE(r.program);
  EXPECT_EQ(r.program->exit_code, 1);
  EXPECT_EQ(r.program->first_bytes, 1073741824U);
  EXPECT_EQ(r.program->usage_source, "nvml-processes");
  EXPECT_GT(r.program->samples, 20U) << "2 ms apart over 0.4 s";
  EXPECT_EQ(rows("oom").size(), 1U);
  EXPECT_GT(rows("sample").size(), 20U);
  EXPECT_EQ(devices_->ballast, 0U) << "the ballast was given back";
  EXPECT_TRUE(devices_->saw_program);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "stderr.txt"));
}

TEST_F(ExecRun, MemoryCachedButUnallocatedAtLeastTheRequestIsFragmentation) {
  const oomlab::RunResult r = run("echo '" + pytorch_oom("300.00 MiB") + "'; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(r.oom->diagnosis.cause, oomlab::Cause::fragmentation);
  EXPECT_NE(r.oom->diagnosis.advice.find("expandable_segments"), std::string::npos)
      << r.oom->diagnosis.advice;
}

TEST_F(ExecRun, AProgramThatExitsZeroCompletedAndEverythingCameBack) {
  const oomlab::RunResult r = run("echo 536870912 > $USAGE; sleep 0.1; echo 0 > $USAGE");
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_FALSE(r.oom);
  EXPECT_EQ(r.peak_live_bytes, 512_MiB);
  ASSERT_TRUE(r.cleanup);
  EXPECT_LE(r.cleanup->difference(), 0);
  EXPECT_EQ(devices_->holds, 1);
}

TEST_F(ExecRun, AFailureWithoutAnOomLineIsAnErrorThatQuotesItsLastLine) {
  const oomlab::RunResult r = run("echo 'Traceback: KeyError: x' >&2; exit 2");
  EXPECT_EQ(r.outcome, Outcome::error);
  EXPECT_NE(r.error_message.find("exited with code 2"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("KeyError: x"), std::string::npos) << r.error_message;
}

TEST_F(ExecRun, AFailureAtTheBudgetWithoutAKnownLineSaysItWasLikelyAnOom) {
  const oomlab::RunResult r = run("echo 2100000000 > $USAGE; sleep 0.1; echo boom; exit 1");
  EXPECT_EQ(r.outcome, Outcome::error);
  EXPECT_NE(r.error_message.find("likely an OOM"), std::string::npos) << r.error_message;
}

TEST_F(ExecRun, AnOomLineInAProgramThatStillSucceededIsANoticeNotAnOom) {
  const oomlab::RunResult r = run("echo 'CUDNN_STATUS_ALLOC_FAILED' ; exit 0");
  EXPECT_EQ(r.outcome, Outcome::completed);
  ASSERT_FALSE(r.notices.empty());
  EXPECT_NE(r.notices.back().find("still completed"), std::string::npos) << r.notices.back();
}

TEST_F(ExecRun, ATimeoutIsItsOwnOutcome) {
  timeout_ = 200ms;
  const oomlab::RunResult r = run("sleep 30");
  EXPECT_EQ(r.outcome, Outcome::timeout);
  EXPECT_NE(r.error_message.find("--timeout"), std::string::npos) << r.error_message;
  EXPECT_LT(r.duration_ms, 5000.0);
}

TEST_F(ExecRun, ABudgetAboveFreeMemoryIsClampedWithANotice) {
  const oomlab::RunResult r = run("true", "100");
  EXPECT_EQ(r.budget_bytes, FakeDevices::kFree);
  EXPECT_EQ(r.ballast_bytes, 0U);
  ASSERT_FALSE(notices_.empty());
  EXPECT_NE(notices_.front().find("clamped"), std::string::npos) << notices_.front();
}

TEST_F(ExecRun, AMissingProgramIsRefusedBeforeAnyMemoryIsTaken) {
  oomlab::ExecConfig config;
  config.command = {"no-such-program-oomlab-xyz"};
  EXPECT_THROW(static_cast<void>(oomlab::run_exec(config, *devices_)), oomlab::Error);
  EXPECT_EQ(devices_->holds, 0);
}

TEST(ExecCommandLine, WordsAreQuotedAsAShellNeedsThem) {
  EXPECT_EQ(oomlab::command_line({"python", "train.py", "--lr=0.1"}), "python train.py --lr=0.1");
  EXPECT_EQ(oomlab::command_line({"sh", "-c", "echo it's"}), "sh -c 'echo it'\\''s'");
}

}  // namespace
