// Stand-in devices for `exec` without a GPU: 80 GiB, 70 GiB free each; the program's "device
// memory" is the number its stand-in writes to a file (USAGE for device 0, USAGE.1, USAGE.2 ...
// for the others), and the ballast held is written beside it (USAGE.ballast, USAGE.1.ballast),
// so that a stand-in can behave as a program would under that budget.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exec/exec_devices.hpp"
#include "oomlab/units.hpp"

namespace oomlab::testing {

using namespace oomlab::literals;

class FakeDevices final : public ExecDevices {
 public:
  // `uuid`: device 0's, what the program finds in CUDA_VISIBLE_DEVICES.
  explicit FakeDevices(std::filesystem::path usage_file, std::size_t count = 1,
                       const std::string& uuid = "GPU-fake")
      : usage_file_(std::move(usage_file)), ballasts(count, 0) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::string n = i == 0 ? std::string() : std::to_string(i);
      facts_.push_back({.index = static_cast<int>(i),
                        .name = "Fake GPU",
                        .uuid = uuid + n,
                        .total_bytes = 80_GiB});
    }
  }
  [[nodiscard]] const std::vector<DeviceFacts>& facts() const override { return facts_; }
  [[nodiscard]] std::uint64_t free_bytes(std::size_t i) override {
    return kFree - ballasts.at(i) - program_usage(i);
  }
  void hold(std::size_t i, std::uint64_t bytes) override {
    ballasts.at(i) = bytes;
    if (i == 0) ballast = bytes;
    ++holds;
    released_ = false;
    std::ofstream(usage_path(i).string() + ".ballast") << bytes << "\n";  // for the stand-in
    std::ofstream(usage_path(i)) << "0\n";  // a new program has taken nothing yet
  }
  void release() override {
    ballast = 0;
    std::fill(ballasts.begin(), ballasts.end(), 0);
    released_ = true;  // the program has ended: the driver gave its memory back
  }
  [[nodiscard]] DeviceReading read(std::size_t i, pid_t program) override {
    ++reads;
    saw_program = saw_program || program > 0;
    return {.free_bytes = free_bytes(i), .program_bytes = program_usage(i)};
  }
  // Device i's usage file: USAGE, USAGE.1, ...
  [[nodiscard]] std::filesystem::path usage_path(std::size_t i) const {
    return i == 0 ? usage_file_
                  : std::filesystem::path(usage_file_.string() + "." + std::to_string(i));
  }

  static constexpr std::uint64_t kFree = 70_GiB;
  std::uint64_t ballast = 0;  // device 0's
  int holds = 0;
  int reads = 0;
  bool saw_program = false;

 private:
  [[nodiscard]] std::uint64_t program_usage(std::size_t i) const {
    if (released_) return 0;
    std::ifstream in(usage_path(i));
    std::uint64_t bytes = 0;
    in >> bytes;
    return bytes;
  }
  std::filesystem::path usage_file_;
  bool released_ = false;
  std::vector<DeviceFacts> facts_;

 public:
  std::vector<std::uint64_t> ballasts;  // each device's
};

}  // namespace oomlab::testing
