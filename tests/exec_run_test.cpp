// `exec` end to end on stand-in devices: the ballast leaves the budget free, the program's memory
// is sampled into events.csv, its OOM line becomes the OOM record (figures, cause, advice), and
// every outcome is told apart. The devices are a fake whose "program usage" is a number the
// stand-in program writes to a file.
#include "exec/exec_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fake_exec_devices.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

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
  EXPECT_EQ(r.oom->live_bytes, 2040109466U)
      << "\"this process has 1.90 GiB\": the message's figure at the OOM, not the last sample";
  EXPECT_EQ(r.oom->device_free_bytes, 100_MiB);
  EXPECT_EQ(r.oom->reserved_bytes, 2_GiB - 100_MiB) << "taken of the budget: what is not free";
  EXPECT_EQ(r.oom->diagnosis.free_bytes, 100_MiB);
  EXPECT_EQ(r.budget_bytes, 2_GiB);
  EXPECT_EQ(r.ballast_bytes, 68_GiB);
  ASSERT_TRUE(r.program);
  EXPECT_EQ(r.program->peak_bytes, 2000000000U);
  EXPECT_EQ(r.peak_live_bytes, 0U) << "a program's bytes are its own field, not a scenario's live";
  EXPECT_EQ(r.program->exit_code, 1);
  EXPECT_EQ(r.program->first_bytes, 1073741824U);
  EXPECT_EQ(r.program->usage_source, "nvml-processes");
  EXPECT_GT(r.program->samples, 20U) << "2 ms apart over 0.4 s";
  ASSERT_EQ(rows("oom").size(), 1U);
  EXPECT_NE(rows("oom").front().find(",2040109466,"), std::string::npos) << rows("oom").front();
  EXPECT_GT(rows("sample").size(), 20U);
  EXPECT_NE(rows("sample").back().find(",2000000000,"), std::string::npos)
      << "the samples stay NVML's: " << rows("sample").back();
  EXPECT_EQ(devices_->ballast, 0U) << "the ballast was given back";
  EXPECT_TRUE(devices_->saw_program);
  EXPECT_TRUE(fs::exists(dir_ / "run" / "stderr.txt"));
}

// The OOM lines PyTorch printed on the H100 (tests/data/pytorch/frontiers.json), each as a
// program would end with it: the record's figures are the line's.
std::vector<std::string> measured_pytorch_lines() {
  std::ifstream in(oomlab::testing::test_data_dir() + "/pytorch/frontiers.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<std::string> lines;
  for (const auto& frontier : doc.at("frontiers")) {
    for (const auto& trial : frontier.at("trials")) {
      if (trial.at("message").is_string())
        lines.push_back("torch.OutOfMemoryError: " + trial.at("message").get<std::string>());
    }
  }
  return lines;
}

TEST_F(ExecRun, TheFiguresAtTheOomAreThoseOfPyTorchsOwnMessage) {
  const std::vector<std::string> lines = measured_pytorch_lines();
  ASSERT_FALSE(lines.empty());
  // "... GPU 0 has a total capacity of 79.18 GiB of which 178.19 MiB is free. Including
  // non-PyTorch memory, this process has 79.00 GiB memory in use. ..." (the measurement held its
  // ballast in the process itself).
  const std::string& line = lines.front();
  ASSERT_NE(line.find("of which 178.19 MiB is free"), std::string::npos) << line;
  const oomlab::RunResult r =
      run("echo 1500000000 > $USAGE; sleep 0.1; echo '" + line + "' >&2; exit 1");
  ASSERT_EQ(r.outcome, Outcome::oom) << r.error_message;
  const std::uint64_t free = 178 * 1_MiB + 199229;  // 0.19 MiB, rounded as the line's
  EXPECT_EQ(r.oom->device_free_bytes, free);
  EXPECT_EQ(r.oom->live_bytes, 79_GiB) << "what the process had, not 1.5 GB sampled before";
  EXPECT_EQ(r.oom->reserved_bytes, 2_GiB - free);
  EXPECT_EQ(r.oom->diagnosis.free_bytes, free);
  EXPECT_EQ(r.program->peak_bytes, 1500000000U) << "the peak is the samples'";
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
  EXPECT_EQ(r.program->peak_bytes, 512_MiB);
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
