// A program under `exec`, without a GPU: small shell stand-ins show that its output is passed on,
// copied and read line by line, and that its whole process group is ended on every way out (its
// own end, a timeout, a program that ignores SIGTERM, a stop, and oomlab itself killed).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "exec/program.hpp"
#include "oomlab/error.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using oomlab::ProgramEnd;
using oomlab::ProgramLimits;
using oomlab::ProgramObserver;
using oomlab::ProgramSpec;

class Lines final : public ProgramObserver {
 public:
  void started(pid_t pid) override { pid_ = pid; }
  void line(std::string_view text, bool from_stderr) override {
    (from_stderr ? err : out).emplace_back(text);
  }
  std::vector<std::string> out;
  std::vector<std::string> err;
  pid_t pid_ = 0;
};

ProgramSpec shell(const std::string& script) {
  return ProgramSpec{.argv = {"/bin/sh", "-c", script}, .out_fd = -1, .err_fd = -1};
}

// Running, not a zombie (an orphan whose reaper has not come yet is dead all the same).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

// Whether `pid` is gone within `wait` (what the guardian or a kill needs a moment for).
bool gone_within(pid_t pid, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (alive(pid) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  return !alive(pid);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

pid_t read_pid(const fs::path& path, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}

fs::path temp_folder(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("oomlab-exec-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ExecProgram, OutputIsCopiedAndSeenLineByLineOnBothStreams) {
  const fs::path dir = temp_folder("copy");
  ProgramSpec spec = shell("echo one; echo two >&2; printf 'no newline'");
  spec.out_copy = dir / "stdout.txt";
  spec.err_copy = dir / "stderr.txt";
  Lines lines;
  const ProgramEnd end = oomlab::run_program(spec, {}, lines);
  EXPECT_TRUE(end.succeeded());
  EXPECT_EQ(read_file(dir / "stdout.txt"), "one\nno newline");
  EXPECT_EQ(read_file(dir / "stderr.txt"), "two\n");
  EXPECT_EQ(lines.out, (std::vector<std::string>{"one", "no newline"}));
  EXPECT_EQ(lines.err, (std::vector<std::string>{"two"}));
  ASSERT_FALSE(end.last_lines.empty());
  fs::remove_all(dir);
}

TEST(ExecProgram, ItsExitCodeOrTheSignalThatEndedItIsReported) {
  Lines lines;
  const ProgramEnd exited = oomlab::run_program(shell("exit 3"), {}, lines);
  EXPECT_EQ(exited.exit_code, 3);
  EXPECT_FALSE(exited.succeeded());
  EXPECT_EQ(oomlab::describe_end(exited), "exited with code 3");
  const ProgramEnd crashed = oomlab::run_program(shell("kill -SEGV $$"), {}, lines);
  EXPECT_EQ(crashed.signal, SIGSEGV);
  EXPECT_EQ(oomlab::describe_end(crashed), "was killed by SIGSEGV");
}

TEST(ExecProgram, ItGetsTheEnvironmentItIsGiven) {
  ProgramSpec spec = shell("echo \"$CUDA_VISIBLE_DEVICES\"");
  spec.environment = {{"CUDA_VISIBLE_DEVICES", "GPU-1234"}};
  Lines lines;
  static_cast<void>(oomlab::run_program(spec, {}, lines));
  EXPECT_EQ(lines.out, (std::vector<std::string>{"GPU-1234"}));
}

TEST(ExecProgram, ATimeoutEndsTheWholeGroup) {
  const fs::path dir = temp_folder("timeout");
  Lines lines;
  const auto start = std::chrono::steady_clock::now();
  const ProgramEnd end = oomlab::run_program(
      shell("sleep 100 & echo $! > " + (dir / "child").string() + "; sleep 100"),
      {.timeout = 300ms, .grace = 2000ms}, lines);
  EXPECT_TRUE(end.timed_out);
  EXPECT_FALSE(end.killed) << "sh and sleep end on SIGTERM; no SIGKILL was needed";
  EXPECT_EQ(end.signal, SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  const pid_t child = read_pid(dir / "child", 1s);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(gone_within(child, 1s)) << "its background child was in its group";
  fs::remove_all(dir);
}

TEST(ExecProgram, AProgramThatIgnoresSigtermIsKilledAfterTheGrace) {
  Lines lines;
  const auto start = std::chrono::steady_clock::now();
  const ProgramEnd end =
      oomlab::run_program(shell("trap '' TERM; echo ready; while :; do sleep 0.05; done"),
                          {.timeout = 200ms, .grace = 400ms}, lines);
  EXPECT_TRUE(end.timed_out);
  EXPECT_TRUE(end.killed);
  EXPECT_EQ(end.signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(ExecProgram, AStopSendsSigintToItsGroup) {
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop.store(true);
  });
  Lines lines;
  const ProgramEnd end =
      oomlab::run_program(shell("trap 'echo got-int; exit 7' INT; while :; do sleep 0.05; done"),
                          {.grace = 3000ms, .stop = &stop}, lines);
  stopper.join();
  EXPECT_TRUE(end.stopped);
  EXPECT_EQ(end.exit_code, 7);
  EXPECT_EQ(lines.out, (std::vector<std::string>{"got-int"}));
}

TEST(ExecProgram, WhatItLeftInItsGroupIsEndedWhenItExits) {
  Lines lines;
  const ProgramEnd end =
      oomlab::run_program(shell("sleep 100 >/dev/null 2>&1 & echo $!"), {.grace = 1000ms}, lines);
  EXPECT_EQ(end.exit_code, 0);
  ASSERT_EQ(lines.out.size(), 1U);
  const pid_t left = std::stoi(lines.out.front());
  EXPECT_GE(end.leftovers_ended, 1U);
  EXPECT_TRUE(gone_within(left, 1s));
}

TEST(ExecProgram, IfOomlabIsKilledTheGuardianEndsTheProgramsGroup) {
  const fs::path dir = temp_folder("guardian");
  const fs::path pid_file = dir / "pid";
  const pid_t runner = fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {  // stands for oomlab: runs the program, then is killed
    Lines lines;
    static_cast<void>(oomlab::run_program(
        shell("sleep 100 & echo $! > " + pid_file.string() + "; wait"), {}, lines));
    _exit(0);
  }
  const pid_t program_child = read_pid(pid_file, 5s);
  ASSERT_GT(program_child, 0);
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  EXPECT_TRUE(gone_within(program_child, 5s)) << "nobody ended the program's group";
  fs::remove_all(dir);
}

TEST(ExecProgram, AProgramThatIsNotThereIsAUsageError) {
  Lines lines;
  EXPECT_FALSE(oomlab::find_program("no-such-program-oomlab-xyz"));
  EXPECT_TRUE(oomlab::find_program("sh"));
  const fs::path plain = temp_folder("plain") / "data.txt";
  std::ofstream(plain) << "not a program\n";
  fs::permissions(plain, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(oomlab::find_program(plain.string())) << "not executable";
  fs::remove_all(plain.parent_path());
  try {
    static_cast<void>(
        oomlab::run_program({.argv = {"/no/such/program"}, .out_fd = -1, .err_fd = -1}, {}, lines));
    FAIL() << "no error";
  } catch (const oomlab::Error& e) {
    EXPECT_EQ(e.kind(), oomlab::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("/no/such/program"), std::string::npos) << e.what();
  }
}

TEST(ExecProgram, AVeryLongLineComesInPiecesAndIsCopiedWhole) {
  const fs::path dir = temp_folder("long");
  ProgramSpec spec = shell("head -c 200000 /dev/zero | tr '\\0' x; echo");
  spec.out_copy = dir / "stdout.txt";
  Lines lines;
  static_cast<void>(oomlab::run_program(spec, {}, lines));
  EXPECT_EQ(fs::file_size(dir / "stdout.txt"), 200001U);
  ASSERT_GE(lines.out.size(), 4U);
  for (const std::string& line : lines.out)
    EXPECT_LE(line.size(), 64U * 1024U);
  fs::remove_all(dir);
}

}  // namespace
