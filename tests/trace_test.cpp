// Traces: the reference figures of docs/traces.md, each importer on our own small traces,
// every kind of bad input refused with its place, and replay's streams, pace and frontier.
#include "trace/trace.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "oomlab/error.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "run/frontier.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"
#include "trace/importers.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;

const fs::path kData = fs::path(testing::test_data_dir());
const fs::path kPickle = kData / "pytorch_gpt_fp32_snapshot.pickle";
const fs::path kJson = kData / "pytorch_gpt_fp32_snapshot.json";

using testing::metric;

RunResult replay(const fs::path& trace, std::uint64_t budget, const std::string& level = "tensor",
                 const std::string& allocator = "sim") {
  RunConfig config = testing::make_run_config("replay", allocator, budget);
  config.params.set("trace", trace.string());
  config.params.set("level", level);
  return run_scenario(config);
}

// docs/traces.md, "Reference figures": what the snapshot itself says. The history began after three
// blocks (65 MiB, in three segments of 66 MiB: cuBLAS workspaces and one small block) were made;
// with them placed before its first entry, the replay's peaks are the ones PyTorch itself reported
// (memory_stats: requested_bytes.all.peak and reserved_bytes.all.peak).
class ReferenceFigures : public ::testing::TestWithParam<fs::path> {};

constexpr double kLiveBefore = 68'157'440;      // 65 MiB in 3 blocks
constexpr double kSegmentsBefore = 69'206'016;  // 66 MiB in 3 segments

TEST_P(ReferenceFigures, TensorLevelPeakAndWhatIsLeftAtTheEnd) {
  const RunResult r = replay(GetParam(), 80_GiB, "tensor");
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(metric(r, "peak_live_bytes"), 7'987'844'100.0 + kLiveBefore);
  EXPECT_EQ(metric(r, "peak_live_bytes"), 8'056'001'540.0) << "PyTorch's requested_bytes peak";
  EXPECT_EQ(metric(r, "initial_blocks"), 3.0);
  EXPECT_EQ(metric(r, "unknown_frees"), 0.0);
  EXPECT_EQ(metric(r, "still_live_blocks"), 228.0 + 3);
  EXPECT_EQ(metric(r, "still_live_bytes"), 327'996'420.0 + kLiveBefore);
  EXPECT_EQ(metric(r, "trace_first_failure_index"), 16'794.0) << "the trace's own OOM entry";
  EXPECT_EQ(metric(r, "trace_first_failure_bytes"), 1'073'741'824.0);
  EXPECT_EQ(metric(r, "events_replayed"), 5766.0 + 5538 + 1);
}

TEST_P(ReferenceFigures, SegmentLevelPeak) {
  const RunResult r = replay(GetParam(), 80_GiB, "segment");
  EXPECT_EQ(metric(r, "peak_live_bytes"), 8'323'596'288.0 + kSegmentsBefore);
  EXPECT_EQ(metric(r, "peak_live_bytes"), 8'392'802'304.0) << "PyTorch's reserved_bytes peak";
  EXPECT_EQ(metric(r, "initial_blocks"), 3.0);
  EXPECT_EQ(metric(r, "events_replayed"), 121.0 + 37 + 1);
  EXPECT_EQ(metric(r, "trace_first_failure_index"), 16'794.0);
}

TEST_P(ReferenceFigures, AtTheOriginalBudgetTheReplayFailsWherePyTorchDid) {
  const RunResult r = replay(GetParam(), 8'501'749'350, "segment");
  ASSERT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(metric(r, "first_failure_index"), 16'794.0);
  EXPECT_EQ(metric(r, "failed_at_same_place"), 1.0);
  EXPECT_EQ(r.oom->request_bytes, 1'073'741'824U);
}

INSTANTIATE_TEST_SUITE_P(PickleAndJson, ReferenceFigures, ::testing::Values(kPickle, kJson));

TEST(PyTorchSnapshot, PickleAndJsonGiveTheSameTrace) {
  const trace::Trace a = trace::load(kPickle, {});
  const trace::Trace b = trace::load(kJson, {});
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    ASSERT_EQ(a.events[i].bytes, b.events[i].bytes) << i;
    ASSERT_EQ(a.events[i].index, b.events[i].index) << i;
    ASSERT_EQ(a.events[i].slot, b.events[i].slot) << i;
    ASSERT_EQ(a.recorded->frames_of(i), b.recorded->frames_of(i)) << i;
    ASSERT_EQ(a.recorded->device_free_at(i), b.recorded->device_free_at(i)) << i;
  }
  EXPECT_EQ(a.recorded->emptied_cache_before, b.recorded->emptied_cache_before);
  EXPECT_EQ(a.format, torch::pytorch_format());
  EXPECT_EQ(a.ignored, 5538U + 121 + 37) << "free_requested and segment entries at tensor level";
}

TEST(PyTorchSnapshot, AskingForAnotherDeviceSaysWhichExist) {
  try {
    (void)trace::load(kPickle, {.device = 3});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no trace for device 3: the snapshot has 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(RmmLog, ThreadsStreamsTimesAndLinksAcrossMidnight) {
  const trace::Trace t = trace::load(kData / "rmm_two_threads_two_streams.csv", {});
  EXPECT_EQ(t.format, trace::Format::rmm);
  ASSERT_EQ(t.events.size(), 7U);
  EXPECT_EQ(t.threads, 2U);
  EXPECT_EQ(t.streams, (std::vector<std::uint64_t>{0, 0x7f8a38001020}));
  EXPECT_EQ(t.events[1].stream, 1U);
  EXPECT_EQ(t.events[3].t_ns, 110'000'000U) << "23:59:59.90 to 00:00:00.01 is 110 ms";
  EXPECT_EQ(t.events[3].op, trace::Op::free);
  EXPECT_NE(t.events[3].slot, trace::Event::kNone) << "the free found its allocation";
  EXPECT_EQ(t.events[5].slot, t.events[0].slot);
  EXPECT_EQ(t.events[6].slot, t.events[2].slot);
  EXPECT_EQ(t.events[3].line, 5U);
  EXPECT_EQ(t.unknown_frees, 0U);
  EXPECT_EQ(t.slots, 3U) << "at most three blocks are live at once";
  EXPECT_EQ(t.events[3].slot, t.events[1].slot) << "a free names its allocation's slot";
  EXPECT_EQ(t.events[4].slot, t.events[1].slot) << "a freed slot is taken again";
  EXPECT_NE(t.events[2].slot, t.events[0].slot);
}

TEST(RmmLog, AnAllocateFailureTheProgramWentOnFromIsRefusedAgainNotItsOom) {
  // The program allocated again after its 1 GiB request failed: it survived the refusal, so a
  // replay that refuses it too goes on, as the program did (issue 33).
  const trace::Trace t = trace::load(kData / "rmm_allocate_failure.csv", {});
  EXPECT_EQ(t.events[2].op, trace::Op::failed);
  EXPECT_FALSE(t.recorded) << "an RMM log has no PyTorch part";
  EXPECT_EQ(t.events[2].bytes, 1_GiB);
  EXPECT_TRUE(trace::survived_failure(t, 2));
  EXPECT_EQ(trace::fatal_failure_at(t), trace::Event::kNone);
  const RunResult r = replay(kData / "rmm_allocate_failure.csv", 1_GiB);
  EXPECT_EQ(r.outcome, Outcome::completed);
  EXPECT_EQ(metric(r, "first_failure_index"), 2.0) << "refused again, and counted";
  EXPECT_EQ(metric(r, "first_failure_line"), 4.0);
  EXPECT_EQ(metric(r, "survived_refused_again"), 1.0);
  EXPECT_EQ(metric(r, "failed_at_same_place"), 0.0) << "the program never failed for good";
  const RunResult big = replay(kData / "rmm_allocate_failure.csv", 4_GiB);
  EXPECT_EQ(big.outcome, Outcome::completed) << "with more memory the failed request fits";
  EXPECT_EQ(metric(big, "survived_refused_again"), 0.0);
}

TEST(OomlabTrace, ARunsEventsReplayAsTheyAre) {
  const trace::Trace t = trace::load(kData / "oomlab_fragmentation_8MiB.csv", {});
  EXPECT_EQ(t.format, trace::Format::oomlab);
  EXPECT_GT(t.ignored, 0U) << "marks and probes are not the program's";
  const RunResult r = replay(kData / "oomlab_fragmentation_8MiB.csv", 8_MiB);
  EXPECT_EQ(r.outcome, Outcome::oom);
  EXPECT_EQ(metric(r, "failed_at_same_place"), 1.0) << "the fill's refusal comes at the same event";
  EXPECT_EQ(metric(r, "still_live_blocks"), 0.0);
}

TEST(Replay, StreamsOfTheTraceBecomeStreamsOfTheRun) {
  const fs::path events = fs::temp_directory_path() / "oomlab_replay_streams.csv";
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", (kData / "rmm_two_threads_two_streams.csv").string());
  config.events_csv = events;
  const RunResult r = run_scenario(config);
  EXPECT_EQ(metric(r, "streams"), 2.0);
  const trace::Trace written = trace::load(events, {});
  EXPECT_EQ(written.streams.size(), 2U) << "two streams in the run's own events.csv";
  fs::remove(events);
}

TEST(Replay, OriginalPaceKeepsTheRecordedGaps) {
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", (kData / "rmm_two_threads_two_streams.csv").string());
  config.params.set("pace", std::string("original"));
  const auto start = std::chrono::steady_clock::now();
  (void)run_scenario(config);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(140))
      << "the trace spans 140 ms";
}

TEST(Replay, UnknownFreesAreCountedOrRefusedWhenStrict) {
  const fs::path file = fs::temp_directory_path() / "oomlab_unknown_free.csv";
  std::ofstream(file) << "Thread,Time,Action,Pointer,Size,Stream\n1,10:00:00.0,allocate,0x10,64,0\n"
                         "1,10:00:00.1,free,0x99,64,0\n1,10:00:00.2,free,0x10,64,0\n";
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", file.string());
  const RunResult r = run_scenario(config);
  EXPECT_EQ(metric(r, "unknown_frees"), 1.0);
  EXPECT_EQ(metric(r, "still_live_blocks"), 0.0);
  config.params.set("strict", true);
  try {
    (void)run_scenario(config);
    FAIL() << "strict let an unknown free through";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    // Named by the file's line where the format has lines: the header is line 1.
    EXPECT_NE(std::string(e.what()).find("oomlab_unknown_free.csv:3: entry 1 frees an address "
                                         "that was never allocated"),
              std::string::npos)
        << e.what();
  }
  fs::remove(file);
}

// An address allocated again before its free (a log that lost the free, or doubled a line): the
// earlier block stays live, noted; under --strict an error at the line.
TEST(Replay, AnAllocationAtALiveAddressIsNotedOrRefusedWhenStrict) {
  const fs::path file = fs::temp_directory_path() / "oomlab_live_again.csv";
  std::ofstream(file) << "Thread,Time,Action,Pointer,Size,Stream\n1,10:00:00.0,allocate,0x10,64,0\n"
                         "1,10:00:00.1,allocate,0x10,32,0\n1,10:00:00.2,free,0x10,32,0\n";
  RunConfig config = testing::make_run_config("replay", "sim", 1_GiB);
  config.params.set("trace", file.string());
  const RunResult r = run_scenario(config);
  EXPECT_EQ(metric(r, "still_live_blocks"), 1.0) << "the first 64 B block, never freed";
  EXPECT_EQ(metric(r, "unknown_frees"), 0.0);
  bool noted = false;
  for (const std::string& note : r.notes)
    noted = noted || note.find("at an address still allocated") != std::string::npos;
  EXPECT_TRUE(noted);
  config.params.set("strict", true);
  try {
    (void)run_scenario(config);
    FAIL() << "strict let an allocation at a live address through";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("oomlab_live_again.csv:3: entry 1 allocates at an "
                                         "address that is still allocated"),
              std::string::npos)
        << e.what();
  }
  fs::remove(file);
}

TEST(Frontier, FindsTheSmallestBudgetThatCompletesTo2MiB) {
  RunConfig config = testing::make_run_config("replay", "sim", 16_GiB);
  config.params.set("trace", kPickle.string());
  config.params.set("level", std::string("segment"));
  const FrontierResult f = find_frontier(config, kDevicePageBytes, nullptr);
  ASSERT_TRUE(f.answer.has_value());
  EXPECT_EQ(*f.answer - f.beyond.value_or(0), kDevicePageBytes);
  // Segments of 8,323,596,288 B at the peak, 66 MiB of segments from before the history began,
  // and the trace's own failed 1 GiB request on top of what was live when it was made: all in
  // whole 2 MiB pages.
  EXPECT_EQ(*f.answer, 9'311'354'880U + 69'206'016U);
  EXPECT_LE(f.trials.size(), 16U);
  EXPECT_TRUE(f.simulated);
}

TEST(Frontier, SaysSoWhenNothingCompletes) {
  const FrontierResult f = find_frontier(testing::make_run_config("fragmentation", "sim", 64_MiB),
                                         kDevicePageBytes, nullptr);
  EXPECT_FALSE(f.answer.has_value());
  EXPECT_EQ(f.trials.size(), 1U);
}

// Bad input: one Error(input) naming the place, never a crash.
struct BadTrace {
  std::string name;
  std::string content;
  std::string fragment;
};

class BadTraces : public ::testing::TestWithParam<BadTrace> {};

TEST_P(BadTraces, AreRefusedWithTheirPlace) {
  const fs::path file = fs::temp_directory_path() / ("oomlab_bad_" + GetParam().name);
  std::ofstream(file, std::ios::binary) << GetParam().content;
  try {
    (void)trace::load(file, {});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(file.string(), 0), 0U) << "names the file first: " << what;
    EXPECT_NE(what.find(GetParam().fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
  }
  fs::remove(file);
}

const std::string kRmmHeader = "Thread,Time,Action,Pointer,Size,Stream\n";
const std::string kOomlabHeader =
    "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes\n";

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadTraces,
    ::testing::Values(
        BadTrace{"empty.csv", "", "the trace is empty"},
        BadTrace{"other.txt", "hello\n", "not a trace oomlab knows"},
        // gzip's magic number: a snapshot saved as .pickle.gz was "not a pickle" without a word
        BadTrace{"snapshot.pickle.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8),
                 "gzip-compressed: decompress it first (gunzip "},
        BadTrace{"rmm_few.csv", kRmmHeader + "1,10:00:00.0,allocate,0x10\n", ":2: too few columns"},
        BadTrace{"rmm_hex.csv", kRmmHeader + "1,10:00:00.0,allocate,0xZZ,64,0\n",
                 ":2: Pointer: '0xZZ' is not a hexadecimal"},
        BadTrace{"rmm_neg.csv", kRmmHeader + "1,10:00:00.0,allocate,0x10,-64,0\n",
                 ":2: Size: '-64' is a negative size"},
        BadTrace{"rmm_huge.csv", kRmmHeader + "1,10:00:00.0,allocate,0x10,99999999999999999999,0\n",
                 ":2: Size: '99999999999999999999' is out of range"},
        BadTrace{"rmm_absurd.csv",
                 kRmmHeader + "1,10:00:00.0,allocate,0x10,1000000000000000000,0\n",
                 "not a size any allocator has"},
        BadTrace{"rmm_time.csv", kRmmHeader + "1,25:00:00.0,allocate,0x10,64,0\n",
                 ":2: Time: '25:00:00.0' is not a time of day"},
        BadTrace{"rmm_action.csv", kRmmHeader + "1,10:00:00.0,reserve,0x10,64,0\n",
                 "'reserve' is not an RMM action"},
        BadTrace{"oomlab_op.csv", kOomlabHeader + "0,1,0,x,steal,64,0x10,0x0,0,ok,0,0\n",
                 ":2: op: 'steal' is not an oomlab op"},
        BadTrace{"oomlab_missing.csv", "seq,t_ns,step,phase,op,bytes,ptr\n0,1,0,x,alloc,64,0x10\n",
                 ":1: the header lacks the column"},
        BadTrace{"truncated.pickle",
                 std::string("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x05"
                             "act",
                             19),
                 "byte 14: the file ends inside a string"},
        BadTrace{
            "global.pickle",
            std::string("\x80\x02\x63\x5f\x5f\x62\x75\x69\x6c\x74\x69\x6e\x5f\x5f\x0a\x73\x65\x74"
                        "\x0a\x71\x00\x5d\x71\x01\x85\x71\x02\x52\x71\x03\x2e",
                        31),
            "byte 2: opcode GLOBAL (0x63) would import or build an object or call code: refused"},
        BadTrace{"stack_global.pickle",
                 std::string(
                     "\x80\x04\x95\x2e\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x62\x75\x69\x6c\x74\x69"
                     "\x6e\x73\x94\x8c\x07\x63\x6f\x6d\x70\x6c\x65\x78\x94\x93\x94\x47\x3f\xf0\x00"
                     "\x00\x00\x00\x00\x00\x47\x40\x00\x00\x00\x00\x00\x00\x00\x86\x94\x52\x94\x2e",
                     57),
                 "opcode STACK_GLOBAL (0x93)"},
        BadTrace{"protocol1.pickle", std::string("\x80\x01}q\x00.", 6),
                 "pickle protocol 1: only 2 to 5 are read"},
        BadTrace{"no_traces.json", R"({"segments": []})", "no 'device_traces'"},
        BadTrace{"syntax.json", R"({"device_traces": [[{"action": "alloc",]]})",
                 "byte 40: parse error at line 1, column 40"},
        BadTrace{"size_type.json",
                 R"({"device_traces": [[{"action": "alloc", "addr": 1, "size": "big"}]]})",
                 "device_traces[0][0]: 'size' is not an integer"},
        BadTrace{"missing_addr.json", R"({"device_traces": [[{"action": "alloc", "size": 1}]]})",
                 "device_traces[0][0]: 'addr' is missing"},
        BadTrace{"shape.json", R"({"device_traces": {"0": []}})", "device_traces: not a list"}),
    [](const auto& test) {
      std::string name = test.param.name;
      std::replace(name.begin(), name.end(), '.', '_');
      return name;
    });

}  // namespace
}  // namespace oomlab
