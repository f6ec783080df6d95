#include "test_support.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>

#include "allocators/backends.hpp"
#include "cli/cli.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::testing {

namespace fs = std::filesystem;

namespace {

// ctest runs the tests in parallel, one process each, and the suites name their files in the
// temporary folder by the test alone (some write them while the test list is made, before any
// test runs): each test process gets a folder of its own there, TMPDIR, which
// temp_directory_path and the oomlab processes a test starts both read. It is removed at exit
// unless a test failed (then it stays for a look). Plain buffers: they must outlive every
// object the exit handler could run after.
char g_shared_temp[4096] = {};  // the machine's temporary folder, as it was before
char g_own_temp[4096] = {};     // this process's ("" when it could not be made)
pid_t g_owner = 0;              // the process that made it (a forked child leaves it)
bool g_keep_own_temp = false;

void remove_own_temp() {
  if (g_own_temp[0] == '\0' || ::getpid() != g_owner || g_keep_own_temp) return;
  std::error_code ignored;
  fs::remove_all(g_own_temp, ignored);
}

void copy_path(const fs::path& path, char (&buffer)[4096]) {
  const std::string text = path.string();
  if (text.size() < sizeof buffer) text.copy(buffer, text.size());
}

// Before the suites' static initialisers (priority 101 runs ahead of the default).
__attribute__((constructor(101))) void make_own_temp() {
  std::error_code error;
  const fs::path shared = fs::temp_directory_path(error);
  if (error) return;
  copy_path(shared, g_shared_temp);
  const fs::path own = shared / ("oomlab-tests-" + std::to_string(::getpid()));
  fs::remove_all(own, error);  // a folder a failed process of the same pid kept
  if (!fs::create_directories(own, error)) return;
  copy_path(own, g_own_temp);
  g_owner = ::getpid();
  ::setenv("TMPDIR", g_own_temp, 1);
  std::atexit(remove_own_temp);
}

class KeepTempOnFailure final : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    g_keep_own_temp = !unit.Passed();
  }
};

[[maybe_unused]] const bool kListening = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new KeepTempOnFailure);  // gtest owns it
  return true;
}();

// The machine's temporary folder, shared by every test process.
fs::path shared_temp() {
  return g_shared_temp[0] != '\0' ? fs::path(g_shared_temp) : fs::temp_directory_path();
}

}  // namespace

void hold_the_gpu_for_this_process() {
  // The lock file is in the machine's temporary folder, shared by every user's tests
  // (read-only: any user may open it); the lock goes with the process.
  static const bool held = [] {
    const std::string path = (shared_temp() / "oomlab-tests-gpu.lock").string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    return fd >= 0 && ::flock(fd, LOCK_EX) == 0;
  }();
  static_cast<void>(held);
}

CliRun run_in_process(const std::vector<std::string>& argv) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run_cli(argv, out, err);
  return {.code = code, .out = out.str(), .err = err.str()};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path fresh_temp_folder(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / name;
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

fs::path series_archive(const std::string& tgz) {
  static std::map<std::string, fs::path> unpacked;
  if (const auto it = unpacked.find(tgz); it != unpacked.end()) return it->second;
  const fs::path out = fresh_temp_folder("oomlab_series_" + fs::path(tgz).stem().string());
  const std::string command =
      "tar -xzf '" + test_data_dir() + "/series/" + tgz + "' -C '" + out.string() + "'";
  if (std::system(command.c_str()) != 0) ADD_FAILURE() << "could not unpack " << command;
  return unpacked[tgz] = out;
}

std::string oomlab_binary() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  for (const fs::path& candidate :
       {self.parent_path() / "oomlab", self.parent_path().parent_path() / "oomlab"}) {
    if (fs::exists(candidate)) return candidate.string();
  }
  return OOMLAB_BINARY;
}

std::string test_plugin(const std::string& name) {
  const std::string file = "oomlab_" + name + "_plugin.so";
  const fs::path staged = fs::read_symlink("/proc/self/exe").parent_path() / "plugins" / file;
  if (fs::exists(staged)) return staged.string();
  return (fs::path(OOMLAB_PLUGIN_DIR) / file).string();
}

double metric(const RunResult& result, const std::string& name) {
  for (const auto& [n, v] : result.metrics) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no metric " << name;
  return -1;
}

RunConfig make_run_config(const std::string& scenario, const std::string& allocator,
                          std::uint64_t budget_bytes) {
  RunConfig config;
  config.scenario = scenario;
  config.params = Params(Registry::global().find(scenario)->params);
  config.allocator = find_backend(allocator)->kind;
  config.allocator_options = Params(find_backend(allocator)->options);
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{budget_bytes}};
  return config;
}

}  // namespace oomlab::testing
