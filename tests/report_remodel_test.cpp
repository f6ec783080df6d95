// `oomlab report --remodel`: run folders an older oomlab wrote (tests/data/captured, from the
// oomlab of commit 78c9f4f) re-diagnosed with this one, what changed said; a plain report of such
// a folder says whose verdicts it shows; a simulated run made again from its record.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

using ::oomlab::testing::CliRun;
using ::oomlab::testing::read_text;

CliRun oomlab_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

// A copy of a captured run folder, so that its reports are written beside a copy.
fs::path captured_copy(const std::string& run) {
  const fs::path folder = ::oomlab::testing::fresh_temp_folder("oomlab_remodel_" + run);
  fs::remove_all(folder);
  fs::copy(fs::path(::oomlab::testing::test_data_dir()) / "captured" / run, folder);
  return folder;
}

nlohmann::json json_of(const fs::path& file) {
  return nlohmann::json::parse(read_text(file));
}

TEST(ReportRemodel, ACublasOomStoredAsCompletingInTheModelBecomesALowerBoundBesideTheAllocator) {
  const fs::path run = captured_copy("gpt2_b7_12GiB");
  const std::string stored = read_text(run / "summary.json");
  ASSERT_NE(stored.find("reproduced: the model completes at this budget, as the program did"),
            std::string::npos);
  const CliRun r = oomlab_cli({"report", "--remodel", run.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("git 78c9f4fdb906"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the model: 'reproduced: the model completes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lower bounds now"), std::string::npos) << r.out;
  const nlohmann::json now = json_of(run / "remodel.json");
  EXPECT_EQ(now["model"]["library_oom"]["library"], "cuBLAS");
  EXPECT_TRUE(now["model"]["lower_bound"].get<bool>());
  const std::string md = read_text(run / "report.md");
  EXPECT_NE(md.find("| Reproduced | not an OOM of PyTorch's allocator: the program died in cuBLAS"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| Reproduced | reproduced: the model completes"), std::string::npos)
      << "the old verdict is only quoted as what changed";
  EXPECT_NE(md.find("Re-diagnosed by oomlab"), std::string::npos);
  EXPECT_EQ(read_text(run / "summary.json"), stored) << "the run's own record stays as written";
}

TEST(ReportRemodel, TheDiffusersOomStoredAsCapacityIsFragmentationWithItsArithmetic) {
  const fs::path run = captured_copy("sd_b14_8GiB");
  ASSERT_EQ(json_of(run / "summary.json")["oom"]["cause"], "capacity");
  const CliRun r = oomlab_cli({"report", "--remodel", run.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cause: capacity → fragmentation"), std::string::npos) << r.out;
  const nlohmann::json now = json_of(run / "remodel.json");
  EXPECT_EQ(now["oom"]["cause"], "fragmentation");
  EXPECT_NE(now["oom"]["evidence"].get<std::string>().find("in no one piece"), std::string::npos);
  // The user's own line, from the program's traceback, where the stored record had none.
  EXPECT_NE(now["oom"]["user_frame"].get<std::string>().find("sd_pipeline.py"), std::string::npos);
}

TEST(ReportRemodel, TheResnetOomIsTheOneThatEndedItNotTheRefusalItSurvived) {
  const fs::path run = captured_copy("resnet_b64_6450MiB");
  ASSERT_NE(read_text(run / "summary.json").find("fails at entry 3,491"), std::string::npos);
  const CliRun r = oomlab_cli({"report", "--remodel", run.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json now = json_of(run / "remodel.json");
  EXPECT_EQ(now["model"]["program_entry"], 3515);
  EXPECT_EQ(now["model"]["reproduced_entry"], 3515);
  EXPECT_NE(r.out.find("OOM at entry 3,491 → OOM at entry 3,515"), std::string::npos) << r.out;
}

TEST(ReportRemodel, APlainReportOfAnotherOomlabsFolderSaysWhoseVerdictsItShows) {
  const fs::path run = captured_copy("sd_b14_8GiB");
  const CliRun r = oomlab_cli({"report", run.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = read_text(run / "report.md");
  EXPECT_NE(md.find("are those of oomlab 0.1.0 (git 78c9f4fdb906)"), std::string::npos) << md;
  EXPECT_NE(md.find("report --remodel"), std::string::npos);
  EXPECT_NE(read_text(run / "report.html").find("report --remodel"), std::string::npos);
}

TEST(ReportRemodel, ASimulatedRunIsMadeAgainAndItsOwnOomlabsReportSaysNothingOfVersions) {
  const fs::path out = ::oomlab::testing::fresh_temp_folder("oomlab_remodel_sim") / "run";
  const CliRun ran = oomlab_cli(
      {"run", "fragmentation", "-a", "sim", "--budget", "256MiB", "--out", out.string(), "-q"});
  ASSERT_EQ(ran.code, 0) << ran.err;
  ASSERT_EQ(oomlab_cli({"report", out.string()}).code, 0);
  EXPECT_EQ(read_text(out / "report.md").find("This record's verdicts"), std::string::npos);
  const CliRun again = oomlab_cli({"report", "--remodel", out.string()});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("made again from its record"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("nothing a reader acts on changed"), std::string::npos) << again.out;
  const nlohmann::json before = json_of(out / "summary.json");
  const nlohmann::json after = json_of(out / "remodel.json");
  EXPECT_EQ(after["oom"]["request_bytes"], before["oom"]["request_bytes"]);
  EXPECT_EQ(after["oom"]["cause"], before["oom"]["cause"]);
}

TEST(ReportRemodel, AFolderThatIsNotARunsIsRefusedWithOneLine) {
  const fs::path matrix = fs::path(::oomlab::testing::test_data_dir()) / "report" / "matrix";
  const CliRun r = oomlab_cli({"report", "--remodel", matrix.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a run folder"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace oomlab
