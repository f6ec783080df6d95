// One answer for a PyTorch snapshot whichever command asks: `whatif`'s row, `frontier replay`
// with that row's settings and `run replay` at the frontier agree to the byte, on every snapshot
// in tests/data; the default allocator of a snapshot is the model of PyTorch's; a snapshot without
// history is refused; PyTorch's own spelling of its settings is understood.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kData = testing::test_data_dir();
const fs::path kSample = kData / "pytorch_gpt_fp32_snapshot.pickle";

using Cli = ::oomlab::testing::CliRun;

Cli oomlab(std::vector<std::string> args) {
  args.insert(args.begin(), "oomlab");
  return ::oomlab::testing::run_in_process(args);
}

fs::path temp_path(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("oomlab_torch_answers_" + name);
  fs::remove_all(path);
  return path;
}

// A row's options (whatif.json: as the run used them) as `-a torch:...` in oomlab's spelling.
std::string allocator_of(const json& options) {
  std::string out = "torch:";
  for (const auto& [key, value] : options.items()) {
    if (out.back() != ':') out += ',';
    out += key + '=';
    if (value.is_boolean()) {
      out += value.get<bool>() ? "on" : "off";
    } else if (value.is_string()) {
      out += value.get<std::string>();
    } else if (value.is_number_unsigned() &&
               value.get<std::uint64_t>() == std::numeric_limits<std::uint64_t>::max()) {
      out += "max";
    } else {
      out += value.dump();
    }
  }
  return out;
}

json run_json(const std::string& snapshot, const std::string& allocator, std::uint64_t budget) {
  const Cli r = oomlab({"run", "replay", "--trace", snapshot, "-a", allocator, "--budget",
                        std::to_string(budget), "--no-out", "--no-probe", "--json", "-"});
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

class EverySnapshot : public ::testing::TestWithParam<std::string> {};

TEST_P(EverySnapshot, WhatIfFrontierAndRunAgreeToTheByteForEverySetting) {
  const std::string snapshot = GetParam();
  const Cli whatif = oomlab({"whatif", "--trace", snapshot, "--json", "-"});
  ASSERT_EQ(whatif.code, 0) << whatif.err;
  const json doc = json::parse(whatif.out);
  bool recorded_differs = false;
  for (const json& row : doc.at("rows"))
    recorded_differs |= row.at("name") == "as recorded";
  for (const json& row : doc.at("rows")) {
    SCOPED_TRACE(row.at("name").get<std::string>());
    ASSERT_TRUE(row.at("frontier_bytes").is_number()) << row.dump();
    const std::uint64_t frontier = row.at("frontier_bytes");
    const std::string allocator = allocator_of(row.at("options"));
    const fs::path frontier_json = temp_path("frontier.json");
    const Cli f = oomlab({"frontier", "replay", "--trace", snapshot, "-a", allocator, "--budget",
                          std::to_string(doc.at("card_bytes").get<std::uint64_t>()), "--json",
                          frontier_json.string(), "--quiet"});
    ASSERT_EQ(f.code, 0) << f.err;
    std::ifstream in(frontier_json);
    const json searched = json::parse(in);
    EXPECT_EQ(searched.at("frontier_bytes"), frontier) << allocator;
    EXPECT_EQ(searched.at("allocator").at("options"), row.at("options"))
        << "frontier.json records the options the search used";
    EXPECT_EQ(run_json(snapshot, allocator, frontier).at("outcome"), "completed") << allocator;
    // As a user asks it: the row's PYTORCH_CUDA_ALLOC_CONF alone (the snapshot's own settings
    // fill in the rest, so only where they are PyTorch's defaults), the fraction only by name.
    if (!recorded_differs) {
      std::string asked = "torch";
      const std::string conf = row.at("alloc_conf");
      if (!conf.empty()) asked += ":" + conf;
      if (row.at("budget_by") == "fraction")
        asked += conf.empty() ? ":budget_by=fraction" : ",budget_by=fraction";
      const Cli own = oomlab(
          {"frontier", "replay", "--trace", snapshot, "-a", asked, "--json", "-", "--quiet"});
      ASSERT_EQ(own.code, 0) << own.err;
      EXPECT_EQ(json::parse(own.out).at("frontier_bytes"), frontier) << asked;
    }
    EXPECT_EQ(run_json(snapshot, allocator, frontier - 2 * 1024 * 1024).at("outcome"), "oom")
        << allocator;
  }
}

std::vector<std::string> snapshots() {
  std::vector<std::string> out = {kSample.string()};
  for (const auto& entry : fs::directory_iterator(kData / "pytorch")) {
    if (entry.path().extension() == ".pickle") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(TestData, EverySnapshot, ::testing::ValuesIn(snapshots()),
                         [](const ::testing::TestParamInfo<std::string>& snapshot) {
                           return fs::path(snapshot.param).stem().string();
                         });

// PyTorch's spelling of a setting, pasted from a job's PYTORCH_CUDA_ALLOC_CONF, asks the same
// question as oomlab's: same options, same frontier.
TEST(PyTorchSpelling, AFrontierAskedInPyTorchsWordsIsTheSameAsInOomlabs) {
  const std::string trace = (kData / "pytorch" / "infer_varlen_native.pickle").string();
  const auto frontier_of = [&](std::vector<std::string> allocator_args) {
    std::vector<std::string> args = {"frontier", "replay", "--trace", trace, "--json", "-"};
    args.insert(args.end(), allocator_args.begin(), allocator_args.end());
    const Cli r = oomlab(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out);
  };
  const json ours = frontier_of({"-a", "torch:expandable_segments=on,max_split_size=128MiB"});
  const json theirs = frontier_of({"-a", "torch:expandable_segments:True,max_split_size_mb:128"});
  const json conf =
      frontier_of({"--alloc-conf", "expandable_segments:True, max_split_size_mb:128"});
  EXPECT_EQ(theirs.at("frontier_bytes"), ours.at("frontier_bytes"));
  EXPECT_EQ(conf.at("frontier_bytes"), ours.at("frontier_bytes"));
  EXPECT_EQ(theirs.at("allocator").at("options"), ours.at("allocator").at("options"));
  EXPECT_EQ(conf.at("allocator").at("options"), ours.at("allocator").at("options"));
  const json async = frontier_of({"-a", "torch:backend:cudaMallocAsync"});
  EXPECT_EQ(async.at("allocator").at("options").at("backend"), "async");
}

TEST(PyTorchSpelling, AValuePyTorchWouldRefuseIsExitTwoNamingIt) {
  for (const auto& [allocator, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"torch:expandable_segments:yes",
            "expandable_segments:yes: PyTorch takes True or False"},
           {"torch:max_split_size_mb:1.5", "max_split_size_mb:1.5"},
           {"torch:backend:cudaMalloc", "PyTorch's backends are native and cudaMallocAsync"},
           {"torch:expandable_segment:True", "did you mean 'expandable_segments'"}}) {
    const Cli r = oomlab({"run", "replay", "--trace", kSample.string(), "-a", allocator});
    EXPECT_EQ(r.code, 2) << allocator << ": " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const Cli r = oomlab({"run", "fragmentation", "-a", "sim", "--alloc-conf",
                        "expandable_segments:True", "--no-out"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--alloc-conf"), std::string::npos) << r.err;
}

// garbage_collection_threshold acts only under a fraction cap: asked for without one, the run and
// the frontier say it did nothing, and how to ask for a fraction.
TEST(PyTorchSpelling, AGarbageCollectionThresholdWithoutAFractionIsSaidToDoNothing) {
  const std::string inert =
      "garbage_collection_threshold=0.8 has no effect unless the budget is "
      "a memory fraction";
  const Cli run = oomlab({"run", "fragmentation", "-a", "torch", "--alloc-conf",
                          "garbage_collection_threshold:0.8", "--budget", "64MiB", "--no-out"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find(inert), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("-a torch:budget_by=fraction"), std::string::npos) << run.err;
  const Cli frontier = oomlab({"frontier", "replay", "--trace", kSample.string(), "--alloc-conf",
                               "garbage_collection_threshold:0.8", "--json", "-", "--quiet"});
  EXPECT_EQ(frontier.code, 0) << frontier.err;
  EXPECT_NE(frontier.err.find(inert), std::string::npos) << frontier.err;
  const Cli fraction =
      oomlab({"run", "fragmentation", "-a", "torch:budget_by=fraction", "--alloc-conf",
              "garbage_collection_threshold:0.8", "--budget", "64MiB", "--no-out"});
  EXPECT_EQ(fraction.code, 0) << fraction.err;
  EXPECT_EQ(fraction.err.find("has no effect"), std::string::npos) << fraction.err;
}

// With the default allocator a snapshot is replayed by the model of the allocator that recorded
// it: its frontier is PyTorch's allocator's (8.70 GiB for the sample), not the sim's (8.40 GiB).
TEST(Auto, APyTorchSnapshotIsReplayedThroughTheModelOfPyTorchsAllocatorAndSaysSo) {
  const Cli run = oomlab({"run", "replay", "--trace", kSample.string(), "--budget", "9GiB",
                          "--no-out", "--json", "-"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(json::parse(run.out).at("allocator").at("name"), "torch");
  EXPECT_NE(run.err.find("a PyTorch snapshot: replayed through 'torch'"), std::string::npos)
      << run.err;
  const auto frontier_of = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"frontier",       "replay", "--trace",
                                     kSample.string(), "--json", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Cli r = oomlab(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out).at("frontier_bytes").get<std::uint64_t>();
  };
  const std::uint64_t by_default = frontier_of({});
  EXPECT_EQ(by_default, frontier_of({"-a", "torch"}));
  EXPECT_GT(by_default, frontier_of({"-a", "sim"}));
}

// A history that began after blocks were made is said, with what it means for the answer.
TEST(LateHistory, WhatIfSaysTheHistoryBeganLateAndThatAnswersMayBeTooLow) {
  const Cli r = oomlab({"whatif", "--trace", kSample.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("the history began with 3 blocks (65.0 MiB) in 3 segments (66.0 MiB) "
                       "already live"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("an answer read from this trace is too low"), std::string::npos) << r.out;
}

// A snapshot taken without _record_memory_history has nothing to replay.
TEST(NoHistory, EveryCommandRefusesASnapshotWithoutHistoryWithExitTwoAndSaysHowToRecordIt) {
  // infer_varlen_native.pickle with its device_traces emptied: what _snapshot() returns when
  // the history was never recorded (tests/data/pytorch/README.md).
  const fs::path empty = kData / "pytorch_no_history.pickle";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"whatif", "--trace", empty.string()},
           {"run", "replay", "--trace", empty.string(), "--no-out"},
           {"frontier", "replay", "--trace", empty.string(), "-a", "torch"}}) {
    const Cli r = oomlab(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("the snapshot has no allocation history: record it with "
                         "torch.cuda.memory._record_memory_history() before the run"),
              std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace oomlab

namespace oomlab {
namespace {

// PyTorch's cudaMallocAsync backend under a fraction caps what it hands out, not what its pool
// holds: a run at that frontier completes with more reserved than the budget, and says so.
TEST(OverBudget, ARunWhoseAllocatorHeldMoreThanTheBudgetIsNeverCompletedWithoutAWord) {
  const std::string allocator = "torch:backend=async,budget_by=fraction";
  const Cli f = oomlab({"frontier", "replay", "--trace", kSample.string(), "-a", allocator,
                        "--json", "-", "--quiet"});
  ASSERT_EQ(f.code, 0) << f.err;
  const std::uint64_t frontier = json::parse(f.out).at("frontier_bytes");
  const Cli r = oomlab({"run", "replay", "--trace", kSample.string(), "-a", allocator, "--budget",
                        std::to_string(frontier), "--no-out"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("outcome    completed, over the budget: the allocator held"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("the budget capped what the program asked for, not what the allocator held"),
            std::string::npos)
      << r.err;
}

// `run` and `whatif` at one budget say the same of every setting: the run's advice names only
// settings whose whatif row fits there, and says none does when none does.
TEST(OneDiagnosis, RunsAdviceAndWhatIfsBudgetColumnAgreeAtEveryBudget) {
  for (const std::uint64_t budget : {8'589'934'592ULL, 9'180'000'000ULL, 9'340'000'000ULL}) {
    SCOPED_TRACE(budget);
    const Cli w = oomlab(
        {"whatif", "--trace", kSample.string(), "--budget", std::to_string(budget), "--json", "-"});
    ASSERT_EQ(w.code, 0) << w.err;
    const json table = json::parse(w.out);
    const json run = run_json(kSample.string(), "torch", budget);
    ASSERT_EQ(run.at("outcome"), "oom");
    const json& remedies = run.at("oom").at("remedies");
    ASSERT_TRUE(remedies.is_array()) << run.at("oom").dump();
    std::vector<std::string> fitting;
    for (const json& remedy : remedies) {
      const json* row = nullptr;
      for (const json& r : table.at("rows")) {
        if (r.at("name") == remedy.at("setting")) row = &r;
      }
      ASSERT_NE(row, nullptr) << remedy.dump();
      const bool fits = row->at("at_budget").at("outcome") == "completed";
      EXPECT_EQ(remedy.at("completes_at_budget"), fits) << remedy.dump();
      if (fits) fitting.push_back(remedy.at("alloc_conf"));
    }
    const std::string advice = run.at("oom").at("advice");
    if (fitting.empty()) {
      EXPECT_NE(advice.find("no setting of PyTorch's allocator completes"), std::string::npos)
          << advice;
      EXPECT_EQ(advice.find("PYTORCH_CUDA_ALLOC_CONF="), std::string::npos) << advice;
    } else {
      EXPECT_NE(advice.find("PYTORCH_CUDA_ALLOC_CONF=" + fitting.front()), std::string::npos)
          << advice;
    }
  }
}

}  // namespace
}  // namespace oomlab

namespace oomlab {
namespace {

// The async backend's row is a range, and PyTorch's measured frontier (a ballast, on an H100:
// tests/data/pytorch/frontiers.json) lies inside it for every job measured.
TEST(AsyncRange, PyTorchsMeasuredAsyncFrontierLiesInTheRangeWhatIfGivesForEveryJob) {
  std::ifstream in(kData / "pytorch" / "frontiers.json");
  const json measured = json::parse(in);
  int checked = 0;
  for (const json& f : measured.at("frontiers")) {
    if (f.at("config").get<std::string>() != "async") continue;
    const std::string job = f.at("job");
    const Cli w = oomlab({"whatif", "--trace",
                          (kData / "pytorch" / (job + "_native.pickle")).string(), "--json", "-"});
    ASSERT_EQ(w.code, 0) << w.err;
    const json doc = json::parse(w.out);
    for (const json& row : doc.at("rows")) {
      if (row.at("name").get<std::string>() != "backend=async") continue;
      const json& range = row.at("frontier_range_bytes");
      ASSERT_TRUE(range.is_array()) << row.dump();
      const std::uint64_t pytorch = f.at("frontier_bytes");
      EXPECT_LE(range.at(0).get<std::uint64_t>(), pytorch) << job;
      EXPECT_GE(range.at(1).get<std::uint64_t>(), pytorch) << job;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

const json& row_of(const json& whatif, const std::string& name) {
  for (const json& row : whatif.at("rows")) {
    if (row.at("name") == name) return row;
  }
  throw std::runtime_error("no " + name + " row in " + whatif.dump());
}

const json& async_row(const json& whatif) {
  return row_of(whatif, "backend=async");
}

// Within its range the async row's verdict is the model's guess: PyTorch's own frontier may lie
// on either side of the budget, so the row "may fit" and is never among those that fit.
TEST(AsyncRange, ABudgetWithinTheAsyncRowsRangeMayFitAndIsNeverSaidToFit) {
  const Cli first = oomlab({"whatif", "--trace", kSample.string(), "--json", "-", "--quiet"});
  ASSERT_EQ(first.code, 0) << first.err;
  const json whatif = json::parse(first.out);
  const json& row = async_row(whatif);
  const std::uint64_t frontier = row.at("frontier_bytes");
  const std::uint64_t low = row.at("frontier_range_bytes").at(0);
  const std::uint64_t high = row.at("frontier_range_bytes").at(1);
  const auto at = [&](std::uint64_t budget) {
    const Cli w = oomlab(
        {"whatif", "--trace", kSample.string(), "--budget", std::to_string(budget), "--json", "-"});
    EXPECT_EQ(w.code, 0) << w.err;
    return std::pair{json::parse(w.out), w.err};
  };
  // Above the model's frontier, under the range's top: the model fits, PyTorch may not.
  const auto [above, table] = at(frontier + (high - frontier) / 2);
  EXPECT_EQ(async_row(above).at("at_budget").at("outcome"), "completed");
  EXPECT_EQ(async_row(above).at("at_budget").at("uncertain"), true);
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("backend=async  ")) {
      EXPECT_NE(line.find("may fit"), std::string::npos);
    }
  }
  // Where native runs out of memory: the async row is never among the settings that fit.
  const std::uint64_t native = row_of(whatif, "native").at("frontier_bytes");
  ASSERT_LT(low, native);
  const auto [below, ignored] = at(low + (native - low) / 2);
  const std::string answer = below.at("answer");
  EXPECT_EQ(answer.find("backend=async (PYTORCH_CUDA_ALLOC_CONF"), std::string::npos) << answer;
  EXPECT_NE(answer.find("backend=async may fit"), std::string::npos) << answer;
}

// `frontier` of the async backend is the same approximate figure whatif's row gives, and says so.
TEST(AsyncRange, TheFrontierOfTheAsyncBackendIsApproximateAsInWhatIf) {
  const Cli f = oomlab({"frontier", "replay", "--trace", kSample.string(), "-a",
                        "torch:backend:cudaMallocAsync", "--json", "-", "--quiet"});
  ASSERT_EQ(f.code, 0) << f.err;
  const json doc = json::parse(f.out);
  const std::uint64_t frontier = doc.at("frontier_bytes");
  const json& range = doc.at("frontier_range_bytes");
  ASSERT_TRUE(range.is_array()) << doc.dump();
  EXPECT_LT(range.at(0).get<std::uint64_t>(), frontier);
  EXPECT_GT(range.at(1).get<std::uint64_t>(), frontier);
  EXPECT_NE(f.err.find(": completes at ~"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("PyTorch's own frontier lies in"), std::string::npos) << f.err;
  const Cli native = oomlab(
      {"frontier", "replay", "--trace", kSample.string(), "-a", "torch", "--json", "-", "--quiet"});
  ASSERT_EQ(native.code, 0) << native.err;
  EXPECT_TRUE(json::parse(native.out).at("frontier_range_bytes").is_null());
}

}  // namespace
}  // namespace oomlab
