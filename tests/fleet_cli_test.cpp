// `oomlab compare --fleet` and `--pick-baseline` through the command line: exit codes (1 a
// regression between versions, 6 a cell missing from a newer one, 2 bad input), the JSON's
// environments and cells, the Markdown job summary leading with the answer, JUnit; and the
// two-file compare naming a driver upgrade and a program's PyTorch versions.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

json template_matrix() {
  std::ifstream in(testing::test_data_dir() + "/compare/h100_matrix.json");
  json doc = json::parse(in);
  json cells = json::array();
  for (json& cell : doc["cells"]) {
    if (cell["outcome"] != "oom" || cells.size() == 2) continue;
    cell.erase("spread");
    cells.push_back(cell);
  }
  doc["cells"] = cells;
  return doc;
}

// A runner's matrix.json in `folder/name`: `gpu` under `driver`, every OOM point times `scale`.
std::string write_runner(const fs::path& folder, const std::string& name, const std::string& gpu,
                         const std::string& driver, double scale = 1.0) {
  json doc = template_matrix();
  doc["environment"]["device"]["name"] = gpu;
  doc["environment"]["driver"] = driver;
  doc["environment"]["cuda_runtime"] = 13000;
  for (json& cell : doc["cells"]) {
    json& oom = cell["summary"]["oom"];
    oom["live_bytes"] = static_cast<std::uint64_t>(oom["live_bytes"].get<double>() * scale);
    oom["event"] = static_cast<std::uint64_t>(oom["event"].get<double>() * scale);
  }
  std::ofstream(folder / name) << doc.dump();
  return (folder / name).string();
}

testing::CliRun oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), {"oomlab", "compare"});
  return testing::run_in_process(args);
}

TEST(FleetCli, ARegressionBetweenDriversExitsOneAndEveryOutputNamesBothVersions) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_regression");
  const std::string old_h100 = write_runner(dir, "a.json", kH100, "570.86.15");
  const std::string new_h100 = write_runner(dir, "b.json", kH100, "580.159.04", 0.8);
  const std::string h200 = write_runner(dir, "c.json", "NVIDIA H200", "580.159.04");
  const std::string md = (dir / "fleet.md").string();
  const std::string xml = (dir / "fleet.xml").string();
  const testing::CliRun run =
      oomlab({"--fleet", new_h100, h200, old_h100, "--json", (dir / "fleet.json").string(),
              "--markdown", md, "--junit", xml});
  EXPECT_EQ(run.code, 1) << run.err << run.out;
  EXPECT_EQ(run.out.find("oomlab compare --fleet"), 0U) << run.out;
  EXPECT_NE(run.out.find("REGRESSION: 2 of 2 comparisons (2 earlier-oom)"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("driver 570.86.15 · CUDA 13.0 → driver 580.159.04 · CUDA 13.0: "
                         "earlier-oom"),
            std::string::npos)
      << run.out;
  const json doc = json::parse(testing::read_text(dir / "fleet.json"));
  EXPECT_EQ(doc.at("schema"), "oomlab.fleet.v1");
  EXPECT_EQ(doc.at("environments").size(), 3U);
  EXPECT_EQ(doc.at("cells").size(), 2U);
  EXPECT_EQ(doc.at("totals").at("earlier-oom"), 2);
  const std::string summary = testing::read_text(md);
  EXPECT_EQ(summary.find("# oomlab fleet\n\n**REGRESSION"), 0U) << summary;
  EXPECT_NE(summary.find("570.86.15"), std::string::npos);
  const std::string junit = testing::read_text(xml);
  EXPECT_EQ(std::count(junit.begin(), junit.end(), '\n') > 0, true);
  EXPECT_NE(junit.find("failures=\"2\""), std::string::npos) << junit;
}

TEST(FleetCli, NoRegressionExitsZeroAndAMissingCellExitsSix) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_missing");
  const std::string a = write_runner(dir, "a.json", kH100, "570.86.15");
  const std::string b = write_runner(dir, "b.json", kH100, "580.159.04");
  EXPECT_EQ(oomlab({"--fleet", a, b}).code, 0);
  json lacking = json::parse(testing::read_text(b));
  lacking["cells"].erase(lacking["cells"].begin());
  std::ofstream(dir / "lacking.json") << lacking.dump();
  const testing::CliRun run = oomlab({"--fleet", a, (dir / "lacking.json").string()});
  EXPECT_EQ(run.code, 6) << run.err;
  EXPECT_NE(run.err.find("incomplete: 1 cell of a previous version missing"), std::string::npos)
      << run.err;
  EXPECT_EQ(oomlab({"--fleet", a, (dir / "lacking.json").string(), "--allow-missing"}).code, 0);
}

TEST(FleetCli, BadInputIsOneLineNamingTheFileWithExitTwo) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_bad");
  const std::string good = write_runner(dir, "a.json", kH100, "570.86.15");
  std::ofstream(dir / "broken.json") << "{\"schema\": ";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--fleet", good, (dir / "broken.json").string()},
        std::vector<std::string>{"--fleet"}, std::vector<std::string>{good, good, good},
        std::vector<std::string>{"--pick-baseline", dir.string(), good, good}}) {
    const testing::CliRun run = oomlab(args);
    EXPECT_EQ(run.code, 2) << run.err;
    EXPECT_EQ(run.err.rfind("oomlab: error: ", 0), 0U) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  EXPECT_NE(oomlab({"--fleet", good, (dir / "broken.json").string()}).err.find("broken.json"),
            std::string::npos);
}

// "no regression in 0 comparisons" with exit 0 would pass a fleet check that checked nothing.
TEST(FleetCli, OneRunnersFileAloneIsRefusedWithExitTwo) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_one");
  const std::string one = write_runner(dir, "a.json", kH100, "570.86.15");
  const testing::CliRun run = oomlab({"--fleet", one, "--json", (dir / "fleet.json").string()});
  EXPECT_EQ(run.code, 2) << run.err << run.out;
  EXPECT_EQ(run.err, "oomlab: error: compare --fleet: " + one +
                         " is one runner in one environment: nothing to compare it with (give "
                         "two runners' results or more)\n");
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(fs::exists(dir / "fleet.json")) << "nothing written for a refused invocation";
  EXPECT_EQ(oomlab({"--fleet", one, one}).code, 0) << "two runners of one environment compare";
}

TEST(FleetCli, PickBaselineNamesTheOlderDriversFileForANewDriver) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_pick");
  fs::create_directories(dir / "baselines");
  write_runner(dir / "baselines", "nvidia-h100-80gb-hbm3-570.json", kH100, "570.86.15");
  const std::string tonight = write_runner(dir, "matrix.json", kH100, "580.159.04");
  const testing::CliRun run = oomlab({"--pick-baseline", (dir / "baselines").string(), tonight});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("baseline=" + (dir / "baselines/nvidia-h100-80gb-hbm3-570.json").string() +
                         "\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("own=" + (dir / "baselines/nvidia-h100-80gb-hbm3-580.json").string()),
            std::string::npos);
  EXPECT_NE(run.out.find("upgrade=yes\n"), std::string::npos);
  EXPECT_NE(run.out.find("driver 570.86.15 → 580.159.04"), std::string::npos);
}

TEST(FleetCli, TwoFileCompareLeadsWithTheDriverUpgrade) {
  const fs::path dir = testing::fresh_temp_folder("oomlab_fleet_cli_upgrade");
  const std::string a = write_runner(dir, "a.json", kH100, "570.86.15");
  const std::string b = write_runner(dir, "b.json", kH100, "580.159.04");
  const testing::CliRun run = oomlab({a, b, "--markdown", (dir / "c.md").string()});
  EXPECT_EQ(run.code, 0) << run.err;
  const std::string second_line = run.out.substr(run.out.find('\n') + 1);
  EXPECT_EQ(second_line.find("driver 570.86.15 → 580.159.04"), 0U) << run.out;
  EXPECT_NE(testing::read_text(dir / "c.md").find("**driver 570.86.15 → 580.159.04**"),
            std::string::npos);
}

}  // namespace
}  // namespace oomlab
