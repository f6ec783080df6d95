// Which of a PyTorch snapshot's device traces is read: the one the user named, else the one
// device whose trace holds a history (a process records on its own device: rank 1's snapshot
// has its history in device_traces[1]). What is said of that choice, or why none is read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace oomlab::torch {

// What the user asked for: a device, or none (then the one with a history), and how the command
// names a device before its number ("--device ", "-p device="), for a message.
struct DeviceAsked {
  std::optional<std::uint32_t> device;
  std::string_view option = "--device ";
};

// The answer: read `device` (a notice when it was picked for the user), or refuse with `what`,
// said of `where` ("device_traces", "device_traces[0] is empty"); `at_list`: the refusal points
// at device_traces itself, else at device_traces[device].
struct DevicePick {
  std::uint32_t device = 0;
  std::string notice;
  std::string where;
  std::string what;  // "" : read `device`
  bool at_list = true;
};

// `entries`: how many entries each device_traces[i] holds (0 for one that is empty or not a list).
[[nodiscard]] DevicePick pick_device(std::span<const std::uint64_t> entries,
                                     const DeviceAsked& asked);

}  // namespace oomlab::torch
