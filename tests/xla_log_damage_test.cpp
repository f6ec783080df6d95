// The trace format `xla` on logs that are not whole: cut off after a request, stripped of its
// result lines, a [mem-debug] line cut short or with text before it, lines doubled, and files
// that are no XLA log at all. Each is an error at the file's line (exit 2 from the CLI), never a
// trace read as something the program did. Each log is made from the real one in
// tests/data/exec/xla_log_batch4_8gib.txt (see xla_log_test.cpp), whose line 1740 is a request of
// 4 B and whose line 139 the answer to a request of 16 MiB.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/child_process.hpp"
#include "oomlab/error.hpp"
#include "oomlab/trace.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

std::vector<std::string> fixture_lines() {
  std::istringstream in(oomlab::testing::read_text(oomlab::testing::test_data_dir() +
                                                   "/exec/xla_log_batch4_8gib.txt"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

fs::path damaged_log(const std::string& name, const std::vector<std::string>& lines) {
  const fs::path file = oomlab::testing::fresh_temp_folder("xla-log-damage-" + name) / "xla.txt";
  std::ofstream out(file);
  for (const std::string& line : lines)
    out << line << '\n';
  return file;
}

// The error loading `file` gives ("" where it loads).
std::string load_error(const fs::path& file) {
  try {
    (void)oomlab::trace::load(file, {});
  } catch (const oomlab::Error& e) {
    EXPECT_EQ(e.kind(), oomlab::ErrorKind::input) << e.what();
    return e.what();
  }
  return {};
}

// 1-based: the first line from `from` on that holds `text`, 0 for none.
std::size_t line_with(const std::vector<std::string>& lines, std::string_view text,
                      std::size_t from = 1) {
  for (std::size_t i = from - 1; i < lines.size(); ++i) {
    if (lines[i].find(text) != std::string::npos) return i + 1;
  }
  return 0;
}

oomlab::cli::ChildResult replay_cli(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      oomlab::testing::oomlab_binary(), "run", "replay", "--budget", "8GiB", "--no-out"};
  args.insert(args.end(), extra.begin(), extra.end());
  return oomlab::cli::run_child(args, {.timeout = std::chrono::seconds(120)});
}

TEST(XlaLogDamage, ALogCutOffAfterARequestIsAnErrorAtTheRequestNotTheProgramsOom) {
  std::vector<std::string> lines = fixture_lines();
  lines.resize(1740);
  ASSERT_NE(lines.back().find("] AllocateRaw GPU_0_bfc 4 alignment=64"), std::string::npos);
  const fs::path cut = damaged_log("cut", lines);
  const std::string what = load_error(cut);
  EXPECT_NE(what.find(cut.string() + ":1740: the log ends before"), std::string::npos) << what;
  EXPECT_NE(what.find("cut off"), std::string::npos) << what;
  const oomlab::cli::ChildResult r = replay_cli({"--trace", cut.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err_tail;
  EXPECT_EQ(r.err_tail.find("OOM"), std::string::npos) << r.err_tail;
}

// Cut inside a line after a request: the request is still the place named, whatever the half
// line left after it.
TEST(XlaLogDamage, ALogCutInsideALineIsAnErrorAtItsLastRequestOrTheCutLine) {
  const std::vector<std::string> whole = fixture_lines();
  std::vector<std::string> lines(whole.begin(), whole.begin() + 1740);
  for (const std::size_t keep : {std::size_t{10}, std::size_t{40}, std::size_t{75}}) {
    lines.push_back(whole[1740].substr(0, keep));  // line 1741, the request's answer, cut
    const std::string what = load_error(damaged_log("cut-line", lines));
    const bool at_request = what.find(":1740: ") != std::string::npos;
    const bool at_cut = what.find(":1741: ") != std::string::npos;
    EXPECT_TRUE(at_request || at_cut) << keep << ": " << what;
    lines.pop_back();
  }
}

// Every result line left out: the first request is an error where its thread asks again, not
// a thousand refusals the program survived.
TEST(XlaLogDamage, ALogWithoutItsResultLinesIsAnErrorAtItsFirstRequest) {
  std::vector<std::string> lines;
  for (const std::string& line : fixture_lines()) {
    if (line.find("[mem-debug] AllocateRaw,") == std::string::npos) lines.push_back(line);
  }
  const std::size_t first = line_with(lines, "] AllocateRaw GPU_0_bfc ");
  const std::size_t second = line_with(lines, "] AllocateRaw GPU_0_bfc ", first + 1);
  ASSERT_GT(first, 0U);
  const std::string what = load_error(damaged_log("no-results", lines));
  EXPECT_NE(what.find(":" + std::to_string(first) + ": a request of GPU_0_bfc"), std::string::npos)
      << what;
  EXPECT_NE(what.find("asks again on line " + std::to_string(second)), std::string::npos) << what;
}

TEST(XlaLogDamage, AMemDebugLineCutShortOrWithTextBeforeItIsAnErrorAtItsLine) {
  const std::vector<std::string> whole = fixture_lines();
  const std::string& answer = whole[138];  // line 139
  const std::size_t tag = answer.find("[mem-debug] ");
  ASSERT_NE(tag, std::string::npos);
  for (const std::string& damaged : {answer.substr(0, tag + 14), "garbage " + answer,
                                     answer.substr(0, tag) + "garbage" + answer.substr(tag)}) {
    std::vector<std::string> lines = whole;
    lines[138] = damaged;
    const std::string what = load_error(damaged_log("mem-debug", lines));
    EXPECT_NE(what.find("xla.txt:139: a [mem-debug] line"), std::string::npos) << damaged << "\n"
                                                                               << what;
  }
}

oomlab::RunResult strict_replay(const fs::path& log, bool strict) {
  oomlab::RunConfig config = oomlab::testing::make_run_config("replay", "sim", 8_GiB);
  config.params.set("trace", log.string());
  config.params.set("strict", strict);
  return oomlab::run_scenario(config);
}

// A line doubled: an allocation at an address still allocated (line 139's twice) and a free of
// one freed already (line 200's twice) replay with a note, and under --strict are errors that
// name the doubled line.
TEST(XlaLogDamage, ADoubledLineIsNotedAndUnderStrictAnErrorAtItsLine) {
  const std::vector<std::string> whole = fixture_lines();
  ASSERT_NE(whole[199].find("DeallocateRaw,GPU_0_bfc,"), std::string::npos);
  for (const std::size_t doubled : {std::size_t{139}, std::size_t{200}}) {
    std::vector<std::string> lines = whole;
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(doubled), whole[doubled - 1]);
    const fs::path log = damaged_log("doubled-" + std::to_string(doubled), lines);
    const oomlab::RunResult r = strict_replay(log, false);
    bool noted = false;
    for (const std::string& note : r.notes)
      noted = noted || note.find("line " + std::to_string(doubled + 1) + ")") != std::string::npos;
    EXPECT_TRUE(noted) << doubled;
    try {
      (void)strict_replay(log, true);
      FAIL() << "--strict let line " << doubled << " doubled through";
    } catch (const oomlab::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(log.string() + ":" + std::to_string(doubled + 1) + ": entry "),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(doubled == 139 ? "allocates at an address that is still allocated"
                                         : "frees an address that was never allocated"),
                std::string::npos)
          << what;
    }
  }
}

// --format xla on a file that is no log of XLA's says so, and nothing is said replayed.
TEST(XlaLogDamage, AFileThatIsNoXlaLogIsRefusedAsSuchBeforeAnyNote) {
  const std::string data = oomlab::testing::test_data_dir();
  const oomlab::cli::ChildResult pickle =
      replay_cli({"--trace", data + "/pytorch_gpt_fp32_snapshot.pickle", "--format", "xla"});
  EXPECT_EQ(pickle.exit_code, 2) << pickle.err_tail;
  EXPECT_NE(pickle.err_tail.find("not XLA's allocator log: a binary file"), std::string::npos)
      << pickle.err_tail;
  EXPECT_EQ(pickle.err_tail.find("replayed through"), std::string::npos) << pickle.err_tail;
  const fs::path text = damaged_log("text", {"step,loss", "1,0.5"});
  const oomlab::cli::ChildResult csv = replay_cli({"--trace", text.string(), "--format", "xla"});
  EXPECT_EQ(csv.exit_code, 2) << csv.err_tail;
  EXPECT_NE(csv.err_tail.find("not XLA's allocator log: no line begins with absl's prefix"),
            std::string::npos)
      << csv.err_tail;
  // The log itself: read, then said replayed through the model.
  const oomlab::cli::ChildResult log =
      replay_cli({"--trace", data + "/exec/xla_log_batch4_8gib.txt", "--format", "xla"});
  EXPECT_EQ(log.exit_code, 0) << log.err_tail;
  EXPECT_NE(log.err_tail.find("replayed through 'xla'"), std::string::npos) << log.err_tail;
}

}  // namespace
