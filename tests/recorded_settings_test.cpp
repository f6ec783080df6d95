// A snapshot's allocator settings are the options of the backend that models its allocator, by
// that backend's own names and types: read from PyTorch's allocator_settings (and the part of
// PYTORCH_CUDA_ALLOC_CONF they do not carry), taken as the model's defaults where the user left
// an option alone, and a fraction cap the program ran under recorded but asked for by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/trace.hpp"
#include "pytorch/model/torch_options.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"
#include "trace/trace.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::uint64_t kSegment = 0x7f0000000000;

json settings_entry(const std::string& action, std::uint64_t addr, std::uint64_t size) {
  return {{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", 0}};
}

// PyTorch's roundup_power2_divisions: every interval from 1 MB to 32 GB, by its MB as text;
// `by_size` overrides the first ones.
json divisions(int all, const std::vector<int>& by_size = {}) {
  json out = json::object();
  for (std::size_t i = 0; i < 16; ++i)
    out[std::to_string(1ULL << i)] = i < by_size.size() ? by_size[i] : all;
  return out;
}

// A small snapshot with these allocator_settings; `oom_free`: its history ends in an OOM that
// saw that much of the device free.
fs::path settings_snapshot(const std::string& name, const json& settings,
                           std::optional<std::uint64_t> oom_free = std::nullopt) {
  json entries = json::array({settings_entry("segment_alloc", kSegment, 20_MiB),
                              settings_entry("alloc", kSegment, 4_MiB)});
  if (oom_free) {
    json oom = settings_entry("oom", 0, 64_MiB);
    oom["device_free"] = *oom_free;
    entries.push_back(oom);
  }
  const fs::path path = fs::temp_directory_path() / ("oomlab_settings_" + name + ".json");
  std::ofstream(path) << json{
      {"segments", json::array()},
      {"device_traces", json::array({entries})},
      {"allocator_settings",
       settings}}.dump();
  return path;
}

RecordedSettings read_settings(const fs::path& path) {
  const trace::Trace t = trace::load(path, {});
  fs::remove(path);
  const RecordedSettings* recorded = trace::allocator_settings(t);
  return recorded != nullptr ? *recorded : RecordedSettings{};
}

Params torch_defaults() {
  return Params(find_backend("torch")->options);
}

TEST(RecordedSettings, ASnapshotsSettingsAreTheTorchBackendsOwnOptions) {
  const RecordedSettings r = read_settings(settings_snapshot(
      "options",
      {{"expandable_segments", true},
       {"max_split_size", -1},
       {"garbage_collection_threshold", 0.6},
       {"roundup_power2_divisions", divisions(4)},
       {"PYTORCH_CUDA_ALLOC_CONF",
        "backend:cudaMallocAsync,max_non_split_rounding_mb:64,large_segment_size_mb:40"}}));
  EXPECT_EQ(r.backend, "torch");
  EXPECT_EQ(r.get<bool>("expandable_segments"), true);
  EXPECT_EQ(r.get<Bytes>("max_split_size"), Bytes{UINT64_MAX}) << "-1 is no limit: the max";
  EXPECT_EQ(r.get<double>("garbage_collection_threshold"), 0.6);
  EXPECT_EQ(r.get<std::int64_t>("roundup_power2_divisions"), 4) << "the same for every size";
  EXPECT_EQ(r.get<std::string>("backend"), "async");
  EXPECT_EQ(r.get<Bytes>("max_non_split_rounding"), Bytes{64_MiB});
  EXPECT_EQ(r.get<Bytes>("large_segment_size"), Bytes{40_MiB});
  EXPECT_FALSE(r.options.contains("budget_by")) << "no OOM: nothing says a fraction cap";
  // Every option recorded is one of the backend's, of its type.
  const Params defaults = torch_defaults();
  for (const auto& [name, value] : r.options) {
    ASSERT_TRUE(defaults.values().contains(name)) << name;
    EXPECT_EQ(value.index(), defaults.values().at(name).index()) << name;
  }
}

TEST(RecordedSettings, TheModelTakesThemWhereTheUserLeftAnOptionAlone) {
  const RecordedSettings r = read_settings(settings_snapshot(
      "defaults", {{"expandable_segments", true}, {"max_split_size", 200 * 1048576}}));
  Params asked = torch_defaults();
  asked.set("max_split_size", Bytes{64_MiB});
  const torch::ResolvedTorch resolved = torch::resolve_torch(asked, &r);
  EXPECT_TRUE(resolved.config.expandable_segments);
  EXPECT_EQ(resolved.config.max_split_size, 64_MiB) << "the user's option wins";
  ASSERT_EQ(resolved.notes.size(), 1U);
  EXPECT_NE(resolved.notes[0].find("(expandable_segments=on)"), std::string::npos)
      << resolved.notes[0];
}

// PyTorch's per-size list: a table the option cannot say, read back by the model itself.
TEST(RecordedSettings, DivisionsThatDifferBySizeAreTheModelsTable) {
  const RecordedSettings r = read_settings(
      settings_snapshot("table", {{"roundup_power2_divisions", divisions(0, {1, 4, 8, 2})}}));
  const auto by_size = r.get<ChoiceList>("roundup_power2_divisions");
  ASSERT_TRUE(by_size);
  ASSERT_EQ(by_size->size(), 16U);
  const torch::ResolvedTorch resolved = torch::resolve_torch(torch_defaults(), &r);
  EXPECT_EQ(resolved.config.roundup_power2_divisions[0], 1U);
  EXPECT_EQ(resolved.config.roundup_power2_divisions[1], 4U);
  EXPECT_EQ(resolved.config.roundup_power2_divisions[2], 8U);
  EXPECT_EQ(resolved.config.roundup_power2_divisions[3], 2U);
  EXPECT_EQ(resolved.config.roundup_power2_divisions[4], 0U);
  ASSERT_EQ(resolved.notes.size(), 1U);
  EXPECT_NE(resolved.notes[0].find("roundup_power2_divisions=[1MB:1,2MB:4,4MB:8,8MB:2,16MB:0"),
            std::string::npos)
      << resolved.notes[0];
  Params asked = torch_defaults();
  asked.set("roundup_power2_divisions", std::int64_t{2});
  EXPECT_EQ(torch::resolve_torch(asked, &r).config.roundup_power2_divisions[2], 2U)
      << "one number the user gave wins over the recorded table";
}

// An OOM that left the device room for the request was the program's own fraction cap: the
// snapshot records budget_by=fraction, which the model notes but does not take (a card answers).
TEST(RecordedSettings, AFractionCapIsRecordedButAskedForByName) {
  const RecordedSettings capped =
      read_settings(settings_snapshot("capped", {{"expandable_segments", false}}, 1_GiB));
  EXPECT_EQ(capped.get<std::string>("budget_by"), "fraction");
  EXPECT_TRUE(torch::ran_under_fraction_cap(capped));
  const torch::ResolvedTorch resolved = torch::resolve_torch(torch_defaults(), &capped);
  EXPECT_EQ(resolved.effective.choice("budget_by"), "device");
  ASSERT_FALSE(resolved.notes.empty());
  EXPECT_NE(resolved.notes.back().find("-a torch:budget_by=fraction"), std::string::npos);
  const RecordedSettings device =
      read_settings(settings_snapshot("device", {{"expandable_segments", false}}, 32_MiB));
  EXPECT_FALSE(torch::ran_under_fraction_cap(device)) << "no room left: the device refused";
}

// `auto` on a snapshot becomes the backend its settings name, which starts from them.
TEST(RecordedSettings, AutoReplaysThroughTheBackendTheSettingsName) {
  const fs::path path = settings_snapshot("auto", {{"expandable_segments", true}});
  RunConfig config = testing::make_run_config("replay", "auto", 1_GiB);
  config.params.set("trace", path.string());
  config.probe = false;
  const RunResult r = run_scenario(config);
  fs::remove(path);
  EXPECT_EQ(r.allocator, "torch");
  EXPECT_TRUE(r.allocator_options.flag("expandable_segments"));
  EXPECT_NE(std::find_if(r.notices.begin(), r.notices.end(),
                         [](const std::string& n) {
                           return n.find("defaults (expandable_segments=on)") != std::string::npos;
                         }),
            r.notices.end())
      << "a default the snapshot gave, said";
}

}  // namespace
}  // namespace oomlab
