// Small PyTorch snapshots, written here as JSON, for what the captured ones do not show: a
// program's own empty_cache(), told apart from PyTorch's retry after a refusal; a block freed in
// the history that was made before it; and hostile sizes that must not hang the reader.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "oomlab/error.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::metric;

constexpr std::uint64_t kA = 0x7f0000000000;
constexpr std::uint64_t kB = 0x7f0040000000;

json entry(const std::string& action, std::uint64_t addr, std::uint64_t size) {
  return {{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", 0}};
}

// A snapshot file of `entries`, with `segments` as they were at the end.
fs::path snapshot(const std::string& name, const json& entries,
                  const json& segments = json::array()) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_torch_" + name + ".json");
  std::ofstream(path) << json{{"segments", segments},
                              {"device_traces", json::array({entries})},
                              {"allocator_settings", {{"expandable_segments", false}}}}
                             .dump();
  return path;
}

RunResult torch_replay(const fs::path& trace, std::uint64_t budget,
                       const std::string& level = "tensor") {
  RunConfig config = testing::make_run_config("replay", "torch", budget);
  config.params.set("trace", trace.string());
  config.params.set("level", level);
  config.probe = false;
  return run_scenario(config);
}

// The cached 18 MiB segment is given back although nothing needed room (the next request is
// served from the cache): the program emptied its cache, and the replay does too.
TEST(TorchTrace, TheProgramsOwnEmptyCacheIsReplayed) {
  const fs::path path =
      snapshot("empty_cache",
               json::array({entry("segment_alloc", kA, 20_MiB), entry("alloc", kA, 4_MiB),
                            entry("segment_alloc", kB, 18_MiB), entry("alloc", kB, 18_MiB),
                            entry("free_completed", kB, 18_MiB), entry("segment_free", kB, 18_MiB),
                            entry("alloc", kA + 4_MiB, 2_MiB)}));
  const trace::Trace t = trace::load(path, {});
  ASSERT_TRUE(t.recorded);
  EXPECT_EQ(t.recorded->emptied_cache_before, std::vector<std::uint32_t>{3})
      << "the segment was given back before the fourth request (the third alloc)";
  const RunResult r = torch_replay(path, 1_GiB);
  EXPECT_EQ(metric(r, "segment_calls"), 3.0);
  EXPECT_EQ(metric(r, "segment_calls_matched"), 3.0);
  EXPECT_EQ(metric(r, "segment_calls_extra"), 0.0);
  fs::remove(path);
}

// An action oomlab does not know (a newer PyTorch's) was skipped without a word: one caveat
// names each such action and how many entries it had; PyTorch's own ignored ones are not named.
TEST(TorchTrace, EntriesOfAnUnknownActionAreCountedAndNamedInOneCaveat) {
  const fs::path path = snapshot(
      "unknown_action",
      json::array({entry("segment_alloc", kA, 20_MiB), entry("alloc", kA, 4_MiB),
                   entry("alloc_v2", kA + 4_MiB, 2_MiB), entry("free_requested", kA, 4_MiB),
                   entry("alloc_v2", kA + 6_MiB, 2_MiB), entry("checkpoint", 0, 0),
                   entry("free_completed", kA, 4_MiB)}));
  const trace::Trace t = trace::load(path, {});
  std::vector<std::string> named;
  for (const std::string& caveat : trace::trace_caveats(t)) {
    if (caveat.find("does not know") != std::string::npos) named.push_back(caveat);
  }
  ASSERT_EQ(named.size(), 1U);
  EXPECT_NE(named[0].find("3 snapshot entries of an action oomlab does not know ('alloc_v2' (2 "
                          "entries), 'checkpoint' (1 entry)) were skipped"),
            std::string::npos)
      << named[0];
  EXPECT_EQ(named[0].find("free_requested"), std::string::npos) << named[0];
  fs::remove(path);
}

// A cached segment given back on the way to a new one past the most the program ever held was
// PyTorch's retry: replayed under the same cap the model retries by itself; with room to spare
// it has no reason to, and the note names where the snapshot and the model part.
TEST(TorchTrace, PyTorchsOwnRetryIsLeftToTheModel) {
  const fs::path path = snapshot(
      "retry", json::array({entry("segment_alloc", kA, 20_MiB), entry("alloc", kA, 4_MiB),
                            entry("free_completed", kA, 4_MiB), entry("segment_free", kA, 20_MiB),
                            entry("segment_alloc", kB, 24_MiB), entry("alloc", kB, 24_MiB)}));
  const RunResult capped = torch_replay(path, 32_MiB);
  EXPECT_EQ(capped.outcome, Outcome::completed);
  EXPECT_EQ(metric(capped, "segment_calls_matched"), 3.0);
  EXPECT_EQ(metric(capped, "segment_calls_extra"), 0.0);
  const RunResult roomy = torch_replay(path, 1_GiB);
  EXPECT_EQ(metric(roomy, "segment_calls_matched"), 2.0);
  EXPECT_EQ(metric(roomy, "segment_first_mismatch_index"), 3.0) << "the segment_free entry";
  fs::remove(path);
}

// A block made before the history and freed in it: placed in its segment before the first entry,
// not an unknown free; the request after it fits in the segment's free start, as it did.
TEST(TorchTrace, ABlockFromBeforeTheHistoryIsPlacedInItsSegment) {
  const json segments = json::array({{{"device", 0},
                                      {"address", kA},
                                      {"total_size", 20_MiB},
                                      {"stream", 0},
                                      {"segment_type", "large"},
                                      {"blocks", json::array({{{"address", kA},
                                                               {"size", 20_MiB},
                                                               {"requested_size", 0},
                                                               {"state", "inactive"}}})}}});
  const fs::path path =
      snapshot("before",
               json::array({entry("alloc", kA, 2_MiB), entry("free_completed", kA + 2_MiB, 4_MiB),
                            entry("alloc", kA + 2_MiB, 6_MiB)}),
               segments);
  const RunResult r = torch_replay(path, 1_GiB);
  EXPECT_EQ(metric(r, "initial_blocks"), 1.0);
  EXPECT_EQ(metric(r, "unknown_frees"), 0.0);
  EXPECT_EQ(metric(r, "segment_calls_extra"), 0.0) << "both requests fit in the old segment";
  EXPECT_EQ(r.peak_reserved_bytes, 20_MiB);
  fs::remove(path);
}

// An expandable segment of 2^50 bytes: the segment level refuses to page it, the tensor level
// leaves its blocks out; neither takes long.
TEST(TorchTrace, AHugeExpandableSegmentNeitherHangsNorCrashes) {
  const json segments = json::array({{{"device", 0},
                                      {"address", kA},
                                      {"total_size", 1ULL << 50U},
                                      {"stream", 0},
                                      {"segment_type", "large"},
                                      {"is_expandable", true},
                                      {"blocks", json::array({{{"address", kA},
                                                               {"size", 1ULL << 49U},
                                                               {"requested_size", 1ULL << 49U},
                                                               {"state", "active_allocated"}}})}}});
  const fs::path path = snapshot("huge", json::array({entry("alloc", kB, 512)}), segments);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)trace::load(path, {.level = trace::Level::segment});
    ADD_FAILURE() << "a segment of 2^50 bytes was paged";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("pages"), std::string::npos) << e.what();
  }
  const RunResult r = torch_replay(path, 1_GiB);
  EXPECT_EQ(r.outcome, Outcome::oom) << "what was there before does not fit";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  fs::remove(path);
}

}  // namespace
}  // namespace oomlab
