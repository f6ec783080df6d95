// The command line in-process: exit codes, one-line errors naming the problem, and the outputs.
#include "cli/cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/console.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

using Outcome = ::oomlab::testing::CliRun;

Outcome oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

std::filesystem::path temp_folder(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / ("oomlab_cli_test_" + name);
  std::filesystem::remove_all(path);
  return path;
}

struct BadCase {
  std::vector<std::string> args;
  std::string fragment;
};

class CliRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(CliRejects, WithExitTwoAndOneLine) {
  const Outcome o = oomlab(GetParam().args);
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find(GetParam().fragment), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "one line: " << o.err;
  EXPECT_EQ(o.err.rfind("oomlab: error: ", 0), 0U) << o.err;
}

INSTANTIATE_TEST_SUITE_P(
    BadInvocations, CliRejects,
    ::testing::Values(
        BadCase{{"rnu", "fragmentation"}, "did you mean 'run'"},
        BadCase{{"run", "fragmentaton"}, "did you mean 'fragmentation'"},
        BadCase{{"run", "fragmentation", "--budget=-1"},
                "--budget: '-1' is not a size: sizes cannot be negative"},
        BadCase{{"run", "fragmentation", "--budget=8XB"}, "unknown unit 'XB'"},
        BadCase{{"run", "fragmentation", "--budget=0"}, "--budget: a budget of 0 bytes"},
        BadCase{{"run", "fragmentation", "--budget=101%"}, "out of range"},
        BadCase{{"run", "fragmentation", "--budget=1e400"}, "1e400"},
        BadCase{{"run", "fragmentation", "--allocator=asnyc"}, "did you mean 'async'"},
        BadCase{{"run", "fragmentation", "-a", "async:release_treshold=0"},
                "did you mean 'release_threshold'"},
        BadCase{{"run", "fragmentation", "--param", "blok=1MiB"}, "did you mean 'block'"},
        BadCase{{"run", "fragmentation", "--param", "block"}, "expected key=value"},
        BadCase{{"run", "fragmentation", "--param", "keep=2/1"},
                "--param keep: '2/1' is more than 1"},
        BadCase{{"run", "fragmentation", "--param", "pattern=zigzag"},
                "not one of interleaved|random"},
        BadCase{{"run", "fragmentation", "-a", "sim", "-p", "min=1MiB", "-p", "max=4KiB"},
                "min <= max"},
        BadCase{{"run", "fragmentation", "--seed=-4"}, "--seed: '-4' must not be negative"},
        BadCase{{"run", "fragmentation", "--device=x"}, "--device: 'x' is not a whole number"},
        BadCase{{"run", "fragmentation", "--expect-oom", "--expect-no-oom"},
                "cannot be given together"},
        BadCase{{"run"}, "scenario is required"},
        BadCase{{"run", "fragmentation", "--bogus"}, "--bogus"}));

TEST(Cli, VersionNamesTheGitCommit) {
  const Outcome o = oomlab({"--version"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out.rfind("oomlab 0.1.0 (git ", 0), 0U) << o.out;
}

TEST(Cli, ListShowsScenariosParamsAndAllocatorOptions) {
  const Outcome o = oomlab({"list"});
  EXPECT_EQ(o.code, 0);
  for (const char* needle :
       {"fragmentation", "block=64KiB", "keep=1/32", "async", "release_threshold=0", "managed",
        "advise=none", "sim", "page=2MiB", "cuda"}) {
    EXPECT_NE(o.out.find(needle), std::string::npos) << needle;
  }
  const auto doc = nlohmann::json::parse(oomlab({"list", "--json"}).out);
  EXPECT_EQ(doc.at("scenarios").at(0).at("name"), "fragmentation");
}

TEST(Cli, RunHelpExplainsTheScenario) {
  const Outcome o = oomlab({"run", "fragmentation", "--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("Scenario 'fragmentation'"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--budget"), std::string::npos);
}

TEST(Cli, InfoSaysWhetherADeviceIsThere) {
  const Outcome o = oomlab({"info"});
  std::string why;
  if (oomlab::testing::cuda_device_present(&why)) {
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("VMM granularity"), std::string::npos);
  } else {
    EXPECT_EQ(o.code, 3);
    EXPECT_NE(o.err.find("no CUDA driver/device found"), std::string::npos) << o.err;
  }
}

TEST(Cli, GpuAllocatorWithoutAUsableDeviceExitsThree) {
  // Without a driver every GPU allocator is refused; with one, a device index that does not exist.
  std::string why;
  const bool device = oomlab::testing::cuda_device_present(&why);
  const Outcome o = oomlab({"run", "fragmentation", "--allocator=cuda", "--device",
                            device ? "99" : "0", "--out", temp_folder("nodev").string()});
  EXPECT_EQ(o.code, 3) << o.err;
  EXPECT_NE(o.err.find(device ? "device 99 does not exist" : "no CUDA driver/device found"),
            std::string::npos)
      << o.err;
}

TEST(Cli, JsonToStdoutIsTheDocumentAlone) {
  const auto folder = temp_folder("json");
  const Outcome o = oomlab({"run", "fragmentation", "--allocator=sim", "--budget=1GiB", "--json",
                            "-", "--out", folder.string()});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);  // throws if anything else is on stdout
  EXPECT_EQ(doc.at("outcome"), "oom");
  EXPECT_EQ(doc.at("oom").at("cause"), "fragmentation");
  EXPECT_LE(doc.at("oom").at("live_bytes").get<std::uint64_t>(), (1ULL << 30U) / 20);
  EXPECT_NE(o.err.find("cause      fragmentation"), std::string::npos) << "summary goes to stderr";
  EXPECT_TRUE(std::filesystem::exists(folder / "events.csv"));
  EXPECT_TRUE(std::filesystem::exists(folder / "summary.json"));
}

TEST(Cli, TheDefaultAllocatorIsAutoAndRuns) {
  const auto folder = temp_folder("auto");
  const Outcome o = oomlab(
      {"run", "fragmentation", "-b", "64MiB", "--json", "-", "-q", "--out", folder.string()});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  std::string why;
  const bool device = oomlab::testing::cuda_device_present(&why);
  EXPECT_EQ(doc.at("allocator").at("name"), device ? "async" : "sim");
  EXPECT_EQ(doc.at("outcome"), "oom");
  if (!device) {
    EXPECT_NE(o.err.find("using the simulated allocator 'sim'"), std::string::npos) << o.err;
  }
}

TEST(Cli, ARefusedRunLeavesNoEmptyFolder) {
  const auto folder = temp_folder("refused");
  const Outcome o = oomlab({"run", "fragmentation", "-a", "sim", "-b", "8GiB", "-p", "block=128",
                            "--out", folder.string()});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("more than the 33,554,432"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(folder));
}

TEST(Cli, AnRmmLogReplaysWithItsFailingEventAndMeetsExpectNoOomWhereTheProgramWentOn) {
  // Its 1 GiB request failed and the program allocated again: refused again at 1 GiB, the
  // replay goes on as the program did, and says so.
  const auto folder = temp_folder("rmm");
  const std::string log = oomlab::testing::test_data_dir() + "/rmm_allocate_failure.csv";
  const Outcome o = oomlab({"run", "replay", "--trace", log, "-a", "sim", "-b", "1GiB",
                            "--expect-no-oom", "--json", "-", "--out", folder.string()});
  EXPECT_EQ(o.code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc.at("outcome"), "completed");
  EXPECT_EQ(doc.at("metrics").at("first_failure_index"), 2);
  EXPECT_EQ(doc.at("metrics").at("first_failure_line"), 4);
  EXPECT_NE(o.err.find("the program survived 1 refused request (1 of 1.00 GiB)"), std::string::npos)
      << o.err;
  EXPECT_NE(o.err.find("1 of the 1 requests the program survived being refused were refused "
                       "here too"),
            std::string::npos)
      << o.err;
}

TEST(Cli, ABadTraceIsBadInputNamingItsPlace) {
  const Outcome o = oomlab({"run", "replay", "--trace",
                            oomlab::testing::test_data_dir() + "/rmm_allocate_failure.csv",
                            "--format", "pytorch", "-a", "sim"});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("rmm_allocate_failure.csv: byte 0: not a pickle"), std::string::npos)
      << o.err;
  EXPECT_EQ(oomlab({"run", "fragmentation", "--trace", "x.csv"}).code, 2)
      << "fragmentation reads no trace";
  EXPECT_EQ(oomlab({"run", "replay", "-a", "sim"}).code, 2) << "replay needs a trace";
}

TEST(Cli, FrontierAnswersAndSaysWhenNothingFits) {
  const std::string snapshot =
      oomlab::testing::test_data_dir() + "/pytorch_gpt_fp32_snapshot.pickle";
  const Outcome fits = oomlab({"frontier", "replay", "--trace", snapshot, "-a", "sim:total=24GiB",
                               "-p", "level=segment", "-q", "--json", "-"});
  EXPECT_EQ(fits.code, 0) << fits.err;
  const auto doc = nlohmann::json::parse(fits.out);
  EXPECT_EQ(doc.at("schema"), "oomlab.frontier.v1");
  EXPECT_EQ(doc.at("frontier_bytes"), 9'311'354'880ULL + 69'206'016ULL);
  const Outcome no =
      oomlab({"frontier", "replay", "--trace", snapshot, "-a", "sim:total=8GiB", "-q"});
  EXPECT_EQ(no.code, 1);
  EXPECT_NE(no.out.find("does not complete even at 8.00 GiB"), std::string::npos) << no.out;
}

TEST(Cli, ExpectationsSetTheExitCode) {
  const auto folder = temp_folder("expect");
  const std::vector<std::string> base = {"run", "fragmentation", "-a", "sim", "-b", "64MiB", "-q"};
  auto with = [&](const std::string& flag) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {flag, "--out", (folder / flag).string()});  // a folder per run
    return oomlab(args);
  };
  EXPECT_EQ(with("--expect-oom").code, 0);
  const Outcome no_oom = with("--expect-no-oom");
  EXPECT_EQ(no_oom.code, 1);
  EXPECT_NE(no_oom.err.find("--expect-no-oom"), std::string::npos);
}

TEST(Cli, CsvAndJsonCopiesAreWritten) {
  const auto folder = temp_folder("copies");
  std::filesystem::create_directories(folder);
  const Outcome o = oomlab({"run", "fragmentation", "-a", "sim", "-b", "64MiB", "-q", "--out",
                            (folder / "run").string(), "--csv", (folder / "e.csv").string(),
                            "--json", (folder / "s.json").string()});
  ASSERT_EQ(o.code, 0) << o.err;
  std::ifstream csv(folder / "e.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes");
  std::ifstream json(folder / "s.json");
  EXPECT_EQ(nlohmann::json::parse(json).at("schema"), "oomlab.run.v1");
}

// An output that cannot be written is exit 5 for every command, found before the run.
TEST(Cli, UnwritableOutFolderIsExitFiveBeforeTheRun) {
  const Outcome o =
      oomlab({"run", "fragmentation", "-a", "sim", "--out", "/proc/oomlab-cannot-be-here"});
  EXPECT_EQ(o.code, 5);
  EXPECT_NE(o.err.find("--out: cannot create folder"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace oomlab::cli

namespace oomlab::cli {
namespace {

TEST(Console, ProgressLineRedrawsAndNoticesClearIt) {
  std::ostringstream err;
  Console console(err, true);
  console.progress(progress_line("fragmentation/sim", {.events = 12345,
                                                       .live_bytes = 512ULL << 20U,
                                                       .budget_bytes = 1ULL << 30U,
                                                       .step = 3,
                                                       .phase = "fill",
                                                       .elapsed_s = 1.25}));
  console.notice("budget clamped");
  console.end_progress();
  EXPECT_EQ(err.str(),
            "\r\033[Kfragmentation/sim · fill · step 3 · 12,345 events · live 512 MiB of 1.00 GiB "
            "(50%) · 1.2 s"
            "\r\033[Koomlab: note: budget clamped\n");
}

TEST(Console, WhileATraceIsReadTheLineSaysHowFar) {
  EXPECT_EQ(progress_line("replay/sim", {.events = 1'500'000,
                                         .elapsed_s = 2.0,
                                         .loading = true,
                                         .input_read_bytes = 1ULL << 30U,
                                         .input_total_bytes = 4ULL << 30U}),
            "replay/sim · reading the trace · 1.00 GiB of 4.00 GiB (25%) · 1,500,000 events · "
            "2.0 s");
  EXPECT_EQ(
      progress_line(
          "replay/sim",
          {.events = 8192, .elapsed_s = 0.5, .loading = true, .input_total_bytes = 4ULL << 30U}),
      "replay/sim · reading the trace · 4.00 GiB file · 8,192 events · 0.5 s")
      << "a reader that does not say how far it is";
}

TEST(Console, NoProgressWhenNotATerminal) {
  std::ostringstream err;
  Console console(err, false);
  console.progress("anything");
  console.end_progress();
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace oomlab::cli
