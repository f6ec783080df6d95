#include "pytorch/trace/snapshot_device.hpp"

#include <fmt/format.h>

#include <vector>

#include "oomlab/units.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

namespace {

constexpr std::string_view kNoHistory =
    "the snapshot has no allocation history: record it with "
    "torch.cuda.memory._record_memory_history() before the run";

// "a", "a and b", "a, b and c" (`last` "or": "a or b").
std::string listed(const std::vector<std::string>& items, std::string_view last = "and") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? fmt::format(" {} ", last) : ", ";
    out += items[i];
  }
  return out;
}

// The devices whose trace holds a history, but `except`.
std::vector<std::uint32_t> with_history(std::span<const std::uint64_t> entries,
                                        std::optional<std::uint32_t> except = std::nullopt) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t d = 0; d < entries.size(); ++d) {
    if (entries[d] > 0 && d != except) out.push_back(d);
  }
  return out;
}

// "devices 1 and 2 (310 and 20 entries: --device 1 or --device 2)".
std::string devices_and_entries(std::span<const std::uint64_t> entries,
                                const std::vector<std::uint32_t>& devices,
                                std::string_view option) {
  std::vector<std::string> numbers;
  std::vector<std::string> counts;
  std::vector<std::string> flags;
  for (const std::uint32_t d : devices) {
    numbers.push_back(std::to_string(d));
    counts.push_back(format_count(entries[d]));
    flags.push_back(fmt::format("{}{}", option, d));
  }
  return fmt::format("device{} {} ({} entries: {})", devices.size() == 1 ? "" : "s",
                     listed(numbers), listed(counts), listed(flags, "or"));
}

// The user named `device`: read it, or say why not.
DevicePick named(std::span<const std::uint64_t> entries, std::uint32_t device,
                 std::string_view option) {
  if (device >= entries.size()) {
    return {
        .where = "device_traces",
        .what = fmt::format("no trace for device {}: the snapshot has {}", device, entries.size())};
  }
  if (entries[device] > 0) return {.device = device};
  const std::vector<std::uint32_t> others = with_history(entries, device);
  const std::string where = fmt::format("device_traces[{}] is empty", device);
  if (others.empty()) {
    return {.device = device, .where = where, .what = std::string(kNoHistory), .at_list = false};
  }
  return {.device = device,
          .where = where,
          .what = fmt::format("device {} has no allocation history in this snapshot; {} {}", device,
                              devices_and_entries(entries, others, option),
                              others.size() == 1 ? "has one" : "have one each"),
          .at_list = false};
}

}  // namespace

DevicePick pick_device(std::span<const std::uint64_t> entries, const DeviceAsked& asked) {
  if (entries.empty()) return {.where = "device_traces is empty", .what = std::string(kNoHistory)};
  if (asked.device) return named(entries, *asked.device, asked.option);
  const std::vector<std::uint32_t> histories = with_history(entries);
  if (histories.empty()) {
    if (entries.size() == 1) return named(entries, 0, asked.option);
    return {
        .where = "device_traces",
        .what = fmt::format("every device's trace ({}) is empty: {}", entries.size(), kNoHistory)};
  }
  if (histories.size() > 1) {
    return {.where = "device_traces",
            .what = fmt::format("{} hold a history each: name the one to read",
                                devices_and_entries(entries, histories, asked.option))};
  }
  DevicePick pick{.device = histories.front()};
  if (pick.device == 0) return pick;  // the device read when none is named: nothing to say
  std::vector<std::string> empty;
  for (std::uint32_t d = 0; d < entries.size(); ++d) {
    if (d != pick.device) empty.push_back(fmt::format("device_traces[{}]", d));
  }
  pick.notice =
      fmt::format("the history is of device {} (device_traces[{}]); {} {} empty", pick.device,
                  pick.device, listed(empty), empty.size() == 1 ? "is" : "are");
  return pick;
}

}  // namespace oomlab::torch
