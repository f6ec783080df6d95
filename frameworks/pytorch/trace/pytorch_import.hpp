// PyTorch's memory snapshots as a trace format: a pickle (torch.cuda.memory._dump_snapshot) or
// its JSON dump, read at the tensor level (what the program asked for) or the segment level
// (what its allocator got from the driver). Registered by frameworks/pytorch/pytorch.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "oomlab/trace.hpp"
#include "pytorch/trace/snapshot_device.hpp"
#include "trace/stop_poll.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

inline constexpr const char* kPytorchFormatName = "pytorch";

// The history of the device `device` names (pick_device). Calls `poll` as it reads (StopPoll):
// what stops a long load.
[[nodiscard]] Trace load_pytorch_snapshot(const std::filesystem::path& path, Level level,
                                          const DeviceAsked& device, StopPoll poll = {});
// The same from bytes already in memory (`path` for messages): what the fuzzers drive.
[[nodiscard]] Trace parse_pytorch_snapshot(const std::filesystem::path& path, std::string content,
                                           Level level, const DeviceAsked& device,
                                           StopPoll poll = {});
// A pickle starts with PROTO, the JSON dump with '{' (after blank lines, if any).
[[nodiscard]] bool is_pytorch_snapshot(std::string_view head);
// The number the registry gave the format.
[[nodiscard]] Format pytorch_format();

}  // namespace oomlab::torch
