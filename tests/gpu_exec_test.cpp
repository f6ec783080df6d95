// `oomlab exec` on a real device, through the real binary, with a stand-in CUDA program
// (oomlab_cuda_hog): over its budget it runs out of memory where a card of that size would, and
// the record shows it; under it it completes with its peak sampled; killed, oomlab leaves
// nothing behind (the guardian ends the program, the driver frees the ballast); and frontier
// exec finds the program's need plus its CUDA context.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/child_process.hpp"
#include "device/device.hpp"
#include "device/nvml.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;
using json = nlohmann::json;
using oomlab::testing::oomlab_binary;

std::string hog() {
  const fs::path staged = fs::read_symlink("/proc/self/exe").parent_path() / "oomlab_cuda_hog";
  return fs::exists(staged) ? staged.string() : std::string(OOMLAB_CUDA_HOG);
}

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("oomlab_gpu_exec_" + name);
  fs::remove_all(dir);
  return dir;
}

ChildResult oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), oomlab_binary());
  return run_child(args, {.timeout = std::chrono::seconds(240)});
}

// Device 0's free memory as NVML reads it (no context of this process's own in the figure).
std::uint64_t nvml_free() {
  const Nvml nvml;
  const Environment env = probe_environment();
  return nvml.memory(env.devices.at(0).uuid).value_or(Nvml::Memory{}).free;
}

class GpuExec : public ::testing::Test {
 protected:
  void SetUp() override { OOMLAB_REQUIRE_GPU(); }
};

TEST_F(GpuExec, AProgramOverItsBudgetRunsOutOfMemoryAsTheCardWouldSay) {
  const fs::path out = fresh("oom");
  const ChildResult r = oomlab({"exec", "--budget", "1GiB", "--out", out.string(), "--json", "-",
                                "--", hog(), std::to_string(2_GiB)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  ASSERT_FALSE(r.out.empty()) << r.err_tail;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["outcome"], "oom") << r.err_tail;
  EXPECT_EQ(s["oom"]["program"]["framework"], "CUDA runtime") << s["oom"].dump();
  EXPECT_EQ(s["budget_bytes"], 1_GiB);
  EXPECT_TRUE(s["peak"].is_null()) << "a program run has no peak of oomlab's allocator";
  EXPECT_LE(s["program"]["peak_used_bytes"].get<std::uint64_t>(), 1_GiB + 2_MiB)
      << "the program took no more than the budget from the device";
  EXPECT_GT(s["program"]["peak_bytes"].get<std::uint64_t>(), 512_MiB);
  EXPECT_LE(s["cleanup"]["difference_bytes"].get<std::int64_t>(), 2 * 1024 * 1024);
  std::ifstream events(out / "events.csv");
  std::string text((std::istreambuf_iterator<char>(events)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",sample,"), std::string::npos);
  EXPECT_NE(text.find(",oom,"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "stderr.txt"));
}

TEST_F(GpuExec, AProgramUnderItsBudgetCompletesWithItsPeakSampled) {
  const ChildResult r = oomlab({"exec", "--budget", "2GiB", "--no-out", "--json", "-", "--", hog(),
                                std::to_string(512_MiB), "0.3"});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  ASSERT_FALSE(r.out.empty()) << r.err_tail;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["outcome"], "completed") << r.err_tail;
  const auto peak = s["program"]["peak_bytes"].get<std::uint64_t>();
  EXPECT_GE(peak, 512_MiB) << "its blocks and its context";
  EXPECT_LT(peak, 2_GiB);
  EXPECT_GT(s["program"]["first_bytes"].get<std::uint64_t>(), 0U);
  EXPECT_GT(s["program"]["samples"].get<std::uint64_t>(), 10U);
  EXPECT_LE(s["cleanup"]["difference_bytes"].get<std::int64_t>(), 2 * 1024 * 1024);
}

// `exec --junit -` wrote a file named "-": the XML goes alone to stdout, and the program's own
// output (the hog's "holding ... bytes") goes on to stderr with the summary.
TEST_F(GpuExec, JunitDashIsTheXmlAloneOnStdoutAndTheProgramsOutputGoesToStderr) {
  const fs::path cwd = fresh("junit_dash");
  fs::create_directories(cwd);
  const ChildResult r =
      run_child({"/usr/bin/env", "-C", cwd.string(), oomlab_binary(), "exec", "--budget", "2GiB",
                 "--no-out", "--junit", "-", "--", hog(), std::to_string(512_MiB), "0.3"},
                {.timeout = std::chrono::seconds(240)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  EXPECT_EQ(r.out.rfind("<?xml", 0), 0U) << r.out;
  EXPECT_NE(r.out.find("<testcase classname=\"oomlab.run.exec\" name=\"exec\""), std::string::npos)
      << r.out;
  EXPECT_TRUE(r.out.ends_with("</testsuites>\n")) << r.out;
  EXPECT_NE(r.err_tail.find("holding "), std::string::npos) << r.err_tail;
  EXPECT_FALSE(fs::exists(cwd / "-"));
}

TEST_F(GpuExec, OomlabKilledLeavesNothingBehind) {
  const std::uint64_t before = nvml_free();
  const fs::path dir = fresh("killed");
  fs::create_directories(dir);
  const fs::path log = dir / "out.txt";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::freopen(log.c_str(), "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    const std::string binary = oomlab_binary();
    const std::string bytes = std::to_string(1_GiB);
    const std::string program = hog();
    execl(binary.c_str(), "oomlab", "exec", "--budget", "4GiB", "--no-out", "--", program.c_str(),
          bytes.c_str(), "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_t program = 0;
  for (int i = 0; i < 300 && program == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      if (const auto at = line.find("(pid "); at != std::string::npos)
        program = std::stoi(line.substr(at + 5));
    }
  }
  ASSERT_GT(program, 0) << "the program never said it held its memory";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::uint64_t after = 0;
  for (int i = 0; i < 100; ++i) {  // the guardian's SIGTERM, then the driver's release
    after = nvml_free();
    if (after + 2_MiB >= before && ::kill(program, 0) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(::kill(program, 0), 0) << "the program outlived oomlab";
  EXPECT_GE(after + 2_MiB, before) << "free memory did not come back: " << before - after;
  fs::remove_all(dir);
}

TEST_F(GpuExec, TheFrontierOfAProgramIsWhatItTakesPlusItsContext) {
  const ChildResult r = oomlab({"frontier", "exec", "--budget", "4GiB", "--resolution", "32MiB",
                                "--json", "-", "--", hog(), std::to_string(1_GiB), "0.3"});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err_tail;
  ASSERT_FALSE(r.out.empty()) << r.err_tail;
  const json f = json::parse(r.out);
  const auto frontier = f["frontier_bytes"].get<std::uint64_t>();
  EXPECT_GT(frontier, 1_GiB) << "its blocks and its CUDA context";
  EXPECT_LT(frontier, 1_GiB + 1_GiB) << "a context is some hundreds of MiB";
  EXPECT_EQ(f["failing_bytes"].get<std::uint64_t>() + 32_MiB, frontier);
  EXPECT_LE(f["trials"].size(), 6U) << "the top, what it took, a step or two: " << r.err_tail;
  EXPECT_EQ(f["runs"].get<std::size_t>(), f["trials"].size());
  EXPECT_TRUE(f["predicted_bytes"].is_null()) << "a CUDA program leaves no PyTorch snapshot";
  EXPECT_EQ(f["trials"][1]["role"], "probe");
}

}  // namespace
}  // namespace oomlab::cli
