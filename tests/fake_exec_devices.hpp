// Stand-in devices for `exec` without a GPU: 80 GiB, 70 GiB free; the program's "device
// memory" is the number its stand-in writes to a file, and the ballast held is written beside it
// (USAGE.ballast), so that a stand-in can behave as a program would under that budget.
#pragma once

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
  explicit FakeDevices(std::filesystem::path usage_file) : usage_file_(std::move(usage_file)) {
    facts_.push_back({.index = 0, .name = "Fake GPU", .uuid = "GPU-fake", .total_bytes = 80_GiB});
  }
  [[nodiscard]] const std::vector<DeviceFacts>& facts() const override { return facts_; }
  [[nodiscard]] std::uint64_t free_bytes(std::size_t /*i*/) override {
    return kFree - ballast - program_usage();
  }
  void hold(std::size_t /*i*/, std::uint64_t bytes) override {
    ballast = bytes;
    ++holds;
    released_ = false;
    std::ofstream(usage_file_.string() + ".ballast") << bytes << "\n";  // for the stand-in
    std::ofstream(usage_file_) << "0\n";  // a new program has taken nothing yet
  }
  void release() override {
    ballast = 0;
    released_ = true;  // the program has ended: the driver gave its memory back
  }
  [[nodiscard]] DeviceReading read(std::size_t /*i*/, pid_t program) override {
    ++reads;
    saw_program = saw_program || program > 0;
    return {.free_bytes = free_bytes(0), .program_bytes = program_usage()};
  }

  static constexpr std::uint64_t kFree = 70_GiB;
  std::uint64_t ballast = 0;
  int holds = 0;
  int reads = 0;
  bool saw_program = false;

 private:
  [[nodiscard]] std::uint64_t program_usage() const {
    if (released_) return 0;
    std::ifstream in(usage_file_);
    std::uint64_t bytes = 0;
    in >> bytes;
    return bytes;
  }
  std::filesystem::path usage_file_;
  bool released_ = false;
  std::vector<DeviceFacts> facts_;
};

}  // namespace oomlab::testing
