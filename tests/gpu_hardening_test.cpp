// Exit paths and load on a real device, through the real binary (a sticky error ruins the
// process's CUDA context, so each case is a process of its own): a sticky CUDA error is reported
// by name with the last events; --timeout stops and frees; a soak of OOM-and-recover cycles gives
// the device all its memory back each time; several oomlab processes on one GPU keep their own
// records, each naming the others' pressure as external-pressure.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/child_process.hpp"
#include "device/cuda_check.hpp"
#include "oomlab/error.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;
using json = nlohmann::json;

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("oomlab_gpu_hardening_" + name);
  fs::remove_all(dir);
  return dir;
}

json read_json(const fs::path& path) {
  std::ifstream file(path);
  if (!file) return nullptr;
  return json::parse(file);
}

ChildResult oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), oomlab_binary());
  return run_child(args, {.timeout = std::chrono::seconds(240)});
}

class GpuHardening : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { OOMLAB_REQUIRE_GPU(); }
};

TEST_P(GpuHardening, AStickyCudaErrorIsReportedByNameWithTheLastEvents) {
  const fs::path out = fresh("sticky_" + GetParam());
  const ChildResult r =
      oomlab({"run", "test-sticky", "--plugin", oomlab::testing::test_plugin("faults"), "-a",
              GetParam(), "--budget", "1GiB", "--quiet", "--out", out.string()});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0) << signal_name(r.signal) << "\n" << r.err_tail;
  EXPECT_EQ(r.exit_code, 1) << r.err_tail;
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null()) << "the record is written\n" << r.err_tail;
  EXPECT_EQ(s["outcome"], "error");
  const std::string error = s["error"].get<std::string>();
  EXPECT_NE(error.find("cudaErrorIllegalAddress"), std::string::npos) << error;
  ASSERT_TRUE(s.contains("last_events")) << s.dump(2);
  EXPECT_FALSE(s["last_events"].empty());
}

TEST_P(GpuHardening, ARunPastItsTimeoutFreesEverything) {
  const fs::path out = fresh("timeout_" + GetParam());
  const ChildResult r =
      oomlab({"run", "fragmentation", "-a", GetParam(), "--budget", "8GiB", "-p", "block=4KiB",
              "--timeout", "0.2", "--quiet", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 4) << r.err_tail;
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["outcome"], "timeout");
  EXPECT_EQ(s["counts"]["allocations"], s["counts"]["frees"]);
  EXPECT_LE(s["cleanup"]["difference_bytes"].get<std::int64_t>(), 2 << 20) << s["cleanup"];
}

TEST_P(GpuHardening, ASoakOfOomCyclesGivesTheDeviceBackEveryTime) {
  const fs::path out = fresh("soak_" + GetParam());
  const ChildResult r =
      oomlab({"run", "fragmentation", "-a", GetParam(), "--budget", "256MiB", "-p", "block=1MiB",
              "--verify", "off", "--no-probe", "--repeat", "50", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err_tail << r.out;
  const json s = read_json(out / "soak.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["ooms"], 50);
  EXPECT_EQ(s["unbalanced_cycles"], 0);
  EXPECT_LE(s["worst_device_shortfall_bytes"].get<std::int64_t>(), 2 << 20);
  EXPECT_LE(s["rss_growth_bytes"].get<std::int64_t>(), 4 << 20);
  for (const json& c : s["per_cycle"])
    ASSERT_FALSE(c["device_free_after"].is_null());
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuHardening, ::testing::Values("cuda", "async"),
                         [](const auto& param_info) { return param_info.param; });

// Three processes at once, each with its own budget: every one ends in OOM with its record;
// what the others took shows as external-pressure, never as a crash, an error or a leak.
TEST(GpuSharedDevice, SeveralProcessesKeepTheirOwnRecords) {
  OOMLAB_REQUIRE_GPU();
  const fs::path root = fresh("shared");
  fs::create_directories(root);
  constexpr int kProcesses = 3;
  std::vector<std::thread> threads;
  std::vector<ChildResult> results(kProcesses);
  for (int i = 0; i < kProcesses; ++i) {
    threads.emplace_back([i, &root, &results] {
      results[i] =
          oomlab({"run", "leak", "-a", "cuda", "--budget", "2GiB", "-p", "leak=8MiB", "--seed",
                  std::to_string(i + 1), "--quiet", "--out", (root / std::to_string(i)).string()});
    });
  }
  for (std::thread& t : threads)
    t.join();
  const std::set<std::string> causes_allowed = {"leak", "capacity", "fragmentation",
                                                "external-pressure", "transient"};
  for (int i = 0; i < kProcesses; ++i) {
    SCOPED_TRACE("process " + std::to_string(i));
    EXPECT_EQ(results[i].signal, 0) << results[i].err_tail;
    EXPECT_EQ(results[i].exit_code, 0) << results[i].err_tail;
    const json s = read_json(root / std::to_string(i) / "summary.json");
    ASSERT_FALSE(s.is_null());
    EXPECT_EQ(s["outcome"], "oom") << s["error"];
    EXPECT_EQ(s["integrity"]["corrupted"], 0);
    EXPECT_EQ(s["counts"]["allocations"], s["counts"]["frees"]);
    const std::string cause = s["oom"]["cause"].get<std::string>();
    EXPECT_TRUE(causes_allowed.contains(cause)) << cause;
    // Below its budget's worth of live memory, the OOM must be blamed on the others.
    const auto live = s["oom"]["live_bytes"].get<std::uint64_t>();
    const auto budget = s["budget_bytes"].get<std::uint64_t>();
    if (live + (64U << 20U) < budget) {
      EXPECT_EQ(cause, "external-pressure") << s["oom"].dump(2);
    }
  }
}

}  // namespace
}  // namespace oomlab::cli

namespace oomlab {
namespace {

// One mapping from a CUDA status to what it means to an allocator, and a typed "refused for
// memory" on the error a failed CUDA call throws (the ballast retries only on that): no device
// needed, the statuses are CUDA's own values.
TEST(CudaStatus, OnlyMemoryAllocationIsAnOutOfMemory) {
  EXPECT_EQ(alloc_status(cudaSuccess), AllocStatus::ok);
  EXPECT_EQ(alloc_status(cudaErrorMemoryAllocation), AllocStatus::out_of_memory);
  EXPECT_EQ(alloc_status(cudaErrorInvalidValue), AllocStatus::error);
  EXPECT_EQ(alloc_status(cudaErrorIllegalAddress), AllocStatus::error);
  const auto thrown = [](cudaError_t status) {
    try {
      detail::throw_cuda_error(status, "cudaMalloc(&ballast, bytes)", __FILE__, __LINE__);
    } catch (const Error& e) {
      return e.out_of_memory();
    }
    ADD_FAILURE() << "nothing thrown";
    return false;
  };
  EXPECT_TRUE(thrown(cudaErrorMemoryAllocation));
  EXPECT_FALSE(thrown(cudaErrorInvalidValue));
}

}  // namespace
}  // namespace oomlab
