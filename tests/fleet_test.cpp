// A fleet's runners side by side (compare --fleet) and the nightly's baseline for a new driver,
// on matrix fixtures made from tests/data/compare/h100_matrix.json with the environment and the
// OOM points each case needs: several drivers of one GPU, two GPU models, and a program cell
// under two PyTorch versions on one runner.
#include "reports/matrix/fleet.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "oomlab/error.hpp"
#include "reports/matrix/baseline_choice.hpp"
#include "reports/matrix/versions.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json template_matrix() {
  std::ifstream in(testing::test_data_dir() + "/compare/h100_matrix.json");
  json doc = json::parse(in);
  json cells = json::array();
  for (json& cell : doc["cells"]) {
    if (cell["outcome"] != "oom" || cells.size() == 3) continue;
    cell.erase("spread");  // no measured spread: the tolerance alone decides
    cells.push_back(cell);
  }
  doc["cells"] = cells;
  return doc;
}

// One runner's matrix: `gpu` under `driver`, its cells' OOM points scaled by `scale` (1: as the
// template's) for the cells named in `scaled` ("fragmentation/cuda"), all when it is empty.
json runner(const std::string& gpu, const std::string& driver, double scale = 1.0,
            const std::string& scaled = "") {
  json doc = template_matrix();
  doc["environment"]["device"]["name"] = gpu;
  doc["environment"]["driver"] = driver;
  doc["environment"]["cuda_runtime"] = 13000;
  for (json& cell : doc["cells"]) {
    const std::string name =
        cell["scenario"].get<std::string>() + "/" + cell["allocator"].get<std::string>();
    if (!scaled.empty() && name != scaled) continue;
    json& oom = cell["summary"]["oom"];
    oom["live_bytes"] = static_cast<std::uint64_t>(oom["live_bytes"].get<double>() * scale);
    oom["event"] = static_cast<std::uint64_t>(oom["event"].get<double>() * scale);
  }
  return doc;
}

// A program cell: exec:train under `python`, with PyTorch `torch` seen, out of memory at `live`.
json program_cell(const std::string& python, const std::string& torch, std::uint64_t live) {
  json cell = template_matrix()["cells"][0];
  const std::string command = python + " jobs/train.py --steps 50";
  cell["scenario"] = "exec:train";
  cell["allocator"] = "exec";
  cell["key"] = {{"scenario", "exec:train"},
                 {"allocator", "exec"},
                 {"options", json::object()},
                 {"params", {{"command", command}}},
                 {"budget", 4294967296ULL}};
  cell["summary"]["oom"]["live_bytes"] = live;
  cell["summary"]["oom"]["step"] = 12;
  cell["summary"]["program"] = {
      {"command", {"/bin/sh", "-c", command}},
      {"frameworks", {{{"name", "torch"}, {"version", torch}, {"allocator_settings", ""}}}}};
  return cell;
}

CompareInput input_of(const json& doc, const std::string& name) {
  return parse_compare_input(doc.dump(), name);
}

const FleetStep* regression(const Fleet& fleet) {
  const auto it = std::find_if(fleet.steps.begin(), fleet.steps.end(),
                               [](const FleetStep& s) { return is_regression(s.verdict.verdict); });
  return it == fleet.steps.end() ? nullptr : &*it;
}

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

TEST(Versions, DriverComponentsCompareAsNumbers) {
  EXPECT_LT(compare_versions("570.86.15", "580.65.06"), 0);
  EXPECT_LT(compare_versions("580.65.06", "580.159.04"), 0);
  EXPECT_GT(compare_versions("580.159.04", "580.65.06"), 0);
  EXPECT_EQ(compare_versions("580.159.04", "580.159.04"), 0);
  EXPECT_LT(compare_versions("2.9.1", "2.10.0+cu130"), 0);
  EXPECT_LT(compare_versions("580", "580.1"), 0);
}

TEST(Fleet, DriversOfOneGpuAreComparedInVersionOrderAndTheRegressionNamesBoth) {
  // Given newest first: the table still walks 570 -> 580.65 -> 580.159.
  const Fleet fleet =
      compare_fleet({input_of(runner(kH100, "580.159.04", 0.9, "fragmentation/cuda"), "new.json"),
                     input_of(runner(kH100, "570.86.15"), "old.json"),
                     input_of(runner(kH100, "580.65.06"), "mid.json"),
                     input_of(runner("NVIDIA H200", "580.159.04", 0.5), "h200.json")},
                    0.02);
  ASSERT_EQ(fleet.environments.size(), 4U);
  EXPECT_EQ(fleet.environments[0].driver, "570.86.15");
  EXPECT_EQ(fleet.environments[1].driver, "580.65.06");
  EXPECT_EQ(fleet.environments[2].driver, "580.159.04");
  EXPECT_EQ(fleet.environments[3].gpu, "NVIDIA H200");
  EXPECT_EQ(fleet.regressions(), 1U) << fleet_table(fleet);
  const FleetStep* bad = regression(fleet);
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->verdict.verdict, Verdict::earlier_oom);
  const std::string text = fleet_step_text(fleet, *bad);
  EXPECT_NE(text.find("driver 580.65.06 · CUDA 13.0 → driver 580.159.04 · CUDA 13.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(kH100), std::string::npos) << text;
  // The H200 runs out far sooner than any H100, but it is another GPU model: never compared.
  for (const FleetStep& s : fleet.steps) {
    if (s.from) {
      EXPECT_EQ(fleet.environments[*s.from].gpu, fleet.environments[s.to].gpu);
    }
  }
  EXPECT_EQ(fleet.count(Verdict::same), 5U) << fleet_table(fleet);
}

TEST(Fleet, AProgramUnderTwoPytorchVersionsOnOneRunnerIsComparedAcrossThem) {
  json doc = runner(kH100, "580.159.04");
  doc["cells"].push_back(program_cell("/opt/torch211/bin/python", "2.11.0", 900U << 20U));
  doc["cells"].push_back(program_cell("/opt/torch210/bin/python", "2.10.0", 1000U << 20U));
  const Fleet fleet = compare_fleet({input_of(doc, "runner.json")}, 0.02);
  ASSERT_EQ(fleet.rows.size(), 4U) << "three scenario cells and one program";
  const FleetStep* bad = regression(fleet);
  ASSERT_NE(bad, nullptr) << fleet_table(fleet);
  EXPECT_EQ(bad->verdict.verdict, Verdict::earlier_oom);
  const std::string text = fleet_step_text(fleet, *bad);
  EXPECT_NE(text.find("torch 2.10.0 → driver 580.159.04 · CUDA 13.0 · torch 2.11.0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("exec:train @ "), std::string::npos) << text;
}

// A lone `exec` run (a summary.json) has no NAME: two programs are two rows, never compared
// with each other.
TEST(Fleet, LoneProgramRunsAreKeptApartByTheirCommands) {
  const auto run = [](const std::string& command, const std::string& driver) {
    CompareCell cell{.key = {{"scenario", "exec"},
                             {"allocator", "exec"},
                             {"options", json::object()},
                             {"params", {{"command", command}}},
                             {"budget", 1024}},
                     .scenario = "exec",
                     .allocator = "exec",
                     .budget = "1.00 KiB",
                     .outcome = "completed"};
    return CompareInput{.path = command + driver,
                        .kind = "run",
                        .environment = {{"device", {{"name", kH100}}}, {"driver", driver}},
                        .cells = {cell}};
  };
  const Fleet fleet =
      compare_fleet({run("python3 a.py", "570.86.15"), run("python3 b.py", "580.159.04")}, 0.02);
  EXPECT_EQ(fleet.rows.size(), 2U) << fleet_table(fleet);
  // b.py is never judged against a.py: the newer runner only lacks a.py.
  ASSERT_EQ(fleet.steps.size(), 1U) << fleet_table(fleet);
  EXPECT_EQ(fleet.steps[0].verdict.verdict, Verdict::missing);
  EXPECT_EQ(fleet.rows[0].name, "exec python3 a.py @ 1.00 KiB");
}

TEST(Fleet, ACellANewerDriversRunnerLacksIsMissing) {
  json newer = runner(kH100, "580.159.04");
  newer["cells"].erase(newer["cells"].begin());
  const Fleet fleet = compare_fleet(
      {input_of(runner(kH100, "570.86.15"), "old.json"), input_of(newer, "new.json")}, 0.02);
  EXPECT_EQ(fleet.count(Verdict::missing), 1U) << fleet_table(fleet);
  EXPECT_EQ(fleet.regressions(), 0U);
  EXPECT_NE(fleet_incomplete(fleet).find("580.159.04"), std::string::npos);
}

TEST(Fleet, TheSameEnvironmentOnTwoRunnersIsOneColumnAndTheyAreComparedWithEachOther) {
  const Fleet fleet = compare_fleet({input_of(runner(kH100, "580.159.04"), "a.json"),
                                     input_of(runner(kH100, "580.159.04", 1.5), "b.json")},
                                    0.02);
  ASSERT_EQ(fleet.environments.size(), 1U);
  EXPECT_EQ(fleet.environments[0].runners.size(), 2U);
  EXPECT_EQ(fleet.count(Verdict::later_oom), 3U) << fleet_table(fleet);
}

// Baselines as the nightly keeps them, named <gpu>-<driver major>.json, drivers inside.
struct BaselineFolder {
  fs::path folder = testing::fresh_temp_folder("oomlab_fleet_baselines");
  void add(const std::string& name, const std::string& gpu, const std::string& driver) const {
    std::ofstream(folder / name) << runner(gpu, driver).dump();
  }
};

TEST(BaselineChoice, ANewDriverWithoutItsOwnComparesWithTheNearestOlderOfTheSameGpu) {
  const BaselineFolder b;
  b.add("nvidia-h100-80gb-hbm3-560.json", kH100, "560.35.03");
  b.add("nvidia-h100-80gb-hbm3-570.json", kH100, "570.86.15");
  b.add("nvidia-h100-80gb-hbm3-590.json", kH100, "590.10.01");  // newer: never chosen
  b.add("nvidia-h200-575.json", "NVIDIA H200", "575.51.03");    // another GPU model
  const BaselineChoice choice = choose_baseline(b.folder, kH100, "580.159.04");
  ASSERT_TRUE(choice.chosen.has_value());
  EXPECT_EQ(choice.chosen->filename(), "nvidia-h100-80gb-hbm3-570.json");
  EXPECT_EQ(choice.chosen_driver, "570.86.15");
  EXPECT_EQ(choice.own.filename(), "nvidia-h100-80gb-hbm3-580.json");
  EXPECT_TRUE(choice.upgrade());
  EXPECT_NE(baseline_choice_note(choice).find("driver 570.86.15 → 580.159.04"), std::string::npos)
      << baseline_choice_note(choice);
}

TEST(BaselineChoice, ItsOwnFamilysBaselineWinsAndNothingOlderMeansNone) {
  const BaselineFolder b;
  b.add("nvidia-h100-80gb-hbm3-570.json", kH100, "570.86.15");
  b.add("nvidia-h100-80gb-hbm3-580.json", kH100, "580.65.06");
  const BaselineChoice own = choose_baseline(b.folder, kH100, "580.159.04");
  ASSERT_TRUE(own.chosen.has_value());
  EXPECT_EQ(own.chosen->filename(), "nvidia-h100-80gb-hbm3-580.json");
  EXPECT_FALSE(own.upgrade());
  EXPECT_EQ(own.chosen_driver, "580.65.06");
  EXPECT_FALSE(choose_baseline(b.folder, kH100, "560.35.03").chosen.has_value());
  EXPECT_FALSE(choose_baseline(b.folder, "NVIDIA H200", "580.159.04").chosen.has_value());
  EXPECT_FALSE(choose_baseline(b.folder / "none-yet", kH100, "580.159.04").chosen.has_value());
}

TEST(BaselineChoice, ABrokenCandidateIsAnInputErrorNamingIt) {
  const BaselineFolder b;
  std::ofstream(b.folder / "nvidia-h100-80gb-hbm3-570.json") << "{ not json";
  try {
    (void)choose_baseline(b.folder, kH100, "580.159.04");
    FAIL() << "a broken baseline was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("nvidia-h100-80gb-hbm3-570.json"), std::string::npos);
  }
}

TEST(BaselineChoice, TheRunnerIsReadFromInfoJsonOrAMatrix) {
  const BaselineFolder b;
  std::ofstream(b.folder / "info.json")
      << json{{"driver", "580.159.04"}, {"devices", {{{"name", kH100}}}}}.dump();
  const RunnerIdentity info = read_runner_identity(b.folder / "info.json");
  EXPECT_EQ(info.gpu, kH100);
  EXPECT_EQ(info.driver, "580.159.04");
  b.add("matrix.json", "NVIDIA H200", "570.86.15");
  EXPECT_EQ(read_runner_identity(b.folder).driver, "570.86.15");
  EXPECT_EQ(baseline_stem(kH100), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(baseline_stem(""), "no-gpu");
}

}  // namespace
}  // namespace oomlab
