// One PyTorch snapshot per rank of a job on two stand-in devices: the exec shim names each by
// its RANK, and the model replays each on its own device's budget with the memory outside its
// allocator measured on that device. The ranks are python3 processes with the stand-in torch
// (tests/data/exec/fake_torch), each recording on its own cuda:N (FAKE_TORCH_DEVICE).
#include <gtest/gtest.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): setenv is POSIX
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "exec/exec_run.hpp"
#include "exec/program.hpp"
#include "fake_exec_devices.hpp"
#include "pytorch/exec/program_model.hpp"
#include "test_support.hpp"

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace oomlab::literals;
using oomlab::Outcome;

oomlab::BudgetRequest bytes(std::uint64_t n) {
  return {.kind = oomlab::BudgetRequest::Kind::bytes, .bytes = oomlab::Bytes{n}};
}

TEST(ExecRankSnapshots, EachRankHasItsSnapshotReplayedOnItsOwnDevice) {
  const auto python = oomlab::find_program("python3");
  if (!python) GTEST_SKIP() << "needs python3 on PATH";
  const fs::path dir =
      fs::temp_directory_path() / ("oomlab-exec-rank-snapshots-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "run");
  const std::string data = oomlab::testing::test_data_dir() + "/exec";
  std::optional<std::string> old_path;
  if (const char* old = std::getenv("PYTHONPATH")) old_path = old;
  ::setenv("PYTHONPATH", (data + "/fake_torch").c_str(), 1);
  oomlab::testing::FakeDevices devices(dir / "usage", 2);
  oomlab::ExecConfig config;
  const std::string rank = python->string() + " " + data + "/snapshot_program.py complete";
  const std::string usage = (dir / "usage").string();
  config.command = {"/bin/sh", "-c",
                    "echo 500000000 > " + usage + "; echo 900000000 > " + usage +
                        ".1; sleep 0.05; RANK=0 FAKE_TORCH_DEVICE=0 " + rank +
                        " & RANK=1 FAKE_TORCH_DEVICE=1 " + rank + "; wait"};
  config.device_budgets = {{0, bytes(2_GiB)}, {1, bytes(3_GiB)}};
  config.interval = 2ms;
  config.folder = dir / "run";
  config.out_fd = -1;
  config.err_fd = -1;
  config.environment = oomlab::Environment{};
  oomlab::RunResult r = oomlab::run_exec(config, devices);
  if (old_path) {
    ::setenv("PYTHONPATH", old_path->c_str(), 1);
  } else {
    ::unsetenv("PYTHONPATH");
  }
  ASSERT_EQ(r.outcome, Outcome::completed) << r.error_message;
  ASSERT_EQ(r.program->snapshots.size(), 2U) << r.program->snapshot_note;
  std::vector<std::string> names;
  for (const fs::path& file : r.program->snapshots)
    names.push_back(file.filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"snapshot-rank0.pickle", "snapshot-rank1.pickle"}));
  oomlab::torch::model_program(r, {.threads = 1});
  ASSERT_EQ(r.models.size(), 2U) << (r.notes.empty() ? "" : r.notes.front());
  for (const oomlab::ProgramModel& m : r.models) {
    ASSERT_TRUE(m.device) << m.snapshot;
    const bool second = *m.device == 1;
    EXPECT_EQ(m.snapshot.filename(), second ? "snapshot-rank1.pickle" : "snapshot-rank0.pickle")
        << "rank 1 recorded on cuda:1";
    EXPECT_EQ(m.process_bytes, second ? 900000000U : 500000000U)
        << "the memory on its own device, not the devices' sum";
    EXPECT_EQ(m.budget_bytes + m.outside_allocator_bytes, second ? 3_GiB : 2_GiB)
        << "replayed on its own device's budget";
    EXPECT_GT(m.outside_allocator_bytes, 0U);
  }
  fs::remove_all(dir);
}

}  // namespace
