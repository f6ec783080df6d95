// Every command's --help: its own examples (frontier's are run here as written), compare's
// verdicts and exit codes, matrix's exit code 1. And frontier's --timeout, --out, --junit and
// its trials in exact bytes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/child_process.hpp"
#include "cli/cli.hpp"
#include "exec/oom_message.hpp"
#include "reports/matrix/compare.hpp"
#include "test_support.hpp"

namespace oomlab::cli {
namespace {

namespace fs = std::filesystem;
using oomlab::testing::oomlab_binary;
using oomlab::testing::test_data_dir;

// `command` may be two words ("frontier exec").
std::string help_of(const std::string& command) {
  std::ostringstream out;
  std::ostringstream err;
  std::vector<std::string> args = {"oomlab"};
  std::istringstream words(command);
  for (std::string word; words >> word;)
    args.push_back(word);
  args.emplace_back("--help");
  const int code = run_cli(args, out, err);
  EXPECT_EQ(code, 0) << err.str();
  return out.str();
}

// The "  oomlab COMMAND ..." lines under "Examples:", without their "# comment".
std::vector<std::string> examples_of(const std::string& help, const std::string& command) {
  std::vector<std::string> examples;
  std::istringstream lines(help.substr(help.find("Examples:")));
  const std::string start = "  oomlab " + command;
  for (std::string line; std::getline(lines, line);) {
    if (line != start && !line.starts_with(start + " ")) continue;
    line = line.substr(
        2, line.find("  #") == std::string::npos ? std::string::npos : line.find("  #") - 2);
    examples.push_back(line);
  }
  return examples;
}

fs::path temp_folder(const std::string& name) {
  return ::oomlab::testing::fresh_temp_folder("oomlab_cli_help_test_" + name);
}

using ::oomlab::testing::read_text;

// GPT-2's snapshots at batch 1, 2, 4 and 8 (tests/data/series/series.tgz), once per process.
const fs::path& series_folder() {
  static const fs::path folder = ::oomlab::testing::series_archive("series.tgz");
  return folder;
}

// An example run as a user would, in `dir`, with the files it names taken from tests/data (a
// series of snapshots, runs/snap_b{batch}.pickle, is GPT-2's).
ChildResult run_example(const std::string& example, const fs::path& dir) {
  std::string line = example.substr(std::string("oomlab ").size());
  const std::vector<std::pair<std::string, std::string>> files = {
      {"memory_snapshot.pickle", test_data_dir() + "/pytorch_gpt_fp32_snapshot.pickle"},
      {"rmm_log.csv", test_data_dir() + "/rmm_allocate_failure.csv"},
      {"runs/snap_b{batch}.pickle", (series_folder() / "gpt2_b{batch}.pickle").string()}};
  for (const auto& [placeholder, file] : files) {
    if (const auto at = line.find(placeholder); at != std::string::npos)
      line.replace(at, placeholder.size(), file);
  }
  // A soak example judges its own resident memory: under AddressSanitizer the child runs without
  // the quarantine, which holds freed memory by design (harmless in any other build).
  const std::string shell = fmt::format(
      "cd '{}' && "
      "ASAN_OPTIONS=\"$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0\" "
      "exec '{}' {}",
      dir.string(), oomlab_binary(), line);
  return run_child({"/bin/sh", "-c", shell}, {.timeout = std::chrono::seconds(300)});
}

TEST(CliHelp, EveryCommandHasItsOwnExamples) {
  for (const std::string command : {"run", "frontier", "fit", "exec", "whatif", "matrix", "report",
                                    "compare", "list", "info"}) {
    const std::string help = help_of(command);
    ASSERT_NE(help.find("Examples:"), std::string::npos) << command << ":\n" << help;
    EXPECT_GE(examples_of(help, command).size(), 2U) << command << ":\n" << help;
    EXPECT_NE(help.find("Exit codes:"), std::string::npos) << command;
  }
}

TEST(CliHelp, FrontierExecHelpIsItsOwnAndSaysHowItSearches) {
  const std::string help = help_of("frontier exec");
  EXPECT_NE(help.find("--confirm"), std::string::npos) << help;
  EXPECT_NE(help.find("How it searches:"), std::string::npos) << help;
  EXPECT_GE(examples_of(help, "frontier exec").size(), 2U) << help;
  EXPECT_EQ(help.find("--allocator"), std::string::npos)
      << "frontier's scenario flags are not exec's";
}

TEST(CliHelp, ExecHelpSaysWhatThePyTorchSnapshotIsAndHowToTurnItOff) {
  for (const std::string command : {"exec", "frontier exec"}) {
    const std::string help = help_of(command);
    for (const char* flag : {"--no-snapshot", "--snapshot-stacks", "--snapshot-entries"})
      EXPECT_NE(help.find(flag), std::string::npos) << command << ": " << flag;
  }
  const std::string help = help_of("exec");
  EXPECT_NE(help.find("PyTorch snapshot, with no change to the program:"), std::string::npos);
  EXPECT_NE(help.find("snapshot-rank<RANK>.pickle"), std::string::npos) << help;
}

TEST(CliHelp, ExecHelpNamesTheModelAndCheckRemedy) {
  const std::string exec = help_of("exec");
  EXPECT_NE(exec.find("--check-remedy"), std::string::npos) << exec;
  EXPECT_NE(exec.find("summary.json 'model'"), std::string::npos) << exec;
  EXPECT_NE(exec.find("--check-remedy's"), std::string::npos) << "its exit code:\n" << exec;
  const std::string frontier = help_of("frontier exec");
  EXPECT_NE(frontier.find("the model predicts"), std::string::npos) << frontier;
  EXPECT_NE(frontier.find("never a"), std::string::npos) << frontier;
}

// The OOM messages exec's help names are the registered dialects' reporters, each once, in lines
// under 92 columns: a wing's dialect is listed by being registered, not by the help's text.
TEST(CliHelp, ExecHelpNamesEveryRegisteredOomReporter) {
  const std::string exec = help_of("exec");
  const std::size_t from = exec.find("OOM messages recognised:");
  ASSERT_NE(from, std::string::npos) << exec;
  const std::string list = exec.substr(from, exec.find("A framework that sizes", from) - from);
  for (const OomDialect& d : oom_dialects()) {
    for (const OomAdvice& a : d.advice) {
      EXPECT_NE(list.find(a.framework), std::string::npos) << a.framework << " in " << list;
    }
  }
  std::istringstream lines(exec);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("OOM messages recognised") != std::string::npos) {
      EXPECT_LE(line.size(), 92U);
    }
  }
}

TEST(CliHelp, RunHelpForAScenarioKeepsTheExamples) {
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_EQ(run_cli({"oomlab", "run", "leak", "--help"}, out, err), 0);
  EXPECT_NE(out.str().find("Scenario 'leak'"), std::string::npos);
  EXPECT_GE(examples_of(out.str(), "run").size(), 2U) << out.str();
}

TEST(CliHelp, CompareListsEveryVerdictAndItsExitCodes) {
  const std::string help = help_of("compare");
  for (const Verdict verdict : kVerdicts)
    EXPECT_NE(help.find(std::string(to_string(verdict))), std::string::npos) << to_string(verdict);
  for (const char* code : {"0 no regression", "1 a regression", "2 bad usage", "6 baseline cells"})
    EXPECT_NE(help.find(code), std::string::npos) << code;
  EXPECT_NE(help.find("--allow-missing"), std::string::npos);
}

TEST(CliHelp, MatrixListsExitCodeOne) {
  const std::string help = help_of("matrix");
  EXPECT_NE(help.find("1 a cell could not run"), std::string::npos) << help;
}

// matrix takes every allocator of the catalogue; its help named four of them, not torch.
TEST(CliHelp, MatrixNamesEveryAllocatorItTakes) {
  const std::string help = help_of("matrix");
  const std::string line = help.substr(help.find("--allocators"));
  for (const char* name : {"cuda", "async", "managed", "sim", "torch"})
    EXPECT_NE(line.substr(0, line.find(" (NAME:")).find(name), std::string::npos) << name << help;
}

// The examples named ci/baselines/h100.json, which never existed.
TEST(CliHelp, TheBaselinesTheExamplesNameExist) {
  const std::regex baseline(R"(ci/baselines/[A-Za-z0-9_.-]+\.json)");
  const fs::path repository = fs::path(test_data_dir()) / ".." / "..";
  std::size_t named = 0;
  for (const std::string command : {"", "compare", "matrix", "report"}) {
    const std::string help = help_of(command);
    for (std::sregex_iterator it(help.begin(), help.end(), baseline), end; it != end; ++it) {
      ++named;
      EXPECT_TRUE(fs::exists(repository / it->str())) << it->str() << " in " << command;
    }
  }
  EXPECT_GE(named, 1U);
}

// `auto` replays a PyTorch snapshot through torch: list says so.
TEST(CliHelp, ListSaysAutoPicksTorchForAPyTorchSnapshot) {
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_EQ(run_cli({"oomlab", "list"}, out, err), 0) << err.str();
  const std::string text = out.str();
  const std::string line = text.substr(text.find("  auto "));
  EXPECT_NE(line.substr(0, line.find('\n')).find("torch for a PyTorch snapshot"), std::string::npos)
      << line;
}

// A PyTorch snapshot is replayed through the model of PyTorch's allocator: the help says the
// allocator exists, and no example replays a snapshot on another (`-a auto`, the default, picks
// the snapshot's own allocator: Auto.APyTorchSnapshotIsReplayedThroughTheModel...).
TEST(CliHelp, RunAndFrontierNameTorchAndReplaySnapshotsThroughIt) {
  const std::regex other_allocator(R"((-a|--allocator)[ =](cuda|async|managed|sim)\b)");
  const std::string top = help_of("");
  for (const std::string command : {"run", "frontier"}) {
    const std::string help = help_of(command);
    const std::string allocator_line = help.substr(help.find("--allocator"));
    EXPECT_NE(allocator_line.substr(0, allocator_line.find('\n')).find("torch"), std::string::npos)
        << help;
    std::size_t snapshots = 0;
    for (const std::string& example : examples_of(help, command)) {
      if (example.find(".pickle") == std::string::npos) continue;
      ++snapshots;
      EXPECT_FALSE(std::regex_search(example, other_allocator)) << example;
    }
    EXPECT_GE(snapshots, 2U) << help;
    for (const std::string& example : examples_of(top, command)) {
      if (example.find(".pickle") != std::string::npos) {
        EXPECT_FALSE(std::regex_search(example, other_allocator)) << example;
      }
    }
  }
}

// run's examples that need no GPU run as written (the others are the GPU tests' to run).
TEST(CliHelp, RunExamplesWithoutAGpuRunAsWritten) {
  const std::regex device_allocator(R"((-a|--allocator)[ =](cuda|async|managed)\b)");
  std::size_t ran = 0;
  for (const std::string& example : examples_of(help_of("run"), "run")) {
    if (std::regex_search(example, device_allocator)) continue;
    SCOPED_TRACE(example);
    const ChildResult r = run_example(example, temp_folder("run_example"));
    EXPECT_EQ(r.exit_code, 0) << r.err_tail;
    ++ran;
  }
  EXPECT_GE(ran, 3U);
}

TEST(CliHelp, FrontierExamplesRunAndFindAFrontier) {
  const std::vector<std::string> examples = examples_of(help_of("frontier"), "frontier");
  ASSERT_GE(examples.size(), 3U);
  const std::regex trial_line(R"(^\s+[0-9,]+ B  \([^)]+\) +\w+.*$)");
  for (const std::string& example : examples) {
    SCOPED_TRACE(example);
    const fs::path dir = temp_folder("example");
    const ChildResult r = run_example(example, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err_tail;
    EXPECT_NE(r.out.find("completes at"), std::string::npos) << r.out;
    std::istringstream err(r.err_tail);
    std::size_t trials = 0;
    for (std::string line; std::getline(err, line);)
      trials += std::regex_match(line, trial_line) ? 1 : 0;
    EXPECT_GE(trials, 2U) << "every trial in exact bytes:\n" << r.err_tail;
    if (const auto out = example.find("--out "); out != std::string::npos) {
      const std::string folder = example.substr(out + 6, example.find(' ', out + 6) - out - 6);
      const auto json = nlohmann::json::parse(read_text(dir / folder / "frontier.json"));
      EXPECT_FALSE(json.at("frontier_bytes").is_null());
    }
    if (const auto junit = example.find("--junit "); junit != std::string::npos) {
      const std::string file = example.substr(junit + 8, example.find(' ', junit + 8) - junit - 8);
      const std::string xml = read_text(dir / file);
      EXPECT_NE(xml.find("<testcase classname=\"oomlab.frontier.replay\""), std::string::npos)
          << xml;
      EXPECT_EQ(xml.find("<failure"), std::string::npos) << xml;
    }
  }
}

TEST(CliHelp, FitExamplesRunAndFindAnAnswer) {
  const std::vector<std::string> examples = examples_of(help_of("fit"), "fit");
  ASSERT_GE(examples.size(), 3U);
  for (const std::string& example : examples) {
    SCOPED_TRACE(example);
    const fs::path dir = temp_folder("fit_example");
    const ChildResult r = run_example(example, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err_tail;
    const bool json_out = example.find("--json -") != std::string::npos;
    EXPECT_NE((json_out ? r.err_tail : r.out).find("is the largest that completes under"),
              std::string::npos)
        << r.out << r.err_tail;
    if (json_out) {
      EXPECT_EQ(nlohmann::json::parse(r.out).at("schema"), "oomlab.fit.v1");
    }
    if (const auto out = example.find("--out "); out != std::string::npos) {
      const std::string folder = example.substr(out + 6, example.find(' ', out + 6) - out - 6);
      const auto json = nlohmann::json::parse(read_text(dir / folder / "fit.json"));
      EXPECT_FALSE(json.at("value").is_null());
      EXPECT_EQ(json.at("confirm").at("value_completed"), 2);
    }
  }
}

// A series of snapshots is asked for in words no other flag uses: each command shows it once.
TEST(CliHelp, FitAndWhatIfShowAnExampleMadeFromSnapshotsAtTwoValues) {
  const auto made_from = [](const std::string& command) {
    std::vector<std::string> found;
    for (const std::string& example : examples_of(help_of(command), command)) {
      if (example.find("--from batch=1,2") != std::string::npos &&
          example.find("'runs/snap_b{batch}.pickle'") != std::string::npos)
        found.push_back(example);
    }
    return found;
  };
  const std::vector<std::string> fit = made_from("fit");
  ASSERT_EQ(fit.size(), 1U) << help_of("fit");
  EXPECT_EQ(fit.front().rfind("oomlab fit replay --trace", 0), 0U) << fit.front();
  EXPECT_NE(fit.front().find("--range batch="), std::string::npos) << fit.front();
  const std::vector<std::string> whatif = made_from("whatif");
  ASSERT_EQ(whatif.size(), 1U) << help_of("whatif");
  EXPECT_NE(whatif.front().find("--at batch="), std::string::npos) << whatif.front();
}

// whatif's examples, the one made from a series too, run as written on tests/data's snapshots.
TEST(CliHelp, WhatIfExamplesRunAsWritten) {
  const std::vector<std::string> examples = examples_of(help_of("whatif"), "whatif");
  ASSERT_GE(examples.size(), 3U);
  for (const std::string& example : examples) {
    SCOPED_TRACE(example);
    const ChildResult r = run_example(example, temp_folder("whatif_example"));
    EXPECT_EQ(r.exit_code, 0) << r.err_tail;
    EXPECT_NE(r.out.find("than native ("), std::string::npos) << "its answer: " << r.out;
    if (example.find("--at batch=16") != std::string::npos) {
      EXPECT_NE(r.out.find("was not run: its trace is made from the snapshots at batch=1,2"),
                std::string::npos)
          << r.out;
    }
  }
}

TEST(CliHelp, FitExecHelpIsItsOwnAndSaysWhereTheValueGoes) {
  const std::string help = help_of("fit exec");
  for (const char* said : {"{NAME}", "OOMLAB_FIT_<NAME>", "--range", "--confirm", "fresh process"})
    EXPECT_NE(help.find(said), std::string::npos) << said << "\n" << help;
  const std::vector<std::string> examples = examples_of(help, "fit exec");
  ASSERT_GE(examples.size(), 2U) << help;
  for (const std::string& example : examples)
    EXPECT_NE(example.find("{batch}"), std::string::npos) << example;
  EXPECT_EQ(help.find("--allocator"), std::string::npos) << "fit's scenario flags are not exec's";
}

TEST(CliFrontier, ATrialPastTimeoutStopsTheSearchWithExitFour) {
  const fs::path dir = temp_folder("timeout");
  // Five seconds between two allocations, replayed at their original pace.
  std::ofstream(dir / "slow.csv") << "Thread,Time,Action,Pointer,Size,Stream\n"
                                     "1,10:00:00.000000,allocate,0x7f0000000000,1048576,0\n"
                                     "1,10:00:05.000000,allocate,0x7f0000100000,1048576,0\n"
                                     "1,10:00:05.000100,free,0x7f0000000000,1048576,0\n"
                                     "1,10:00:05.000200,free,0x7f0000100000,1048576,0\n";
  const ChildResult r =
      run_child({oomlab_binary(), "frontier", "replay", "--trace", (dir / "slow.csv").string(),
                 "-a", "sim", "-p", "pace=original", "--budget", "1GiB", "--timeout", "0.3",
                 "--out", (dir / "out").string(), "--junit", (dir / "frontier.xml").string()},
                {.timeout = std::chrono::seconds(60)});
  EXPECT_EQ(r.exit_code, 4) << r.err_tail;
  EXPECT_LT(r.seconds, 4.0) << "the trial was stopped, not waited for";
  EXPECT_NE(r.out.find("1,073,741,824 B (1.00 GiB) passed --timeout 0.3 s"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err_tail.find("1,073,741,824 B"), std::string::npos) << r.err_tail;
  const auto json = nlohmann::json::parse(read_text(dir / "out" / "frontier.json"));
  EXPECT_TRUE(json.at("timed_out").get<bool>());
  EXPECT_TRUE(json.at("frontier_bytes").is_null());
  EXPECT_EQ(json.at("trials").size(), 1U);
  EXPECT_NE(read_text(dir / "frontier.xml").find("<error"), std::string::npos);
}

TEST(CliFrontier, ARunThatNeverCompletesFailsItsJunitCase) {
  const fs::path dir = temp_folder("never");
  const ChildResult r = run_child({oomlab_binary(), "frontier", "fragmentation", "-a", "sim",
                                   "--budget", "64MiB", "--junit", (dir / "f.xml").string()},
                                  {.timeout = std::chrono::seconds(60)});
  EXPECT_EQ(r.exit_code, 1) << r.err_tail;
  EXPECT_NE(r.out.find("does not complete even at 64.0 MiB (67,108,864 B)"), std::string::npos)
      << r.out;
  EXPECT_NE(read_text(dir / "f.xml").find("<failure"), std::string::npos);
}

TEST(CliFrontier, UnwritableOutputsAreRefusedBeforeTheSearch) {
  const fs::path dir = temp_folder("refused");
  const ChildResult r = run_child({oomlab_binary(), "frontier", "leak", "-a", "sim", "--junit",
                                   (dir / "no" / "such" / "f.xml").string()},
                                  {.timeout = std::chrono::seconds(30)});
  EXPECT_EQ(r.exit_code, 5) << "an output that cannot be written, as after a search";
  EXPECT_NE(r.err_tail.find("oomlab: error: --junit: cannot write"), std::string::npos)
      << r.err_tail;
  EXPECT_EQ(r.err_tail.find(" B "), std::string::npos) << "no trial ran";
}

}  // namespace
}  // namespace oomlab::cli
