// A replay is a typed request: a trace already read, handed to the run (RunConfig::trace), never
// a scenario found by its name with a path read again. The searches and whatif read their trace
// once, before their runs, and each run adopts it.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "pytorch/settings/whatif.hpp"
#include "run/frontier.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;

const fs::path kData = testing::test_data_dir();
const fs::path kPickle = kData / "pytorch_gpt_fp32_snapshot.pickle";
const fs::path kJob = kData / "pytorch" / "infer_varlen_native.pickle";

std::shared_ptr<const trace::Trace> read(const fs::path& path, trace::Level level) {
  return std::make_shared<const trace::Trace>(trace::load(path, {.level = level}));
}

// A run of the trace player with `trace` and the player's parameters, its trace parameter naming
// a file that does not exist: only a run that adopts the trace can complete.
RunConfig typed_replay(std::shared_ptr<const trace::Trace> trace) {
  RunConfig config = testing::make_run_config("replay", "sim", 16_GiB);
  config.scenario.clear();
  config.params.set("trace", (fs::temp_directory_path() / "no-such-trace.pickle").string());
  config.params.set("level", std::string("segment"));
  config.trace = std::move(trace);
  return config;
}

TEST(TypedReplay, TheRegistryKnowsItsTracePlayerByWhatItDoesNotByName) {
  const Registry::Entry* player = Registry::global().trace_player();
  ASSERT_NE(player, nullptr);
  EXPECT_TRUE(player->replays_traces);
  EXPECT_TRUE(player->factory()->replays_traces());
  for (const Registry::Entry& e : Registry::global().entries()) {
    if (&e != player) {
      EXPECT_FALSE(e.factory()->replays_traces()) << e.name;
    }
  }
}

TEST(TypedReplay, AScenarioThatReplaysNoTraceRefusesOne) {
  const std::unique_ptr<Scenario> leak = Registry::global().create("leak");
  ASSERT_NE(leak, nullptr);
  const Params params(Registry::global().find("leak")->params);
  try {
    leak->adopt(params, read(kPickle, trace::Level::segment));
    FAIL() << "a scenario without a trace took one";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
  EXPECT_EQ(leak->input_trace(), nullptr);
}

TEST(TypedReplay, ARunAdoptsATraceAlreadyReadAndReadsNoFile) {
  const auto trace = read(kPickle, trace::Level::segment);
  const RunResult typed = run_scenario(typed_replay(trace));
  ASSERT_EQ(typed.outcome, Outcome::completed) << typed.error_message;
  EXPECT_EQ(typed.input_trace, trace);  // the same trace, not a copy read again
  EXPECT_EQ(typed.scenario, Registry::global().trace_player()->name);

  RunConfig by_path = testing::make_run_config("replay", "sim", 16_GiB);
  by_path.params.set("trace", kPickle.string());
  by_path.params.set("level", std::string("segment"));
  const RunResult read_here = run_scenario(by_path);
  ASSERT_NE(read_here.input_trace, nullptr);
  EXPECT_NE(read_here.input_trace, trace);
  EXPECT_EQ(testing::metric(typed, "events_replayed"),
            testing::metric(read_here, "events_replayed"));
  EXPECT_EQ(typed.peak_reserved_bytes, read_here.peak_reserved_bytes);
  EXPECT_EQ(typed.backend, BackendKind::sim);
}

TEST(TypedReplay, AFrontiersTrialsReadTheTraceOnce) {
  // The file goes after the first trial: every later one must replay what that one read.
  const fs::path copy = fs::temp_directory_path() / "frontier-once.pickle";
  fs::copy_file(kPickle, copy, fs::copy_options::overwrite_existing);
  RunConfig config = testing::make_run_config("replay", "sim", 16_GiB);
  config.params.set("trace", copy.string());
  config.params.set("level", std::string("segment"));
  std::size_t trials = 0;
  const FrontierResult f = find_frontier(config, kDevicePageBytes, [&](const Trial&) {
    if (trials++ == 0) fs::remove(copy);
  });
  ASSERT_TRUE(f.answer.has_value());
  EXPECT_GT(trials, 2U);
  EXPECT_EQ(*f.answer, 9'311'354'880U + 69'206'016U);  // as when each trial read the file
}

TEST(TypedReplay, WhatIfAnswersForASnapshotAlreadyRead) {
  const WhatIfResult by_path = what_if({.trace = kJob});
  const WhatIfResult typed = what_if({.trace = fs::temp_directory_path() / "not-read.pickle",
                                      .loaded = read(kJob, trace::Level::tensor)});
  ASSERT_EQ(typed.rows.size(), by_path.rows.size());
  ASSERT_FALSE(typed.rows.empty());
  for (std::size_t i = 0; i < typed.rows.size(); ++i) {
    EXPECT_EQ(typed.rows[i].setting, by_path.rows[i].setting);
    EXPECT_EQ(typed.rows[i].frontier_bytes, by_path.rows[i].frontier_bytes)
        << typed.rows[i].setting;
  }
  EXPECT_EQ(typed.entries, by_path.entries);
}

}  // namespace
}  // namespace oomlab
