// SIGINT and SIGTERM through the real binary: the run stops at the next event, frees everything,
// writes its record with outcome "interrupted", and exits 130.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;

// The oomlab binary beside this test binary (a staged folder: ci/stage-gpu.sh), else the one of
// the build tree this test was built in.
int run_and_signal(const fs::path& out, int signal_number) {
  const std::string binary = oomlab_binary();
  const pid_t child = fork();
  if (child == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    // Long enough to be interrupted: 16M small blocks on the sim.
    execl(binary.c_str(), "oomlab", "run", "fragmentation", "--allocator=sim", "--budget=4GiB",
          "--param", "block=256", "--quiet", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  kill(child, signal_number);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class Signals : public ::testing::TestWithParam<int> {};

TEST_P(Signals, StopTheRunCleanlyWithExit130) {
  const fs::path out =
      fs::temp_directory_path() / ("oomlab_signal_test_" + std::to_string(GetParam()));
  fs::remove_all(out);
  EXPECT_EQ(run_and_signal(out, GetParam()), 130);
  std::ifstream file(out / "summary.json");
  ASSERT_TRUE(file) << "the record is written";
  const auto summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary.at("outcome"), "interrupted");
  EXPECT_GT(summary.at("counts").at("allocations").get<std::uint64_t>(), 0U);
  EXPECT_EQ(summary.at("counts").at("allocations"), summary.at("counts").at("frees"));
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(IntAndTerm, Signals, ::testing::Values(SIGINT, SIGTERM));

}  // namespace
