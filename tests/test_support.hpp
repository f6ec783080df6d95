// Shared by the suites: GPU detection that skips visibly, and small run helpers.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "run/runner.hpp"

namespace oomlab::testing {

// Holds the GPU for the rest of this process. ctest runs the tests in parallel, one process each;
// GPU tests size ballasts from the device's free memory and measure it before and after, so two
// at once would disturb each other's figures: the first that finds a device waits here for the
// others' processes to end.
void hold_the_gpu_for_this_process();

// Whether a CUDA device is usable here; `why` says why not. When one is, this process holds the
// GPU from now on (above).
inline bool cuda_device_present(std::string* why) {
  static const Environment env = probe_environment();
  if (why != nullptr) *why = env.cuda_problem;
  if (env.devices.empty()) return false;
  hold_the_gpu_for_this_process();
  return true;
}

// `oomlab` run in-process (cli::run_cli) on `argv` (its first element the program's name): its
// exit code and what it wrote to each stream.
struct CliRun {
  int code = 0;
  std::string out;
  std::string err;
};
CliRun run_in_process(const std::vector<std::string>& argv);

// A file's whole content (empty when it cannot be read).
std::string read_text(const std::filesystem::path& path);

// A new, empty folder `name` in this test process's temporary folder (emptied when it was there).
std::filesystem::path fresh_temp_folder(const std::string& name);

// tests/data/series/`archive` (series.tgz, capped.tgz: snapshot series of real programs) unpacked
// into a fresh temporary folder `name`; a test failure when it cannot be.
std::filesystem::path unpacked_series(const std::string& archive, const std::string& name);

// tests/data: $OOMLAB_TEST_DATA when set (a copy of the tree elsewhere, as on the GPU machine),
// else the source tree these tests were built from.
inline std::string test_data_dir() {
  if (const char* dir = std::getenv("OOMLAB_TEST_DATA"); dir != nullptr && *dir != '\0') return dir;
  return OOMLAB_TEST_DATA;
}

// The oomlab binary: beside this test binary (a staged folder such as .gpu/), else the build
// tree's.
std::string oomlab_binary();

// tests/plugins/oomlab_<name>_plugin.so: in plugins/ beside this test binary (staged), else the
// build tree's.
std::string test_plugin(const std::string& name);

// The run's metric `name`; a test failure (and -1) when the run has none.
double metric(const RunResult& result, const std::string& name);

// A complete RunConfig for `scenario` on `allocator` with defaults for everything else.
RunConfig make_run_config(const std::string& scenario, const std::string& allocator,
                          std::uint64_t budget_bytes);

}  // namespace oomlab::testing

// Skips the test, saying why, when no CUDA device can be used.
#define OOMLAB_REQUIRE_GPU()                                         \
  do {                                                               \
    std::string oomlab_why_;                                         \
    if (!::oomlab::testing::cuda_device_present(&oomlab_why_)) {     \
      GTEST_SKIP() << "needs a CUDA device (" << oomlab_why_ << ")"; \
    }                                                                \
  } while (0)
