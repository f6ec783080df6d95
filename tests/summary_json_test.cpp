// summary.json follows the oomlab.run.v1 contract of docs/outputs.md: every field, with its type.
#include "reports/run/summary_json.hpp"

#include <gtest/gtest.h>

#include "reports/run/program_summary.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
using json = nlohmann::ordered_json;

void expect_field(const json& object, const std::string& key, json::value_t type) {
  ASSERT_TRUE(object.contains(key)) << "missing " << key << " in " << object.dump();
  const json::value_t actual = object.at(key).type();
  const bool integer_ok =
      type == json::value_t::number_integer &&
      (actual == json::value_t::number_unsigned || actual == json::value_t::number_integer);
  const bool number_ok =
      type == json::value_t::number_float &&
      (actual == json::value_t::number_float || actual == json::value_t::number_unsigned ||
       actual == json::value_t::number_integer);
  EXPECT_TRUE(actual == type || integer_ok || number_ok)
      << key << " has type " << object.at(key).type_name();
}

constexpr auto kObject = json::value_t::object;
constexpr auto kString = json::value_t::string;
constexpr auto kInteger = json::value_t::number_integer;
constexpr auto kNumber = json::value_t::number_float;
constexpr auto kBool = json::value_t::boolean;

TEST(SummaryJson, OomRunHasEveryContractField) {
  const RunResult r = run_scenario(testing::make_run_config("fragmentation", "sim", 1_GiB));
  const json doc = summary_json(r, Invocation{{"oomlab", "run", "fragmentation"}});

  EXPECT_EQ(doc.at("schema"), "oomlab.run.v1");
  expect_field(doc, "oomlab", kObject);
  expect_field(doc.at("oomlab"), "version", kString);
  expect_field(doc.at("oomlab"), "git", kString);
  expect_field(doc.at("oomlab"), "git_dirty", kBool);
  expect_field(doc, "environment", kObject);
  const json& env = doc.at("environment");
  ASSERT_TRUE(env.contains("device"));
  EXPECT_TRUE(env.at("device").is_null()) << "the sim runs on no device";
  ASSERT_TRUE(env.contains("driver"));
  expect_field(env, "cuda_driver_api", kInteger);
  expect_field(env, "cuda_runtime", kInteger);
  EXPECT_EQ(env.at("simulated"), true);
  expect_field(env, "host", kString);

  const json& scenario = doc.at("scenario");
  EXPECT_EQ(scenario.at("name"), "fragmentation");
  EXPECT_EQ(scenario.at("params").at("block"), 65536) << "sizes are integers in bytes";
  EXPECT_EQ(scenario.at("params").at("keep"), "1/32");
  EXPECT_EQ(scenario.at("seed"), 1);
  EXPECT_EQ(doc.at("allocator").at("name"), "sim");
  EXPECT_EQ(doc.at("allocator").at("options").at("page"), 2097152);
  EXPECT_EQ(doc.at("budget_bytes"), 1073741824);
  EXPECT_EQ(doc.at("outcome"), "oom");

  const json& oom = doc.at("oom");
  for (const char* key : {"event", "step", "request_bytes", "live_bytes", "live_count",
                          "reserved_bytes", "device_free_bytes", "largest_free_bytes"}) {
    expect_field(oom, key, kInteger);
  }
  expect_field(oom, "phase", kString);
  expect_field(oom, "t_ms", kNumber);
  expect_field(oom, "fragmentation", kNumber);
  EXPECT_EQ(oom.at("cause"), "fragmentation");
  EXPECT_EQ(oom.at("source"), "driver");
  EXPECT_TRUE(oom.at("error").is_null()) << "the sim makes no CUDA call";
  expect_field(oom, "advice", kString);
  EXPECT_LE(oom.at("live_bytes").get<std::uint64_t>(), 1073741824 / 20);

  expect_field(doc.at("peak"), "live_bytes", kInteger);
  expect_field(doc.at("peak"), "reserved_bytes", kInteger);
  for (const char* key : {"allocations", "frees", "failed"})
    expect_field(doc.at("counts"), key, kInteger);
  expect_field(doc.at("integrity"), "checked", kInteger);
  expect_field(doc.at("integrity"), "corrupted", kInteger);
  expect_field(doc, "metrics", kObject);
  EXPECT_EQ(doc.at("metrics").at("fill_blocks"), 16384) << "integral metrics are integers";
  expect_field(doc, "duration_ms", kNumber);
  expect_field(doc, "ballast_bytes", kInteger);
  // A run with no caching allocator and no program behind it: nothing of PyTorch's to say.
  EXPECT_TRUE(oom.at("pytorch").is_null());
  EXPECT_EQ(oom.at("frames"), json::array());
  EXPECT_EQ(oom.at("largest_live"), json::array());
}

RunConfig torch_replay(const std::string& job, std::uint64_t budget,
                       const std::string& budget_by = "device") {
  RunConfig config = testing::make_run_config("replay", "torch", budget);
  config.params.set("trace", testing::test_data_dir() + "/pytorch/" + job + ".pickle");
  config.allocator_options.set("budget_by", budget_by);
  config.probe = false;
  return config;
}

// PyTorch 2.11 on the GPU said exactly this (tests/data/pytorch/captures.jsonl); the snapshot's
// own settings make the model cap itself at 2 GiB as PyTorch did.
TEST(SummaryJson, TorchOomSaysWhatPyTorchSaid) {
  const json oom =
      summary_json(run_scenario(torch_replay("grow_cap2g_native", 2'147'483'648, "fraction")), {})
          .at("oom");
  const json& pytorch = oom.at("pytorch");
  ASSERT_TRUE(pytorch.is_object()) << oom.dump();
  for (const char* key : {"allocated_bytes", "reserved_bytes", "reserved_unallocated_bytes",
                          "tried_to_allocate_bytes", "allowed_bytes"}) {
    expect_field(pytorch, key, kInteger);
  }
  EXPECT_EQ(pytorch.at("tried_to_allocate_bytes"), 268'435'456);
  EXPECT_EQ(pytorch.at("allowed_bytes"), 2'147'483'648);
  EXPECT_EQ(pytorch.at("backend"), "native");
  EXPECT_EQ(pytorch.at("reserved_unallocated_bytes").get<std::uint64_t>(),
            pytorch.at("reserved_bytes").get<std::uint64_t>() -
                pytorch.at("allocated_bytes").get<std::uint64_t>());
  const std::string message = pytorch.at("message");
  for (const char* part : {"Tried to allocate 256.00 MiB", "2.00 GiB allowed",
                           "1.73 GiB is allocated by PyTorch, and 178.04 MiB is reserved by "
                           "PyTorch but unallocated"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  }
}

TEST(SummaryJson, ReplayedOomNamesTheStackAndTheLargestLiveBlocks) {
  const json oom =
      summary_json(run_scenario(torch_replay("train_fixed_native", 1536_MiB)), {}).at("oom");
  ASSERT_TRUE(oom.at("frames").is_array());
  ASSERT_FALSE(oom.at("frames").empty()) << "the snapshot recorded stacks";
  EXPECT_TRUE(oom.at("frames").front().is_string());
  const json& largest = oom.at("largest_live");
  ASSERT_FALSE(largest.empty());
  EXPECT_LE(largest.size(), 10U);
  std::uint64_t previous = UINT64_MAX;
  for (const json& block : largest) {
    expect_field(block, "bytes", kInteger);
    expect_field(block, "trace_index", kInteger);
    ASSERT_TRUE(block.at("frames").is_array());
    EXPECT_LE(block.at("bytes").get<std::uint64_t>(), previous) << "largest first";
    previous = block.at("bytes").get<std::uint64_t>();
  }
  EXPECT_FALSE(largest.front().at("frames").empty());
}

TEST(SummaryJson, NoProbeLeavesTheLargestBlockUnknown) {
  RunConfig config = testing::make_run_config("fragmentation", "sim", 256_MiB);
  config.probe = false;
  const json oom = summary_json(run_scenario(config), {}).at("oom");
  EXPECT_TRUE(oom.at("largest_free_bytes").is_null());
  EXPECT_TRUE(oom.at("fragmentation").is_null());
  EXPECT_EQ(oom.at("cause"), "fragmentation");
}

TEST(SummaryJson, CompletedRunHasNullOom) {
  RunResult r;
  r.scenario = "fragmentation";
  r.allocator = "sim";
  r.outcome = Outcome::completed;
  const json doc = summary_json(r, {});
  EXPECT_EQ(doc.at("outcome"), "completed");
  EXPECT_TRUE(doc.at("oom").is_null());
  EXPECT_TRUE(doc.at("error").is_null());
}

TEST(SummaryJson, AProgramsSnapshotsAreNamedInItsRunFolderAndTheSummarySaysWhere) {
  RunResult r;
  r.scenario = "exec";
  r.params.set("command", "python train.py");
  r.program = ProgramRun{.command = {"python", "train.py"}};
  r.program->snapshots = {"/runs/x/snapshot-rank0.pickle", "/runs/x/snapshot-rank1.pickle",
                          "/elsewhere/snapshot-pid7.pickle"};
  const json doc = summary_json(r, {.folder = "/runs/x"});
  EXPECT_EQ(
      doc.at("program").at("snapshots"),
      json({"snapshot-rank0.pickle", "snapshot-rank1.pickle", "/elsewhere/snapshot-pid7.pickle"}));
  EXPECT_TRUE(doc.at("program").at("snapshot_note").is_null());
  r.program->snapshots.resize(2);
  EXPECT_NE(program_summary(r, "").find(
                "snapshot   /runs/x/snapshot-rank0.pickle, snapshot-rank1.pickle\n"),
            std::string::npos)
      << program_summary(r, "");

  r.program->snapshots.clear();
  r.program->snapshot_note = "the program never imported torch";
  const json none = summary_json(r, {.folder = "/runs/x"});
  EXPECT_EQ(none.at("program").at("snapshots"), json::array());
  EXPECT_EQ(none.at("program").at("snapshot_note"), "the program never imported torch");
  EXPECT_NE(program_summary(r, "").find("snapshot   none: the program never imported torch\n"),
            std::string::npos)
      << program_summary(r, "");
}

TEST(SummaryJson, BudgetCapHasNoCudaError) {
  RunResult r;
  r.outcome = Outcome::oom;
  r.oom = OomRecord{};
  r.oom->source = "budget-cap";
  const json doc = summary_json(r, {});
  EXPECT_EQ(doc.at("oom").at("source"), "budget-cap");
  EXPECT_TRUE(doc.at("oom").at("error").is_null());
  EXPECT_TRUE(doc.at("oom").at("largest_free_bytes").is_null());
}

TEST(SummaryJson, DeviceFactsWhenARealDeviceRan) {
  RunResult r;
  r.device = DeviceFacts{.index = 0,
                         .name = "NVIDIA H100 80GB HBM3",
                         .uuid = "GPU-1234",
                         .compute_capability = "9.0",
                         .total_bytes = 85'000'000'000};
  r.environment.driver_version = "580.159.04";
  const json env = summary_json(r, {}).at("environment");
  EXPECT_EQ(env.at("device").at("name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(env.at("device").at("cc"), "9.0");
  EXPECT_EQ(env.at("device").at("index"), 0);
  EXPECT_EQ(env.at("device").at("uuid"), "GPU-1234");
  EXPECT_EQ(env.at("device").at("total_bytes"), 85'000'000'000);
  EXPECT_EQ(env.at("driver"), "580.159.04");
}

}  // namespace
}  // namespace oomlab
