// memory_holders (oomlab/trace.hpp): who held the memory at a moment of a trace, by the frame
// that allocated each live block.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/trace_format.hpp"
#include "trace/frame_text.hpp"

namespace oomlab::trace {

namespace {

// In a registered framework's own code (Framework::packages): installed ("site-packages/torch/"),
// or, when the program's own folders are known, a folder of that name outside them (a framework
// on PYTHONPATH or built from source: "/src/pytorch/torch/nn/modules/conv.py").
bool in_framework(std::string_view frame, std::span<const std::string> roots) {
  const std::string_view file = file_of(frame);
  const std::string_view path = package_path(file);
  const bool elsewhere = path.empty() && !roots.empty() && !under_roots(file, roots);
  for (const Framework& framework : Registry::global().frameworks()) {
    for (const std::string& package : framework.packages) {
      if (path.starts_with(package)) return true;
      if (elsewhere && file.find("/" + package) != std::string_view::npos) return true;
    }
  }
  return false;
}

bool python_frame(std::string_view frame) {
  return file_of(frame).ends_with(".py");
}

// The frame a block's memory is charged to, in words: "forward (diffusers/models/resnet.py)".
// The recording's own frames (recording_frame) are never charged.
std::string holder_of(const std::vector<std::string>& recorded, std::span<const std::string> roots,
                      std::string_view no_frames_words) {
  const std::vector<std::string> frames = program_frames(recorded);
  if (frames.empty()) {
    return no_frames_words.empty() ? std::string("no frames recorded")
                                   : fmt::format("no frames recorded {}", no_frames_words);
  }
  const auto outside = std::find_if(frames.begin(), frames.end(), [&](const std::string& f) {
    return python_frame(f) && !in_framework(f, roots);
  });
  const auto python = std::find_if(frames.begin(), frames.end(),
                                   [](const std::string& f) { return python_frame(f); });
  const std::string& chosen = outside != frames.end()  ? *outside
                              : python != frames.end() ? *python
                                                       : frames.front();
  const std::string_view file = file_of(chosen);
  const std::string_view package = package_path(file);
  const std::string_view shown = !package.empty() ? package : last_parts(file);
  return fmt::format("{} ({})", name_of(chosen), shown.empty() ? std::string_view("?") : shown);
}

}  // namespace

std::vector<MemoryHolder> memory_holders(const Trace& trace, std::uint32_t position,
                                         std::size_t most, std::span<const std::string> roots) {
  std::vector<std::uint32_t> slot_event(trace.slots, Event::kNone);
  const std::uint32_t end = std::min<std::uint32_t>(position, trace.events.size());
  for (std::uint32_t i = 0; i < end; ++i) {
    const Event e = trace.events[i];
    if (e.slot == Event::kNone || e.slot >= slot_event.size()) continue;
    if (e.op == Op::alloc) slot_event[e.slot] = i;
    if (e.op == Op::free) slot_event[e.slot] = Event::kNone;
  }
  static const std::vector<std::string> kNone;
  const FormatInfo* format = format_info(trace.format);
  std::string_view no_frames;
  if (format != nullptr) no_frames = format->no_frames_words;
  std::unordered_map<std::string, MemoryHolder> groups;
  std::unordered_map<std::uint32_t, std::string> by_stack;  // a stack's holder, worked out once
  for (const std::uint32_t event : slot_event) {
    if (event == Event::kNone) continue;
    const std::uint32_t stack = trace.recorded && event < trace.recorded->event_stacks.size()
                                    ? trace.recorded->event_stacks[event]
                                    : Event::kNone;
    auto [known, added] = by_stack.try_emplace(stack);
    if (added) {
      known->second =
          holder_of(trace.recorded ? trace.recorded->frames_of(event) : kNone, roots, no_frames);
    }
    MemoryHolder& group = groups[known->second];
    group.where = known->second;
    group.bytes += trace.events[event].bytes;
    ++group.blocks;
  }
  std::vector<MemoryHolder> out;
  out.reserve(groups.size());
  for (auto& [where, holder] : groups)
    out.push_back(std::move(holder));
  std::sort(out.begin(), out.end(), [](const MemoryHolder& a, const MemoryHolder& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.where < b.where;
  });
  if (out.size() > most) out.resize(most);
  return out;
}

}  // namespace oomlab::trace
