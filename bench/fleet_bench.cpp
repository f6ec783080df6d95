// The fleet table at the scale of a fleet (issue 35's target: 50 runners x 20 cells in under a
// second), read from text as `compare --fleet` reads its files, beside its peer: what a fleet did
// without it, 49 two-file compares of neighbouring runners (each read, compared and tabled).
//   fleet/table_50x20       parse 50 matrix.json texts, compare_fleet, the table and the JSON
//   fleet/pairwise_peer     parse the same texts, compare() each runner with the one before it
// The ratio of the two is the cost of one table over the pairwise compares it replaces.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/matrix/fleet.hpp"

namespace {

using nlohmann::json;

constexpr int kRunners = 50;
constexpr int kCells = 20;

// 50 runners' matrix.json texts: 5 GPU models x 10 drivers, 20 cells each, every OOM point
// a little different so that verdicts vary.
std::vector<std::string> fleet_texts() {
  std::ifstream in(std::string(OOMLAB_TEST_DATA) + "/compare/h100_matrix.json");
  const json source = json::parse(in);
  json cell = source["cells"][0];
  cell.erase("spread");
  std::vector<std::string> texts;
  for (int r = 0; r < kRunners; ++r) {
    json doc = source;
    doc["environment"]["device"]["name"] = fmt::format("GPU model {}", r % 5);
    doc["environment"]["driver"] = fmt::format("{}.{}.{:02}", 560 + r / 5, r % 7, r);
    doc["cells"] = json::array();
    for (int c = 0; c < kCells; ++c) {
      json one = cell;
      one["key"]["params"]["block"] = 4096 * (c + 1);
      one["summary"]["oom"]["live_bytes"] =
          (1ULL << 30U) + static_cast<std::uint64_t>(r * c) * 4096;
      doc["cells"].push_back(one);
    }
    texts.push_back(doc.dump());
  }
  return texts;
}

std::vector<oomlab::CompareInput> parsed(const std::vector<std::string>& texts) {
  std::vector<oomlab::CompareInput> inputs;
  for (std::size_t i = 0; i < texts.size(); ++i)
    inputs.push_back(oomlab::parse_compare_input(texts[i], fmt::format("runner{}.json", i)));
  return inputs;
}

void BM_FleetTable(benchmark::State& state) {
  const std::vector<std::string> texts = fleet_texts();
  for (auto _ : state) {
    const oomlab::Fleet fleet = oomlab::compare_fleet(parsed(texts), 0.02);
    benchmark::DoNotOptimize(oomlab::fleet_table(fleet));
    benchmark::DoNotOptimize(oomlab::fleet_json(fleet).dump());
  }
  state.counters["runners"] = kRunners;
  state.counters["cells"] = kCells;
}
BENCHMARK(BM_FleetTable)->Name("fleet/table_50x20")->Unit(benchmark::kMillisecond);

void BM_PairwisePeer(benchmark::State& state) {
  const std::vector<std::string> texts = fleet_texts();
  for (auto _ : state) {
    std::vector<oomlab::CompareInput> inputs = parsed(texts);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      const oomlab::Comparison c = oomlab::compare(inputs[i - 1], inputs[i], 0.02);
      benchmark::DoNotOptimize(oomlab::compare_table(c));
    }
  }
}
BENCHMARK(BM_PairwisePeer)->Name("fleet/pairwise_peer")->Unit(benchmark::kMillisecond);

}  // namespace
