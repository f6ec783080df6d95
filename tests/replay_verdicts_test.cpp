// Replay verdicts: which failure a replay reports (the request that ended it, or the program's own
// failure reproduced), the program's failures counted over the whole trace, one numbering (trace
// entries and lines) in the header, the notes and the metrics, the two peaks, zero-byte
// allocations, CSV traces as editors and Windows write them, and a load that stops when asked.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "oomlab/error.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"
#include "trace/load_status.hpp"
#include "trace/trace.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using testing::metric;

const fs::path kData = fs::path(testing::test_data_dir());

struct RmmRow {
  std::string action;
  std::string pointer;
  std::uint64_t bytes;
};

// An RMM log as logging_resource_adaptor writes it: a row every 100 µs, thread 1, stream 0.
std::string rmm_log(const std::vector<RmmRow>& rows) {
  std::string text = "Thread,Time,Action,Pointer,Size,Stream\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    text += fmt::format("1,10:00:{:02}.{:06},{},{},{},0\n", i / 10'000, (i % 10'000) * 100,
                        rows[i].action, rows[i].pointer, rows[i].bytes);
  }
  return text;
}

// 1 MiB blocks allocated and freed in pairs: rows that change nothing, to put the rows that matter
// on the lines a test wants.
void add_filler(std::vector<RmmRow>& rows, std::size_t pairs) {
  for (std::size_t i = 0; i < pairs; ++i) {
    rows.push_back({"allocate", "0x7e0000000000", 1_MiB});
    rows.push_back({"free", "0x7e0000000000", 1_MiB});
  }
}

fs::path write_file(const std::string& name, const std::string& content) {
  const fs::path file = fs::temp_directory_path() / ("oomlab_verdicts_" + name);
  std::ofstream(file, std::ios::binary) << content;
  return file;
}

RunResult replay(const fs::path& trace, std::uint64_t budget) {
  RunConfig config = testing::make_run_config("replay", "sim", budget);
  config.params.set("trace", trace.string());
  return run_scenario(config);
}

bool has_note(const RunResult& r, std::string_view text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

std::string all_notes(const RunResult& r) {
  std::string out;
  for (const std::string& n : r.notes)
    out += n + "\n";
  return out;
}

using CliOutcome = ::oomlab::testing::CliRun;

CliOutcome oomlab_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

// The case: the program's own 1 GiB request failed at line 42 and it went on; replayed
// at 1 GiB that request is refused again (a refusal it survived, so the replay goes on), and the
// replay really breaks at line 250 on a request of 768 MiB the program got.
fs::path failure_at_42_break_at_250() {
  std::vector<RmmRow> rows{{"allocate", "0x7f0000000000", 512_MiB}};  // line 2
  add_filler(rows, 19);                                               // lines 3 to 40
  rows.push_back({"allocate", "0x7f0020000000", 256_MiB});            // line 41
  rows.push_back({"allocate failure", "(nil)", 1_GiB});               // line 42
  rows.push_back({"free", "0x7f0020000000", 256_MiB});                // line 43
  add_filler(rows, 103);                                              // lines 44 to 249
  rows.push_back({"allocate", "0x7f0040000000", 768_MiB});            // line 250
  rows.push_back({"free", "0x7f0040000000", 768_MiB});
  rows.push_back({"free", "0x7f0000000000", 512_MiB});
  return write_file("break_at_250.csv", rmm_log(rows));
}

TEST(ReplayVerdicts, TheOomIsTheRequestThatEndedTheReplayNotTheProgramsOwnFailure) {
  const RunResult r = replay(failure_at_42_break_at_250(), 1_GiB);
  ASSERT_EQ(r.outcome, Outcome::oom);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->trace_entry, 248U);
  EXPECT_EQ(r.oom->trace_line, 250U);
  EXPECT_EQ(r.oom->request_bytes, 768_MiB);
  EXPECT_EQ(r.oom->request_label, "trace allocation");
  EXPECT_EQ(metric(r, "first_failure_index"), 40.0) << "the first failed request, of any kind";
  EXPECT_EQ(metric(r, "first_failure_line"), 42.0);
  EXPECT_EQ(metric(r, "reproduced_failures"), 0.0) << "the program survived it: not its OOM";
  EXPECT_EQ(metric(r, "survived_refused_again"), 1.0);
  EXPECT_EQ(metric(r, "trace_failures"), 1.0);
  EXPECT_EQ(metric(r, "trace_first_failure_index"), 40.0);
  EXPECT_EQ(metric(r, "failed_at_same_place"), 0.0);
  EXPECT_TRUE(has_note(r, "the replay broke at entry 248 (line 250)")) << all_notes(r);
  EXPECT_TRUE(has_note(r,
                       "before it, 1 request(s) the program survived being refused were refused "
                       "here too (the first at entry 40 (line 42)"))
      << all_notes(r);
  EXPECT_FALSE(has_note(r, "where the program first failed")) << all_notes(r);
}

TEST(ReplayVerdicts, TheHeaderTheNotesAndTheJsonNameTheTraceEntryAndLine) {
  const fs::path folder = fs::temp_directory_path() / "oomlab_verdicts_cli";
  fs::remove_all(folder);
  const CliOutcome o =
      oomlab_cli({"run", "replay", "--trace", failure_at_42_break_at_250().string(), "-a", "sim",
                  "-b", "1GiB", "--json", "-", "--out", folder.string()});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("request    768 MiB ('trace allocation') at trace entry 248 (line 250),"),
            std::string::npos)
      << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc.at("oom").at("trace_entry"), 248);
  EXPECT_EQ(doc.at("oom").at("trace_line"), 250);
  EXPECT_EQ(doc.at("metrics").at("first_failure_index"), 40);
  EXPECT_EQ(doc.at("metrics").at("first_failure_line"), 42);
  fs::remove_all(folder);
}

TEST(ReplayVerdicts, OnlyTheProgramsOwnFailuresFailing_TheFirstOfThemIsTheOomReproduced) {
  const fs::path file =
      write_file("reproduced.csv", rmm_log({{"allocate", "0x10000000", 512_MiB},  // entry 0
                                            {"allocate failure", "(nil)", 256_MiB},
                                            {"allocate", "0x40000000", 256_MiB},
                                            {"allocate failure", "(nil)", 512_MiB},  // entry 3
                                            {"allocate failure", "(nil)", 2_GiB},
                                            {"free", "0x40000000", 256_MiB},
                                            {"free", "0x10000000", 512_MiB}}));
  const RunResult r = replay(file, 1_GiB);
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(r.oom->trace_entry, 3U) << "the first that failed again, not the later one";
  EXPECT_EQ(r.oom->request_bytes, 512_MiB);
  EXPECT_EQ(metric(r, "events_replayed"), 7.0) << "a failure made again does not end the replay";
  EXPECT_EQ(metric(r, "reproduced_failures"), 2.0);
  EXPECT_EQ(metric(r, "first_failure_index"), 3.0);
  EXPECT_EQ(metric(r, "trace_failures"), 3.0);
  EXPECT_EQ(metric(r, "trace_first_failure_index"), 1.0);
  // Entry 1 was a refusal the program survived (it allocated after it); its OOM was entry 3.
  EXPECT_EQ(metric(r, "failed_at_same_place"), 1.0) << "entry 1 fits at 1 GiB; entry 3 does not";
  EXPECT_TRUE(has_note(r,
                       "the OOM reproduced: the program's own failed request of 512 MiB, at "
                       "entry 3 (line 5), 0.000300 s into the trace, failed again, where the "
                       "program first failed"))
      << all_notes(r);
  EXPECT_TRUE(has_note(r, "(2 of its 2 failed requests failed again)")) << all_notes(r);
}

TEST(ReplayVerdicts, ARefusalTheProgramSurvivedIsNotWhereItFirstFailed) {
  // As above, with the OOM at entry 3 fitting too: only what the program survived fails here.
  const fs::path file =
      write_file("survived_only.csv", rmm_log({{"allocate", "0x10000000", 512_MiB},
                                               {"allocate failure", "(nil)", 768_MiB},
                                               {"allocate", "0x40000000", 256_MiB},
                                               {"allocate failure", "(nil)", 128_MiB},
                                               {"free", "0x40000000", 256_MiB},
                                               {"free", "0x10000000", 512_MiB}}));
  const RunResult r = replay(file, 1_GiB);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(metric(r, "survived_refused_again"), 1.0);
  EXPECT_EQ(metric(r, "reproduced_failures"), 0.0);
  EXPECT_TRUE(has_note(r, "the program failed at entry 3 (line 5)")) << all_notes(r);
}

TEST(ReplayVerdicts, TheProgramsFailuresAreCountedOverTheWholeTraceNotThePartReplayed) {
  const fs::path file =
      write_file("fails_later.csv", rmm_log({{"allocate", "0x10000000", 2_GiB},  // breaks at 1 GiB
                                             {"free", "0x10000000", 2_GiB},
                                             {"allocate", "0x20000000", 64_MiB},
                                             {"allocate failure", "(nil)", 4_GiB},  // entry 3
                                             {"free", "0x20000000", 64_MiB}}));
  const RunResult r = replay(file, 1_GiB);
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(metric(r, "trace_failures"), 1.0);
  EXPECT_EQ(metric(r, "trace_first_failure_index"), 3.0);
  EXPECT_EQ(metric(r, "first_failure_index"), 0.0);
  EXPECT_EQ(metric(r, "reproduced_failures"), 0.0);
  EXPECT_TRUE(has_note(r, "the program failed later, at entry 3 (line 5)")) << all_notes(r);
  EXPECT_FALSE(has_note(r, "never failed")) << all_notes(r);
  // The two peaks are the trace's, whatever part of it was replayed.
  EXPECT_EQ(metric(r, "peak_live_bytes"), static_cast<double>(2_GiB));
  EXPECT_EQ(metric(r, "peak_with_failed_bytes"), static_cast<double>(64_MiB + 4_GiB));
  EXPECT_TRUE(has_note(r, "the trace's own demand peaks at 2.00 GiB live, at entry 0 (line 2)"))
      << all_notes(r);
}

TEST(ReplayVerdicts, ABinaryTraceHasNoLineAndTheHeaderNamesTheSnapshotEntry) {
  const fs::path folder = fs::temp_directory_path() / "oomlab_verdicts_pickle";
  fs::remove_all(folder);
  const std::string snapshot = (kData / "pytorch_gpt_fp32_snapshot.pickle").string();
  const CliOutcome o = oomlab_cli({"run", "replay", "--trace", snapshot, "-a", "torch", "--budget",
                                   "8501749350", "--json", "-", "--out", folder.string()});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_TRUE(doc.at("metrics").at("first_failure_line").is_null()) << doc.at("metrics");
  EXPECT_EQ(doc.at("metrics").at("first_failure_index"), 16794);
  EXPECT_EQ(doc.at("oom").at("trace_entry"), 16794);
  EXPECT_TRUE(doc.at("oom").at("trace_line").is_null());
  EXPECT_NE(o.err.find("at trace entry 16,794, step"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("first_failure_line none"), std::string::npos) << o.err;
  fs::remove_all(folder);
}

TEST(ReplayVerdicts, ZeroByteAllocationsAreNotLiveBlocks) {
  // RMM logs a zero-byte allocation, and its free, with a (nil) pointer.
  const fs::path file = write_file("zero.csv", rmm_log({{"allocate", "(nil)", 0},
                                                        {"allocate", "0x10000000", 64_MiB},
                                                        {"free", "(nil)", 0},
                                                        {"free", "0x10000000", 64_MiB},
                                                        {"allocate", "(nil)", 0}}));
  const trace::Trace t = trace::load(file, {});
  EXPECT_EQ(t.events[0].slot, trace::Event::kNone);
  EXPECT_EQ(t.slots, 1U) << "only the 64 MiB block is ever live";
  EXPECT_EQ(t.unknown_frees, 0U);
  const RunResult r = replay(file, 1_GiB);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(metric(r, "still_live_blocks"), 0.0);
  EXPECT_EQ(metric(r, "events_replayed"), 5.0);
}

// CSV traces with a UTF-8 byte-order mark, CRLF line ends and blank lines (before the header
// too): read as the same trace, the format detected, the lines those of the file.
struct TextTrace {
  std::string name;
  std::string header;
  std::string alloc_row;
  std::string free_row;
};

class CsvText : public ::testing::TestWithParam<TextTrace> {};

TEST_P(CsvText, ByteOrderMarkCrlfAndBlankLinesAreAccepted) {
  const TextTrace& p = GetParam();
  const std::string content = "\xEF\xBB\xBF\r\n" + p.header + "\r\n\r\n" + p.alloc_row +
                              "\r\n   \r\n\r\n" + p.free_row + "\r\n\r\n";
  const fs::path file = write_file(p.name, content);
  const trace::Trace t = trace::load(file, {});
  ASSERT_EQ(t.events.size(), 2U);
  EXPECT_EQ(t.events[0].op, trace::Op::alloc);
  EXPECT_EQ(t.events[0].bytes, 64_MiB);
  EXPECT_NE(t.events[0].slot, trace::Event::kNone);
  EXPECT_EQ(t.events[1].slot, t.events[0].slot) << "the free found its allocation";
  EXPECT_EQ(t.events[0].line, 4U);
  EXPECT_EQ(t.events[1].line, 7U);
  const RunResult r = replay(file, 1_GiB);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(metric(r, "still_live_blocks"), 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, CsvText,
    ::testing::Values(TextTrace{"rmm_text.csv", "Thread,Time,Action,Pointer,Size,Stream",
                                "1,10:00:00.000000,allocate,0x10000000,67108864,0",
                                "1,10:00:00.000100,free,0x10000000,67108864,0"},
                      TextTrace{"oomlab_text.csv",
                                "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,"
                                "reserved_bytes",
                                "0,0,0,replay,alloc,67108864,0x10000000,0x0,0,ok,67108864,67108864",
                                "1,100,0,replay,free,67108864,0x10000000,0x0,0,ok,0,0"}),
    [](const auto& test) { return test.param.name.substr(0, test.param.name.find('.')); });

// An RMM log of `rows` 1 MiB allocations and frees: large enough to take a while to read.
fs::path long_rmm_log(const std::string& name, std::size_t pairs) {
  std::vector<RmmRow> rows;
  add_filler(rows, pairs);
  return write_file(name, rmm_log(rows));
}

// The same as oomlab's own events.csv.
fs::path long_oomlab_csv(const std::string& name, std::size_t pairs) {
  std::string text =
      "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes\n";
  for (std::size_t i = 0; i < pairs; ++i) {
    text += fmt::format("{},{},0,replay,alloc,1048576,0x7e0000000000,0x0,0,ok,1048576,2097152\n",
                        2 * i, 200 * i);
    text += fmt::format("{},{},0,replay,free,1048576,0x7e0000000000,0x0,0,ok,0,0\n", 2 * i + 1,
                        200 * i + 100);
  }
  return write_file(name, text);
}

// A trace for the loader, written when its test runs: the long ones took half of every test
// process's start (gtest makes a suite's parameters when it registers the suite, in every process).
struct TraceToLoad {
  std::string name;
  fs::path (*make)();
};

class LoadStops : public ::testing::TestWithParam<TraceToLoad> {};

TEST_P(LoadStops, TheLoaderPollsItsStopCheckAndStopsWhenItThrows) {
  int calls = 0;
  trace::LoadOptions options;
  options.check_stop = [&calls] {
    if (++calls == 3) throw TimedOut();
  };
  EXPECT_THROW((void)trace::load(GetParam().make(), options), TimedOut);
  EXPECT_EQ(calls, 3) << "polled while reading, and not again once stopped";
}

INSTANTIATE_TEST_SUITE_P(
    Formats, LoadStops,
    ::testing::Values(
        TraceToLoad{"long_rmm.csv", [] { return long_rmm_log("long_rmm.csv", 10'000); }},
        TraceToLoad{"long_oomlab.csv", [] { return long_oomlab_csv("long_oomlab.csv", 10'000); }},
        TraceToLoad{"pytorch_gpt_fp32_snapshot.pickle",
                    [] { return kData / "pytorch_gpt_fp32_snapshot.pickle"; }},
        TraceToLoad{"pytorch_gpt_fp32_snapshot.json",
                    [] { return kData / "pytorch_gpt_fp32_snapshot.json"; }}),
    [](const auto& test) {
      std::string name = test.param.name;
      std::replace(name.begin(), name.end(), '.', '_');
      return name;
    });

TEST(LoadStops, ARunAskedToStopDuringTheLoadIsInterruptedBeforeItStarts) {
  const std::atomic<bool> stop{true};
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", long_rmm_log("stop_rmm.csv", 10).string());
  config.stop = &stop;
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.outcome, Outcome::interrupted);
  EXPECT_EQ(r.events, 0U);
  EXPECT_TRUE(r.metrics.empty()) << "the replay never ran";
  ASSERT_FALSE(r.notices.empty());
  EXPECT_NE(r.notices.back().find("stopped while the scenario's input was read"), std::string::npos)
      << r.notices.back();
}

TEST(LoadStops, TheTimeoutCountsTheLoadAndTheRecordIsWritten) {
  const fs::path folder = fs::temp_directory_path() / "oomlab_verdicts_timeout";
  fs::remove_all(folder);
  // 400,000 rows: far more than a millisecond to read.
  const fs::path trace = long_rmm_log("timeout_rmm.csv", 200'000);
  const CliOutcome o =
      oomlab_cli({"run", "replay", "--trace", trace.string(), "-a", "sim", "-b", "1GiB",
                  "--timeout", "0.001", "--json", "-", "--out", folder.string()});
  EXPECT_EQ(o.code, 4) << o.err;
  const auto doc = nlohmann::json::parse(o.out);
  EXPECT_EQ(doc.at("outcome"), "timeout");
  EXPECT_TRUE(doc.at("metrics").empty()) << "stopped before the replay began";
  EXPECT_TRUE(fs::exists(folder / "summary.json"));
  EXPECT_TRUE(fs::exists(folder / "events.csv"));
  EXPECT_NE(o.err.find("timed out while the scenario's input was read"), std::string::npos)
      << o.err;
  fs::remove_all(folder);
  fs::remove(trace);
}

}  // namespace
}  // namespace oomlab

namespace oomlab {
namespace {

// The progress line, while a trace of millions of rows is read: how far into the file, how many
// events so far (runner.hpp's ProgressSnapshot, drawn by the CLI on a terminal).
TEST(LoadProgress, TheProgressLineFollowsTheTraceAsItIsRead) {
  const fs::path trace = long_rmm_log("progress_rmm.csv", 150'000);
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", trace.string());
  std::mutex mutex;
  std::vector<ProgressSnapshot> seen;
  config.progress = [&](const ProgressSnapshot& s) {
    const std::lock_guard lock(mutex);
    seen.push_back(s);
  };
  config.progress_interval = std::chrono::milliseconds(1);
  const RunResult r = run_scenario(config);
  EXPECT_EQ(r.outcome, Outcome::completed);
  const std::lock_guard lock(mutex);
  std::vector<ProgressSnapshot> loading;
  std::copy_if(seen.begin(), seen.end(), std::back_inserter(loading),
               [](const ProgressSnapshot& s) { return s.loading; });
  ASSERT_FALSE(loading.empty()) << "300,000 rows take longer than a millisecond to read";
  for (std::size_t i = 0; i < loading.size(); ++i) {
    EXPECT_EQ(loading[i].phase, "load");
    EXPECT_EQ(loading[i].input_total_bytes, fs::file_size(trace));
    EXPECT_LE(loading[i].input_read_bytes, loading[i].input_total_bytes);
    if (i > 0) {
      EXPECT_GE(loading[i].events, loading[i - 1].events);
    }
  }
  EXPECT_FALSE(trace::load_status().loading) << "the load is over";
  EXPECT_FALSE(seen.back().loading) << "then the run's own line";
}

}  // namespace
}  // namespace oomlab
