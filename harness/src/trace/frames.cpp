// Which of a stack's frames are the user's own (user_frame, innermost_user_frame), where the
// program's own folders are when only its stacks say (entry_folders), and which frames are the
// recording's own machinery rather than the program's (recording_frame, program_frames).
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "trace/frame_text.hpp"

namespace oomlab::trace {

bool user_frame(std::string_view frame, std::span<const std::string> roots) {
  const std::string_view file = file_of(frame);
  if (!file.ends_with(".py") || file.starts_with("<")) return false;
  if (!package_path(file).empty()) return false;
  if (!roots.empty()) return under_roots(file, roots);
  // Python's own library: /usr/lib/python3.12/, /opt/x/lib/python3.11/ (a venv's site-packages
  // was caught above).
  const std::size_t lib = file.find("/lib/python3");
  return lib == std::string_view::npos;
}

const std::string* innermost_user_frame(std::span<const std::string> frames,
                                        std::span<const std::string> roots) {
  const auto first = [&](std::span<const std::string> under) -> const std::string* {
    const auto at = std::find_if(frames.begin(), frames.end(),
                                 [&](const std::string& f) { return user_frame(f, under); });
    return at == frames.end() ? nullptr : &*at;
  };
  const std::string* under_a_root = roots.empty() ? nullptr : first(roots);
  return under_a_root != nullptr ? under_a_root : first({});
}

std::vector<std::string> entry_folders(const Trace& trace) {
  if (!trace.recorded) return {};
  // Each stack's vote: the file of its outermost frame outside installed packages, Python's
  // library and C++, when that frame is a module's top level. A stack cut short (its outermost
  // frames not kept) votes for a library's module at most now and then; the script wins.
  std::map<std::string_view, std::size_t> votes;
  for (const std::vector<std::string>& stack : trace.recorded->stacks) {
    const auto outermost = std::find_if(stack.rbegin(), stack.rend(),
                                        [](const std::string& f) { return user_frame(f); });
    if (outermost != stack.rend() && name_of(*outermost) == "<module>")
      ++votes[file_of(*outermost)];
  }
  const auto most = std::max_element(
      votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == votes.end()) return {};
  const std::size_t slash = most->first.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return {};  // no folder, or the root
  return {std::string(most->first.substr(0, slash))};
}

bool recording_frame(std::string_view frame) {
  const std::string_view name = name_of(frame);
  for (const Framework& framework : Registry::global().frameworks()) {
    for (const std::string& mark : framework.recording_frames) {
      if (name.find(mark) != std::string_view::npos) return true;
    }
  }
  return false;
}

std::vector<std::string> program_frames(std::span<const std::string> frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  for (const std::string& f : frames) {
    if (!recording_frame(f)) out.push_back(f);
  }
  return out;
}

}  // namespace oomlab::trace
