// Host memory stays bounded whatever the run length: a whole run (runner, scenario API,
// recorder, event log, events.csv written by the writer thread) of N events on the sim, with a
// thousand blocks live throughout, and the process's peak resident memory read from the kernel.
//   run_memory/<events>   counters: peak_rss_MiB (VmHWM of the process, the target's figure),
//                         rss_growth_MiB (the peak over what was resident before the run),
//                         bytes_per_event (that growth over the events), events_per_second
// events.csv goes to /dev/null: the writer formats every row as it would for a file, and the
// page cache (which is not the process's memory) stays out of the figure.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "oomlab/registry.hpp"
#include "run/runner.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// bench-churn: `events` allocate/free events with `live` 4 KiB blocks held at random places.
class BenchChurn final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "bench-churn"; }
  [[nodiscard]] std::string_view summary() const override {
    return "benchmark only: allocate/free pairs at random places among a fixed live set";
  }
  [[nodiscard]] ParamSpec params() const override {
    return {{.name = "events",
             .type = ParamType::integer,
             .default_value = std::int64_t{1'000'000},
             .help = "events to make"},
            {.name = "live",
             .type = ParamType::integer,
             .default_value = std::int64_t{1'000},
             .help = "blocks held throughout"}};
  }
  void run(RunContext& ctx) override {
    const auto events = static_cast<std::uint64_t>(ctx.params().integer("events"));
    const auto live = static_cast<std::size_t>(ctx.params().integer("live"));
    ctx.phase("churn");
    std::vector<Block> blocks;
    blocks.reserve(live);
    for (std::size_t i = 0; i < live; ++i)
      blocks.push_back(ctx.allocate(4_KiB, "held"));
    for (std::uint64_t made = live; made + 2 <= events; made += 2) {
      Block& b = blocks[ctx.rng().uniform(0, live - 1)];
      ctx.release(b);
      b = ctx.allocate(4_KiB, "churn");
      if ((made & 0xFFFFFU) == 0) ctx.step(made >> 20U);  // a step now and then, as runs do
    }
  }
};
OOMLAB_REGISTER_SCENARIO(BenchChurn);

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"), or -1.
double status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  }
  return -1;
}

void run_memory(benchmark::State& state) {
  const std::int64_t events = state.range(0);
  RunConfig config;
  config.scenario = "bench-churn";
  config.params = Params(Registry::global().find("bench-churn")->params);
  config.params.set("events", events);
  config.allocator = BackendKind::sim;
  config.allocator_options = Params(backend_info(BackendKind::sim).options);
  config.budget = {.kind = BudgetRequest::Kind::bytes, .bytes = Bytes{1_GiB}};
  config.events_csv = "/dev/null";
  double rss_before = 0;
  double seconds = 0;
  for (auto _ : state) {
    rss_before = status_kib("VmRSS");
    std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
    const RunResult r = run_scenario(config);
    if (r.outcome != Outcome::completed) return state.SkipWithError(r.error_message.c_str());
    seconds = r.duration_ms / 1e3;
  }
  const double peak = status_kib("VmHWM");
  state.counters["peak_rss_MiB"] = peak / 1024;
  state.counters["rss_growth_MiB"] = (peak - rss_before) / 1024;
  state.counters["bytes_per_event"] = (peak - rss_before) * 1024 / static_cast<double>(events);
  state.counters["events_per_second"] = static_cast<double>(events) / seconds;
}
BENCHMARK(run_memory)
    ->Name("run_memory")
    ->Arg(100'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace oomlab
