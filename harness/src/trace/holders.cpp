// memory_holders and user_frame (oomlab/trace.hpp): who held the memory at a moment of a trace,
// and which of a stack's frames are the user's own.
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

namespace oomlab::trace {

namespace {

// "name (file:line)" -> file.
std::string_view file_of(std::string_view frame) {
  const std::size_t open = frame.rfind(" (");
  const std::size_t colon = frame.rfind(':');
  if (open == std::string_view::npos || colon == std::string_view::npos || colon < open) return {};
  return frame.substr(open + 2, colon - open - 2);
}

std::string_view name_of(std::string_view frame) {
  const std::size_t open = frame.rfind(" (");
  return open == std::string_view::npos ? frame : frame.substr(0, open);
}

// An installed package's file as its import path shows it ("diffusers/models/unets/x.py").
std::string_view package_path(std::string_view file) {
  for (const std::string_view root : {"/site-packages/", "/dist-packages/"}) {
    const std::size_t at = file.rfind(root);
    if (at != std::string_view::npos) return file.substr(at + root.size());
  }
  return {};
}

// A file outside the installed packages by its last three parts ("diffusers/models/resnet.py"
// of a PYTHONPATH folder, "data/programs/train.py").
std::string_view last_parts(std::string_view file) {
  constexpr int kParts = 3;
  std::size_t at = file.size();
  for (int part = 0; part < kParts; ++part) {
    const std::size_t slash = at == 0 ? std::string_view::npos : file.rfind('/', at - 1);
    if (slash == std::string_view::npos) return file;
    at = slash;
  }
  return file.substr(at + 1);
}

// In a registered framework's own code (Framework::packages).
bool in_framework(std::string_view frame) {
  const std::string_view path = package_path(file_of(frame));
  for (const Framework& framework : Registry::global().frameworks()) {
    for (const std::string& package : framework.packages) {
      if (path.starts_with(package)) return true;
    }
  }
  return false;
}

bool python_frame(std::string_view frame) {
  return file_of(frame).ends_with(".py");
}

// The frame a block's memory is charged to, in words: "forward (diffusers/models/resnet.py)".
std::string holder_of(const std::vector<std::string>& frames) {
  if (frames.empty()) {
    return "no frames recorded (record stacks: exec --snapshot-stacks python, or "
           "_record_memory_history(stacks='python')), or allocated on autograd's backward thread";
  }
  const auto outside = std::find_if(frames.begin(), frames.end(), [](const std::string& f) {
    return python_frame(f) && !in_framework(f);
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

bool user_frame(std::string_view frame, std::span<const std::string> roots) {
  const std::string_view file = file_of(frame);
  if (!file.ends_with(".py") || file.starts_with("<")) return false;
  if (!package_path(file).empty()) return false;
  if (!roots.empty()) {
    return std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
      return !root.empty() && file.starts_with(root) &&
             (root.ends_with('/') || file.size() == root.size() || file[root.size()] == '/');
    });
  }
  // Python's own library: /usr/lib/python3.12/, /opt/x/lib/python3.11/ (a venv's site-packages
  // was caught above).
  const std::size_t lib = file.find("/lib/python3");
  return lib == std::string_view::npos;
}

std::vector<MemoryHolder> memory_holders(const Trace& trace, std::uint32_t position,
                                         std::size_t most) {
  std::vector<std::uint32_t> slot_event(trace.slots, Event::kNone);
  const std::uint32_t end = std::min<std::uint32_t>(position, trace.events.size());
  for (std::uint32_t i = 0; i < end; ++i) {
    const Event e = trace.events[i];
    if (e.slot == Event::kNone || e.slot >= slot_event.size()) continue;
    if (e.op == Op::alloc) slot_event[e.slot] = i;
    if (e.op == Op::free) slot_event[e.slot] = Event::kNone;
  }
  static const std::vector<std::string> kNone;
  std::unordered_map<std::string, MemoryHolder> groups;
  std::unordered_map<std::uint32_t, std::string> by_stack;  // a stack's holder, worked out once
  for (const std::uint32_t event : slot_event) {
    if (event == Event::kNone) continue;
    const std::uint32_t stack = trace.recorded && event < trace.recorded->event_stacks.size()
                                    ? trace.recorded->event_stacks[event]
                                    : Event::kNone;
    auto [known, added] = by_stack.try_emplace(stack);
    if (added) known->second = holder_of(trace.recorded ? trace.recorded->frames_of(event) : kNone);
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
