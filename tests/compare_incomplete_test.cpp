// `compare` in CI: baseline cells missing from the current, or nothing matched, exit 6 unless
// --allow-missing (ci/nightly.sh passes it on); a parameter that names a file matches by the
// file's content, not its path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/child_process.hpp"
#include "cli/cli.hpp"
#include "io/file_digest.hpp"
#include "reports/matrix/compare.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fresh_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_compare_incomplete_test_" + name);
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

fs::path write_json(const fs::path& path, const json& doc) {
  std::ofstream(path) << doc.dump(2);
  return path;
}

std::string fixture(const std::string& name) {
  return testing::test_data_dir() + "/compare/" + name;
}

using Outcome = ::oomlab::testing::CliRun;

Outcome compare(const fs::path& baseline, const fs::path& current,
                std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"oomlab", "compare", baseline.string(), current.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return ::oomlab::testing::run_in_process(args);
}

TEST(CompareIncomplete, BaselineCellsMissingFromTheCurrentExitSixUnlessAllowed) {
  const fs::path folder = fresh_folder("missing");
  json current = read_json(fixture("h100_matrix.json"));
  current["cells"].erase(current["cells"].begin() + 5);  // leak-cuda
  const fs::path partial = write_json(folder / "partial.json", current);

  const Outcome o = compare(fixture("h100_matrix.json"), partial);
  EXPECT_EQ(o.code, 6) << o.err;
  EXPECT_NE(o.err.find("oomlab: incomplete: 1 of 8 baseline cells missing from the current "
                       "(leak/cuda) (exit 6 unless --allow-missing)"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(compare(fixture("h100_matrix.json"), partial, {"--allow-missing"}).code, 0);
  EXPECT_EQ(compare(partial, fixture("h100_matrix.json")).code, 0)
      << "a cell only the current has is not missing";
}

TEST(CompareIncomplete, NothingMatchedExitsSixEvenWithNoBaselineCells) {
  const fs::path folder = fresh_folder("nothing");
  json other_budget = read_json(fixture("h100_run_growing-batch_async.json"));
  other_budget["budget_bytes"] = 4ULL << 30U;
  const fs::path run = write_json(folder / "other_budget.json", other_budget);
  const Outcome o = compare(fixture("h100_run_growing-batch_async.json"), run);
  EXPECT_EQ(o.code, 6) << o.err;
  EXPECT_NE(o.err.find("no baseline cell is in the current"), std::string::npos) << o.err;

  json empty = read_json(fixture("h100_matrix.json"));
  empty["cells"] = json::array();
  const fs::path nothing = write_json(folder / "empty.json", empty);
  const Outcome none = compare(nothing, fixture("h100_matrix.json"));
  EXPECT_EQ(none.code, 6) << none.err;
  EXPECT_NE(none.err.find("oomlab: incomplete: no cell matched"), std::string::npos) << none.err;
  EXPECT_EQ(compare(nothing, fixture("h100_matrix.json"), {"--allow-missing"}).code, 0);
}

TEST(CompareIncomplete, ARegressionStillExitsOneAndTheMissingCellsAreSaid) {
  const Outcome o = compare(fixture("h100_matrix.json"), fixture("h200_matrix.json"));
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("incomplete: 1 of 8 baseline cells missing"), std::string::npos) << o.err;
}

// A replay cell keyed as the matrix keys it: its trace's path, and what the file held.
CompareInput replay_matrix(const std::string& trace_path, const std::string& digest) {
  json key = {{"scenario", "replay"},
              {"allocator", "sim"},
              {"options", json::object()},
              {"params", {{"trace", trace_path}}},
              {"budget", 1ULL << 30U}};
  if (!digest.empty()) key["files"] = {{"trace", digest}};
  const json doc = {{"schema", "oomlab.matrix.v1"},
                    {"environment", json::object()},
                    {"cells",
                     {{{"key", key},
                       {"outcome", "oom"},
                       {"summary",
                        {{"oom",
                          {{"live_bytes", 100},
                           {"step", 0},
                           {"event", 7},
                           {"request_bytes", 64},
                           {"reserved_bytes", 128},
                           {"cause", "capacity"}}}}}}}}};
  return parse_compare_input(doc.dump(), "matrix.json");
}

TEST(CompareByContent, ATraceMatchesByWhatItHoldsNotByItsPath) {
  const std::string a = "sha256:" + std::string(64, 'a');
  const std::string b = "sha256:" + std::string(64, 'b');
  const Comparison moved =
      oomlab::compare(replay_matrix("/ci/a/trace.pickle", a), replay_matrix("trace.pickle", a), 0);
  ASSERT_EQ(moved.cells.size(), 1U);
  EXPECT_EQ(moved.cells[0].verdict, Verdict::same) << "same content under another path";

  const Comparison changed =
      oomlab::compare(replay_matrix("trace.pickle", a), replay_matrix("trace.pickle", b), 0);
  EXPECT_EQ(changed.count(Verdict::missing), 1U) << "same path, other content";
  EXPECT_EQ(changed.count(Verdict::added), 1U);

  const Comparison old =
      oomlab::compare(replay_matrix("trace.pickle", ""), replay_matrix("trace.pickle", ""), 0);
  EXPECT_EQ(old.cells[0].verdict, Verdict::same) << "records without content match by path";
}

// Two real matrices replaying one trace under two paths: the cells match.
TEST(CompareByContent, AMatrixAndARunRecordTheTracesContent) {
  const fs::path folder = fresh_folder("content");
  const fs::path original = fs::path(testing::test_data_dir()) / "pytorch_gpt_fp32_snapshot.pickle";
  fs::copy_file(original, folder / "renamed.pickle");
  const std::string digest = file_digest(original);
  for (const auto& [name, trace] :
       {std::pair{"a", original}, std::pair{"b", folder / "renamed.pickle"}}) {
    const cli::ChildResult m = cli::run_child(
        {testing::oomlab_binary(), "matrix", "-s", "replay", "-a", "sim", "--budget", "1GiB", "-p",
         "trace=" + trace.string(), "--out", (folder / name).string(), "--quiet"},
        {.timeout = std::chrono::seconds(120)});
    ASSERT_EQ(m.exit_code, 0) << m.err_tail;
    const json cell = read_json(folder / name / "matrix.json").at("cells").at(0);
    EXPECT_EQ(cell.at("key").at("files").at("trace"), digest);
    EXPECT_EQ(cell.at("summary").at("scenario").at("files").at("trace"), digest);
    // The key names the file, not where it is (a checkout's place); the summary keeps the path.
    EXPECT_EQ(cell.at("key").at("params").at("trace"), trace.filename().string());
    EXPECT_EQ(cell.at("summary").at("scenario").at("params").at("trace"), trace.string());
  }
  const Outcome o = compare(folder / "a", folder / "b");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("no regression in 1 cell"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace oomlab

namespace oomlab {
namespace {

// The nightly's replay cells match the committed baselines only if those record what the
// committed trace holds.
TEST(CompareByContent, TheCommittedBaselinesKeyTheirTraceByTheCommittedFilesContent) {
  const fs::path root = fs::path(testing::test_data_dir()) / ".." / "..";
  const std::string digest =
      file_digest(root / "tests" / "data" / "pytorch_gpt_fp32_snapshot.pickle");
  for (const char* name : {"nvidia-h100-80gb-hbm3-580.json", "nvidia-h200-580.json"}) {
    std::size_t replays = 0;
    const json baseline = read_json(root / "ci" / "baselines" / name);
    for (const json& cell : baseline.at("cells")) {
      if (cell.at("scenario") != "replay") continue;
      ++replays;
      EXPECT_EQ(cell.at("key").at("files").at("trace"), digest) << name;
    }
    EXPECT_EQ(replays, 3U) << name;
  }
}

}  // namespace
}  // namespace oomlab
