// A snapshot of a process on another device than 0 (rank 1 records on cuda:1: its history is in
// device_traces[1]) read with no device named: the one device with a history is read and a note
// says so; several with one are refused, naming each and the flag; a device named that has none
// is refused in one line that says where the history is, never that there is none.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pytorch/trace/snapshot_device.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using json = nlohmann::json;
using torch::DeviceAsked;
using torch::pick_device;

constexpr std::string_view kNoHistory = "the snapshot has no allocation history";

TEST(SnapshotDevices, TheOneDeviceWithAHistoryIsReadAndSaidWhenNoneIsNamed) {
  const std::vector<std::uint64_t> entries = {0, 310};
  const torch::DevicePick pick = pick_device(entries, {});
  EXPECT_TRUE(pick.what.empty()) << pick.what;
  EXPECT_EQ(pick.device, 1U);
  EXPECT_EQ(pick.notice,
            "the history is of device 1 (device_traces[1]); device_traces[0] is empty");
  const std::vector<std::uint64_t> three = {0, 0, 12};
  EXPECT_EQ(pick_device(three, {}).notice,
            "the history is of device 2 (device_traces[2]); device_traces[0] and "
            "device_traces[1] are empty");
}

TEST(SnapshotDevices, DeviceZeroWithTheHistoryIsReadWithoutANote) {
  const std::vector<std::uint64_t> entries = {40, 0};
  const torch::DevicePick pick = pick_device(entries, {});
  EXPECT_TRUE(pick.what.empty());
  EXPECT_EQ(pick.device, 0U);
  EXPECT_TRUE(pick.notice.empty()) << pick.notice;
}

TEST(SnapshotDevices, SeveralDevicesWithAHistoryAreRefusedNamingEachAndTheFlag) {
  const std::vector<std::uint64_t> entries = {40, 310};
  const torch::DevicePick pick = pick_device(entries, {.option = "-p device="});
  EXPECT_EQ(pick.where, "device_traces");
  EXPECT_EQ(pick.what,
            "devices 0 and 1 (40 and 310 entries: -p device=0 or -p device=1) hold a history "
            "each: name the one to read");
}

TEST(SnapshotDevices, ANamedDeviceWithoutAHistorySaysWhereTheHistoryIsAndNothingElse) {
  const std::vector<std::uint64_t> entries = {0, 310};
  const torch::DevicePick pick = pick_device(entries, {.device = 0});
  EXPECT_EQ(pick.where, "device_traces[0] is empty");
  EXPECT_EQ(pick.what,
            "device 0 has no allocation history in this snapshot; device 1 (310 entries: "
            "--device 1) has one");
  EXPECT_FALSE(pick.at_list);
  const std::vector<std::uint64_t> none = {0, 0};
  EXPECT_NE(pick_device(none, {.device = 1}).what.find(kNoHistory), std::string::npos)
      << "no device has one: that is what is said";
  EXPECT_NE(pick_device(none, {}).what.find(kNoHistory), std::string::npos);
  EXPECT_EQ(pick_device(entries, {.device = 2}).what, "no trace for device 2: the snapshot has 2");
}

fs::path captured_rank1() {
  return fs::path(testing::test_data_dir()) / "captured" / "ddp_2rank" / "snapshot-rank1.pickle";
}

// The line each command's notice or error is in, whole.
std::string line_with(const std::string& text, std::string_view words) {
  const std::size_t at = text.find(words);
  if (at == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', at);
  const std::size_t end = text.find('\n', at);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end == std::string::npos ? std::string::npos : end - start - 1);
}

constexpr std::string_view kNotice =
    "note: the history is of device 1 (device_traces[1]); device_traces[0] is empty";

TEST(SnapshotDevices, WhatifOfRankOnesSnapshotReadsItsDeviceAndSaysSo) {
  const testing::CliRun run =
      testing::run_in_process({"oomlab", "whatif", "--trace", captured_rank1().string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE((run.out + run.err).find(kNotice), std::string::npos) << run.out << run.err;
}

TEST(SnapshotDevices, ReplaysOfRankOnesSnapshotReadItsDeviceAndSaySo) {
  const testing::CliRun replay = testing::run_in_process(
      {"oomlab", "run", "replay", "-p", "trace=" + captured_rank1().string(), "-a", "torch",
       "--budget", "4GiB", "--no-out"});
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE(replay.err.find(std::string("oomlab: ") + std::string(kNotice)), std::string::npos)
      << replay.err;
  const fs::path out = testing::fresh_temp_folder("snapshot_devices_frontier") / "run";
  const testing::CliRun frontier = testing::run_in_process({"oomlab", "frontier", "replay", "-p",
                                                            "trace=" + captured_rank1().string(),
                                                            "-a", "torch", "-o", out.string()});
  ASSERT_EQ(frontier.code, 0) << frontier.err;
  EXPECT_NE(frontier.err.find(kNotice), std::string::npos) << frontier.err;
}

TEST(SnapshotDevices, NamingTheEmptyDeviceIsRefusedInOneLineThatSaysWhereTheHistoryIs) {
  const testing::CliRun run = testing::run_in_process(
      {"oomlab", "whatif", "--trace", captured_rank1().string(), "--device", "0"});
  EXPECT_EQ(run.code, 2);
  const std::string line = line_with(run.err, "oomlab: error:");
  EXPECT_NE(line.find("device_traces[0] is empty"), std::string::npos) << run.err;
  EXPECT_NE(line.find("device 0 has no allocation history in this snapshot; device 1 (310 "
                      "entries: --device 1) has one"),
            std::string::npos)
      << line;
  EXPECT_EQ(run.err.find(kNoHistory), std::string::npos)
      << "the snapshot has a history: " << run.err;
}

// A series of rank 1's snapshots at batch 1 and 2 (two requests growing with the batch, one
// not), each with its history in device_traces[1].
fs::path rank_one_series() {
  const fs::path folder = testing::fresh_temp_folder("snapshot_devices_series");
  for (const std::uint64_t batch : {1U, 2U}) {
    json entries = json::array();
    const std::vector<std::uint64_t> sizes = {4_MiB, 10_MiB * batch, 6_MiB * batch};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      entries.push_back({{"action", "alloc"},
                         {"addr", (i + 1) << 30U},
                         {"size", sizes[i]},
                         {"stream", 0},
                         {"frames", json::array({{{"name", fmt::format("layer{}", i)},
                                                  {"filename", "/work/proj/train.py"},
                                                  {"line", 10 + i}}})}});
    }
    std::ofstream(folder / fmt::format("snap_b{}.json", batch)) << json{
        {"segments", json::array()},
        {"device_traces", json::array({json::array(), entries})}}.dump();
  }
  return folder;
}

TEST(SnapshotDevices, FitReplayFromRankOnesSnapshotsReadsTheirDeviceAndSaysSo) {
  const fs::path folder = rank_one_series();
  const testing::CliRun run = testing::run_in_process(
      {"oomlab", "fit", "replay", "--trace", (folder / "snap_b{batch}.json").string(), "--from",
       "batch=1,2", "--range", "batch=1..64", "--budget", "256MiB", "-o",
       (folder / "fit").string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE((run.out + run.err).find(kNotice), std::string::npos) << run.out << run.err;
}

// A process that used two devices: each device trace holds a history.
fs::path two_histories() {
  const auto entries = [](std::uint64_t addr) {
    return json::array(
        {{{"action", "segment_alloc"}, {"addr", addr}, {"size", 2_MiB}, {"stream", 0}},
         {{"action", "alloc"}, {"addr", addr}, {"size", 1_MiB}, {"stream", 0}}});
  };
  const fs::path path = testing::fresh_temp_folder("snapshot_devices_two") / "two.json";
  std::ofstream(path) << json{{"segments", json::array()},
                              {"device_traces", json::array({entries(1 << 21), entries(1 << 22)})}}
                             .dump();
  return path;
}

TEST(SnapshotDevices, TwoDevicesWithAHistoryAreRefusedWithEachCommandsOwnFlag) {
  const fs::path path = two_histories();
  const testing::CliRun whatif =
      testing::run_in_process({"oomlab", "whatif", "--trace", path.string()});
  EXPECT_EQ(whatif.code, 2);
  EXPECT_NE(whatif.err.find("devices 0 and 1 (2 and 2 entries: --device 0 or --device 1) hold a "
                            "history each: name the one to read"),
            std::string::npos)
      << whatif.err;
  const testing::CliRun replay =
      testing::run_in_process({"oomlab", "run", "replay", "--trace", path.string(), "-a", "torch",
                               "--budget", "1GiB", "--no-out"});
  EXPECT_EQ(replay.code, 2);
  EXPECT_NE(replay.err.find("-p device=0 or -p device=1"), std::string::npos) << replay.err;
  const testing::CliRun named =
      testing::run_in_process({"oomlab", "run", "replay", "--trace", path.string(), "-p",
                               "device=1", "-a", "torch", "--budget", "1GiB", "--no-out"});
  EXPECT_EQ(named.code, 0) << named.err;
}

}  // namespace
}  // namespace oomlab
