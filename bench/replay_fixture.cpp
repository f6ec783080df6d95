// The replay benchmarks' synthetic RMM log and replay configuration (replay_fixture.hpp).
#include "replay_fixture.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/rng.hpp"
#include "oomlab/units.hpp"

namespace oomlab::bench {

namespace fs = std::filesystem;
using namespace oomlab::literals;

const fs::path& synthetic_rmm_log(std::size_t events) {
  static const fs::path path = [events] {
    const fs::path p =
        fs::temp_directory_path() / ("oomlab_bench_rmm_" + std::to_string(events) + ".csv");
    std::ofstream out(p);
    out << "Thread,Time,Action,Pointer,Size,Stream\n";
    Rng rng(7);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> live;
    std::uint64_t next_address = 0x7f0000000000;
    for (std::size_t i = 0; i < events; ++i) {
      const std::uint64_t us = i;
      char time[32];
      std::snprintf(time, sizeof time, "%02llu:%02llu:%02llu.%06llu", (us / 3'600'000'000ULL) % 24,
                    (us / 60'000'000ULL) % 60, (us / 1'000'000ULL) % 60, us % 1'000'000ULL);
      if (!live.empty() && (live.size() >= 2048 || rng.chance(0.5))) {
        const std::size_t k = rng.uniform(0, live.size() - 1);
        out << "1," << time << ",free,0x" << std::hex << live[k].first << std::dec << ','
            << live[k].second << ",0\n";
        live[k] = live.back();
        live.pop_back();
      } else {
        const auto size = static_cast<std::uint64_t>(std::exp2(8.0 + rng.unit() * 12.0));
        out << "1," << time << ",allocate,0x" << std::hex << next_address << std::dec << ',' << size
            << ",0\n";
        live.emplace_back(next_address, size);
        next_address += 1_MiB;
      }
    }
    return p;
  }();
  return path;
}

RunConfig replay_config(const char* allocator, BudgetRequest budget) {
  RunConfig config;
  config.scenario = "replay";
  config.params = Params(Registry::global().find("replay")->params);
  config.params.set("trace", synthetic_rmm_log(kReplayEvents).string());
  config.allocator = find_backend(allocator)->kind;
  config.allocator_options = Params(find_backend(allocator)->options);
  config.budget = budget;
  config.verify = VerifyMode::off;  // the bare loops write nothing either
  return config;
}

}  // namespace oomlab::bench
