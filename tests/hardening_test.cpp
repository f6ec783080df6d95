// Exit paths and load through the real binary, on the sim: --plugin (loaded, run, contained when
// it throws), --timeout (a run that stops; a call that never returns), and the soak
// (--repeat N: a thousand OOMs in one process with nothing left behind). The GPU versions are in
// gpu_hardening_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;
using oomlab::testing::test_plugin;
using json = nlohmann::json;

std::string demo_plugin() {
  return oomlab::testing::test_plugin("demo");
}

fs::path fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("oomlab_hardening_" + name);
  fs::remove_all(dir);
  return dir;
}

json read_json(const fs::path& path) {
  std::ifstream file(path);
  if (!file) return nullptr;
  return json::parse(file);
}

ChildResult oomlab(std::vector<std::string> args,
                   std::chrono::seconds limit = std::chrono::seconds(120)) {
  args.insert(args.begin(), oomlab_binary());
  return run_child(args, {.timeout = limit});
}

// A soak in a child process. AddressSanitizer holds freed memory in quarantine (256 MiB) to
// catch use after free, so resident memory grows by design there; the child runs without the
// quarantine, and its resident memory means what it means elsewhere. (LeakSanitizer still checks
// the process at exit.)
#if defined(__SANITIZE_ADDRESS__)
#define OOMLAB_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang spells it this way
#define OOMLAB_TEST_ASAN 1
#endif
#endif

ChildResult soak_child(std::vector<std::string> args) {
#if defined(OOMLAB_TEST_ASAN)
  const char* before = std::getenv("ASAN_OPTIONS");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("ASAN_OPTIONS",
           (saved + ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0").c_str(), 1);
#endif
  ChildResult r = oomlab(std::move(args));
#if defined(OOMLAB_TEST_ASAN)
  ::setenv("ASAN_OPTIONS", saved.c_str(), 1);
#endif
  return r;
}

// An RMM log of `rows` rows: up to 512 blocks live, 4 KiB to 4 MiB each, all freed at the end.
fs::path rmm_log(const std::string& name, std::size_t rows) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_hardening_" + name + ".csv");
  std::ofstream out(path);
  out << "Thread,Time,Action,Pointer,Size,Stream\n";
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
  std::uint64_t seed = 12345;
  const auto next = [&seed] {
    return seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  };
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t left = rows - i;
    const bool free = !live.empty() && (live.size() >= left || live.size() >= 512 || next() >> 63U);
    const std::string time =
        fmt::format("{:02}:{:02}:{:02}.{:06}", i / 3'600'000'000ULL % 24, i / 60'000'000ULL % 60,
                    i / 1'000'000ULL % 60, i % 1'000'000ULL);
    if (free) {
      const std::size_t k = (next() >> 33U) % live.size();
      out << fmt::format("1,{},free,{:#x},{},0\n", time, live[k].first, live[k].second);
      live[k] = live.back();
      live.pop_back();
    } else {
      const std::uint64_t bytes = 4096ULL << ((next() >> 40U) % 11U);
      const std::uint64_t address = 0x7f0000000000ULL + (i << 23U);
      out << fmt::format("1,{},allocate,{:#x},{},0\n", time, address, bytes);
      live.emplace_back(address, bytes);
    }
  }
  return path;
}

TEST(Plugins, AScenarioFromAPluginIsListedAndRuns) {
  const ChildResult list = oomlab({"list", "--plugin", demo_plugin()});
  ASSERT_EQ(list.exit_code, 0) << list.err_tail;
  EXPECT_NE(list.out.find("plugin-demo"), std::string::npos) << list.out;
  const fs::path out = fresh("plugin_demo");
  const ChildResult run = oomlab({"run", "plugin-demo", "--plugin=" + demo_plugin(), "-a", "sim",
                                  "--budget", "64MiB", "--quiet", "--out", out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err_tail;
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["scenario"]["name"], "plugin-demo");
  EXPECT_EQ(s["outcome"], "oom");
  EXPECT_EQ(s["oom"]["live_bytes"], 64U << 20U);
}

TEST(Plugins, APluginThatThrowsFromRunIsAnErrorWithEverythingFreedAndItsLastEvents) {
  const fs::path out = fresh("plugin_throws");
  const ChildResult run = oomlab({"run", "plugin-throws", "--plugin", demo_plugin(), "-a", "sim",
                                  "--budget", "64MiB", "--quiet", "--out", out.string()});
  EXPECT_EQ(run.signal, 0);
  EXPECT_EQ(run.exit_code, 1) << run.err_tail;
  EXPECT_NE(run.err_tail.find("plugin-throws: a bug in the plugin"), std::string::npos)
      << run.err_tail;
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null()) << "the record is written";
  EXPECT_EQ(s["outcome"], "error");
  EXPECT_NE(s["error"].get<std::string>().find("a bug in the plugin"), std::string::npos);
  EXPECT_EQ(s["counts"]["allocations"], 4);
  EXPECT_EQ(s["counts"]["frees"], 4) << "the harness freed what the plugin held";
  ASSERT_TRUE(s.contains("last_events"));
  ASSERT_EQ(s["last_events"].size(), 4U);
  EXPECT_EQ(s["last_events"].back()["op"], "alloc");
  EXPECT_EQ(s["last_events"].back()["seq"], 3);
}

TEST(Plugins, MatrixCellsGetThePlugin) {
  const fs::path out = fresh("plugin_matrix");
  const ChildResult m =
      oomlab({"matrix", "-s", "plugin-demo,fragmentation", "-a", "sim", "--budget", "64MiB",
              "--plugin", demo_plugin(), "--out", out.string(), "--quiet"});
  ASSERT_EQ(m.exit_code, 0) << m.err_tail << m.out;
  const json matrix = read_json(out / "matrix.json");
  ASSERT_EQ(matrix["cells"].size(), 2U);
  for (const json& cell : matrix["cells"])
    EXPECT_EQ(cell["outcome"], "oom") << cell.dump();
}

TEST(Timeout, ARunPastItsTimeoutStopsFreesEverythingAndSaysTimeout) {
  const fs::path out = fresh("timeout");
  // 64 GiB of 4 KiB blocks on the sim: millions of events, far more than 50 ms.
  const ChildResult r =
      oomlab({"run", "fragmentation", "-a", "sim", "--budget", "64GiB", "-p", "block=4KiB",
              "--timeout", "0.05", "--quiet", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 4) << r.err_tail;
  EXPECT_LT(r.seconds, 10.0);
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["outcome"], "timeout");
  EXPECT_GT(s["counts"]["allocations"].get<std::uint64_t>(), 0U);
  EXPECT_EQ(s["counts"]["allocations"], s["counts"]["frees"]);
  EXPECT_TRUE(s.contains("last_events"));
}

TEST(Timeout, ACallThatNeverReturnsEndsTheProcessWithARecord) {
  const fs::path out = fresh("hang");
  const ChildResult r =
      oomlab({"run", "test-hang", "--plugin", test_plugin("faults"), "-a", "sim", "--budget",
              "64MiB", "--timeout", "1", "--quiet", "--out", out.string()},
             std::chrono::seconds(30));
  ASSERT_FALSE(r.timed_out) << "the watchdog did not end it";
  EXPECT_EQ(r.exit_code, 4) << r.err_tail;
  EXPECT_LT(r.seconds, 10.0) << "timeout 1 s + grace 1 s";
  const json s = read_json(out / "summary.json");
  ASSERT_FALSE(s.is_null()) << "the record is written before the process ends";
  EXPECT_EQ(s["outcome"], "timeout");
  EXPECT_NE(s["error"].get<std::string>().find("never returned"), std::string::npos) << s["error"];
  EXPECT_EQ(s["events"], 4) << "test-hang allocates four blocks, then hangs";
}

TEST(Soak, AThousandOomsInOneProcessLeaveNothingBehind) {
  const fs::path out = fresh("soak");
  const ChildResult r = soak_child({"run", "fragmentation", "-a", "sim", "--budget", "64MiB", "-p",
                                    "block=1MiB", "--repeat", "1000", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err_tail << r.out;
  EXPECT_NE(r.out.find("everything came back after every cycle"), std::string::npos) << r.out;
  const json s = read_json(out / "soak.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["schema"], "oomlab.soak.v1");
  EXPECT_EQ(s["cycles"], 1000);
  EXPECT_EQ(s["ooms"], 1000);
  EXPECT_EQ(s["unbalanced_cycles"], 0);
  EXPECT_TRUE(s["passed"].get<bool>());
  EXPECT_LE(s["rss_growth_bytes"].get<std::int64_t>(), 4 << 20);
  ASSERT_EQ(s["per_cycle"].size(), 1000U);
  // The same OOM point every cycle: nothing of one cycle reaches the next.
  EXPECT_EQ(s["oom_live_bytes"]["min"], s["oom_live_bytes"]["max"]);
  EXPECT_TRUE(fs::exists(out / "summary.json"));
}

TEST(Soak, AReplayThatFreesEverythingPassesItsSoak) {
  // The trace is read once for the whole soak (a one-time cost, not a leak), and every cycle's
  // blocks come back: resident memory stays where the first cycle left it.
  const fs::path log = rmm_log("soak_replay", 300'000);
  const fs::path out = fresh("soak_replay");
  const ChildResult r = soak_child({"run", "replay", "--trace", log.string(), "-a", "sim",
                                    "--budget", "8GiB", "--repeat", "4", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err_tail << r.out;
  const json s = read_json(out / "soak.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["cycles"], 4);
  EXPECT_EQ(s["ooms"], 0);
  EXPECT_EQ(s["unbalanced_cycles"], 0);
  EXPECT_TRUE(s["passed"].get<bool>()) << s["problems"];
  EXPECT_LE(s["rss_growth_bytes"].get<std::int64_t>(), 4 << 20);
  const json last = read_json(out / "summary.json");
  EXPECT_EQ(last["metrics"]["events_replayed"], 300'000) << last["metrics"];
  EXPECT_EQ(last["metrics"]["still_live_blocks"], 0);
}

TEST(Soak, AnInterruptedSoakStopsAtOnce) {
  const fs::path out = fresh("soak_timeout");
  // Every cycle times out: the soak stops after the first.
  const ChildResult r =
      oomlab({"run", "fragmentation", "-a", "sim", "--budget", "64GiB", "-p", "block=4KiB",
              "--timeout", "0.02", "--repeat", "50", "--quiet", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 4) << r.err_tail;
  const json s = read_json(out / "soak.json");
  ASSERT_FALSE(s.is_null());
  EXPECT_EQ(s["cycles"], 1);
  EXPECT_TRUE(s["stopped_early"].get<bool>());
}

}  // namespace
}  // namespace oomlab::cli
