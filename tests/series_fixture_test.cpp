// Issue 36's acceptance on real programs' snapshot series (tests/data/series/series.tgz, captured
// on the GPU machine by tests/data/programs/capture_series.sh): the what-if table at a batch 4-16x
// larger made from the snapshots at 1 and 2, against the table of the real snapshot at that batch;
// fit replay --from against the real snapshots; the CLI's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The series unpacked once per process.
const fs::path& series_folder() {
  static const fs::path folder = testing::series_archive("series.tgz");
  return folder;
}

json whatif_json(std::vector<std::string> args) {
  args.insert(args.begin(), {"oomlab", "whatif"});
  args.emplace_back("--json");
  args.emplace_back("-");
  const testing::CliRun run = testing::run_in_process(args);
  EXPECT_EQ(run.code, 0) << run.err;
  return run.code == 0 ? json::parse(run.out) : json::object();
}

std::map<std::string, json> rows_of(const json& doc) {
  std::map<std::string, json> out;
  for (const json& row : doc.at("rows"))
    out[row.at("name").get<std::string>()] = row;
  return out;
}

struct Made {
  std::map<std::string, json> real;
  std::map<std::string, json> made;
};

Made tables(const std::string& program, const std::string& from, int at) {
  const fs::path dir = series_folder();
  const std::string real = (dir / (program + "_b" + std::to_string(at) + ".pickle")).string();
  const std::string pattern = (dir / (program + "_b{batch}.pickle")).string();
  return {rows_of(whatif_json({"--trace", real})),
          rows_of(whatif_json({"--trace", pattern, "--from", "batch=" + from, "--at",
                               "batch=" + std::to_string(at)}))};
}

double frontier(const json& row) {
  return row.at("frontier_bytes").get<double>();
}

TEST(SeriesFixtures, ATransformersTrainingRunAtEightFromOneAndTwoIsWithinOnePercent) {
  const Made t = tables("gpt2", "1,2", 8);
  ASSERT_FALSE(t.made.empty());
  // garbage_collection_threshold is left out: it moves by 2.4% on the real snapshot alone when
  // the driver's recorded segment addresses are withheld, as a made trace must (docs/whatif.md).
  for (const char* name : {"native", "expandable_segments", "max_split_size=128MiB",
                           "max_split_size=512MiB", "backend=async"}) {
    const double real = frontier(t.real.at(name));
    const double made = frontier(t.made.at(name));
    EXPECT_NEAR(made, real, 0.01 * real) << name;
  }
}

TEST(SeriesFixtures, ConvolutionWorkspacesAreWithinOnePercentOrInARangeThatHoldsTheTruth) {
  for (const auto& [program, at] :
       {std::pair{"sd", 8}, std::pair{"resnet", 8}, std::pair{"resnet", 16}}) {
    const Made t = tables(program, "1,2", at);
    ASSERT_FALSE(t.made.empty()) << program;
    for (const auto& [name, row] : t.real) {
      const json& range = t.made.at(name).at("frontier_range_bytes");
      ASSERT_TRUE(range.is_array()) << program << " " << name;
      const double low = range[0].get<double>();
      const double high = range[1].get<double>();
      // The issue's rule: the made frontier within 1% of the real one, or a range that holds it
      // and is at most 30% wide.
      const double real = frontier(row);
      const bool near = std::abs(frontier(t.made.at(name)) - real) <= 0.01 * real;
      const bool held = low <= real && real <= high && high - low <= 0.30 * low;
      EXPECT_TRUE(near || held) << program << "@" << at << " " << name << ": made "
                                << frontier(t.made.at(name)) << " in [" << low << ", " << high
                                << "], real " << real;
    }
  }
}

TEST(SeriesFixtures, FitReplayFromOneAndTwoAgreesWithTheRealSnapshotAtEight) {
  const Made t = tables("gpt2", "1,2", 8);
  ASSERT_FALSE(t.real.empty());
  const auto at = static_cast<std::uint64_t>(frontier(t.real.at("native")));
  const std::string pattern = (series_folder() / "gpt2_b{batch}.pickle").string();
  const auto fit = [&](std::uint64_t budget) {
    const testing::CliRun run = testing::run_in_process(
        {"oomlab", "fit", "replay", "--trace", pattern, "--from", "batch=1,2", "--range",
         "batch=1..16", "--budget", std::to_string(budget) + "B", "-a", "torch", "--json", "-"});
    EXPECT_EQ(run.code, 0) << run.err;
    return json::parse(run.out);
  };
  // The real snapshot at 8 completes at its frontier and not a page under it: so does the trace
  // made at 8, and the answer says so.
  const json fits = fit(at);
  EXPECT_EQ(fits.at("value"), 8);
  EXPECT_EQ(fits.at("predicted"), 8);
  EXPECT_EQ(fits.at("made_from").at("values"), json::array({1, 2}));
  EXPECT_EQ(fit(at - (2ULL << 20U)).at("value"), 7);
}

// The capped runs unpacked once per process (tests/data/series/README.md).
const fs::path& capped_folder() {
  static const fs::path folder = testing::series_archive("capped.tgz");
  return folder;
}

std::uint64_t fit_value(const std::string& program, const std::string& range, std::uint64_t budget,
                        const std::string& transients) {
  const std::string pattern = (capped_folder() / (program + "_capped_b{batch}.pickle")).string();
  const testing::CliRun run = testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", pattern, "--from", "batch=1,2", "--range", range,
       "--budget", std::to_string(budget) + "B", "--transients", transients, "--json", "-"});
  EXPECT_EQ(run.code, 0) << run.err;
  if (run.code != 0) return 0;
  const json doc = json::parse(run.out);
  return doc.at("value").is_null() ? 0 : doc.at("value").get<std::uint64_t>();
}

// fit exec's prediction from its first two runs, at the allocator's budget they measured (the
// card less what the process held outside the allocator), against the truth on the GPU: the
// truth or one above it, so that the run after the prediction's is the answer's (four runs). On
// the diffusers job cuDNN's workspaces on their lines say 10, given up when refused 14: the
// capped program was refused 2.4 GiB workspaces at 13 and went on.
TEST(SeriesFixtures, TheCappedProgramsPredictionIsTheTruthOrOneAbove) {
  const std::uint64_t sd = fit_value("sd", "batch=1..32", 7870611456, "refusable");
  EXPECT_GE(sd, 13U);
  EXPECT_LE(sd, 14U);
  EXPECT_LE(fit_value("sd", "batch=1..32", 7870611456, "lines"), 13U);
  const std::uint64_t vit = fit_value("vit", "batch=1..256", 2426404864, "refusable");
  EXPECT_GE(vit, 30U);
  EXPECT_LE(vit, 31U);
}

TEST(SeriesFixtures, TheCardTableNamesTheLargestBatchPerSetting) {
  const std::string pattern = (series_folder() / "gpt2_b{batch}.pickle").string();
  const testing::CliRun run = testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", pattern, "--from", "batch=1,2", "--range",
       "batch=1..64", "--cards", "L4,A100-40GB", "--outside", "768MiB", "--json", "-"});
  ASSERT_EQ(run.code, 0) << run.err;
  const json doc = json::parse(run.out);
  EXPECT_EQ(doc.at("predicted"), true);
  ASSERT_EQ(doc.at("cards").size(), 2U);
  for (const json& row : doc.at("rows")) {
    const std::uint64_t l4 = row.at("largest")[0].get<std::uint64_t>();
    const std::uint64_t a100 = row.at("largest")[1].get<std::uint64_t>();
    EXPECT_GE(a100, l4) << row.at("setting");  // a larger card holds at least as much
    EXPECT_GE(l4, 8U) << row.at("setting");    // 14.2 GiB at 8 (native) fits 22 GiB
  }
}

TEST(SeriesCli, BadSeriesRequestsAreRefusedNamingTheProblem) {
  const std::string dir = series_folder().string();
  const auto refused = [](std::vector<std::string> argv, const std::string& words) {
    const testing::CliRun run = testing::run_in_process(argv);
    EXPECT_EQ(run.code, 2) << argv[1];
    EXPECT_NE(run.err.find(words), std::string::npos) << run.err;
  };
  refused({"oomlab", "whatif", "--trace", dir + "/gpt2_b1.pickle", "--from", "batch=1,2", "--at",
           "batch=8"},
          "has no {batch}");
  refused({"oomlab", "whatif", "--trace", dir + "/gpt2_b{batch}.pickle", "--from", "batch=1,3",
           "--at", "batch=8"},
          "gpt2_b3.pickle: no such file (the snapshot at batch=3");
  refused({"oomlab", "whatif", "--trace", dir + "/gpt2_b{batch}.pickle", "--at", "batch=8"},
          "--at needs --from");
  refused({"oomlab", "whatif", "--trace", dir + "/gpt2_b{batch}.pickle", "--from", "batch=1",
           "--at", "batch=8"},
          "two snapshots or more");
  refused({"oomlab", "whatif", "--trace", dir + "/gpt2_b{batch}.pickle", "--from", "batch=1,2",
           "--at", "steps=8"},
          "give the same name");
  refused({"oomlab", "fit", "replay", "--trace", dir + "/gpt2_b{batch}.pickle", "--from",
           "batch=1,x", "--range", "batch=1..8"},
          "'x' is not a whole number");
  refused({"oomlab", "fit", "leak", "--from", "batch=1,2", "--range", "batch=1..8"},
          "only replay takes a series");
  refused({"oomlab", "fit", "replay", "--trace", dir + "/gpt2_b{batch}.pickle", "--from",
           "batch=1,2", "--range", "batch=1..8", "--cards", "T4,bogus"},
          "--cards");
  refused({"oomlab", "fit", "replay", "--trace", dir + "/gpt2_b{batch}.pickle", "--from",
           "batch=1,2", "--range", "batch=1..8", "--transients", "maybe"},
          "--transients: 'maybe': give lines, held or refusable");
  refused({"oomlab", "fit", "replay", "--trace", dir + "/gpt2_b1.pickle", "--range", "batch=1..8",
           "--transients", "refusable"},
          "--transients needs --from");
}

TEST(SeriesCli, DifferentProgramsAreNotASeries) {
  const fs::path dir = testing::fresh_temp_folder("mixed_series");
  fs::copy_file(series_folder() / "gpt2_b1.pickle", dir / "p_b1.pickle");
  fs::copy_file(series_folder() / "resnet_b2.pickle", dir / "p_b2.pickle");
  const testing::CliRun run =
      testing::run_in_process({"oomlab", "whatif", "--trace", (dir / "p_b{batch}.pickle").string(),
                               "--from", "batch=1,2", "--at", "batch=8"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("have a counterpart"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace oomlab
