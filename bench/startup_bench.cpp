// Start-up, end to end through the real binary (spawned, waited for; output to /dev/null):
//   startup/list          `oomlab list`                                 target < 20 ms
//   startup/tiny_sim_run  `oomlab run fragmentation -a sim --budget 64MiB --quiet --out DIR`
//                         (a whole run: parse, plan, run, events.csv, summary.json) < 100 ms
// The binary is found beside this program's folder (a staged bench/ folder), else the build's.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace {

namespace fs = std::filesystem;

std::string oomlab_binary() {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path staged = self.parent_path().parent_path() / "oomlab";
  return fs::exists(staged) ? staged.string() : std::string(OOMLAB_BINARY);
}

// Runs argv with stdin, stdout and stderr on /dev/null; its exit code, or -1.
int spawn_and_wait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const int fd : {0, 1, 2})
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void startup(benchmark::State& state, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {oomlab_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const fs::path out = fs::temp_directory_path() / "oomlab_bench_startup";
  for (std::string& a : argv) {
    if (a == "OUT") a = out.string();
  }
  for (auto _ : state) {
    fs::remove_all(out);
    const auto start = std::chrono::steady_clock::now();
    const int code = spawn_and_wait(argv);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (code != 0) return state.SkipWithError(("exit code " + std::to_string(code)).c_str());
  }
  fs::remove_all(out);
}

const bool registered = [] {
  benchmark::RegisterBenchmark("startup/list", startup, std::vector<std::string>{"list"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(
      "startup/tiny_sim_run", startup,
      std::vector<std::string>{"run", "fragmentation", "-a", "sim", "--budget", "64MiB", "--quiet",
                               "--out", "OUT"})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
