#include "exec/oom_place.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace oomlab {

namespace {

// Line `number` of `file`, trimmed; "" when the file cannot be read there (another machine's).
std::string code_at(const std::string& file, std::uint64_t number) {
  constexpr std::uint64_t kMostLines = 200000;
  std::ifstream in(file);
  std::string line;
  for (std::uint64_t n = 1; n <= number && n <= kMostLines && std::getline(in, line); ++n) {
    if (n != number) continue;
    const std::size_t first = line.find_first_not_of(" \t");
    const std::size_t last = line.find_last_not_of(" \t\r");
    return first == std::string::npos ? std::string() : line.substr(first, last - first + 1);
  }
  return {};
}

// "name (file:line)" -> (file, line).
std::optional<std::pair<std::string, std::uint64_t>> place_of(const std::string& frame) {
  const std::size_t open = frame.rfind(" (");
  const std::size_t colon = frame.rfind(':');
  if (open == std::string::npos || colon == std::string::npos || colon < open) return {};
  const std::string file = frame.substr(open + 2, colon - open - 2);
  std::uint64_t line = 0;
  for (std::size_t i = colon + 1; i < frame.size() && std::isdigit(frame[i]) != 0; ++i)
    line = line * 10 + static_cast<std::uint64_t>(frame[i] - '0');
  return std::pair{file, line};
}

}  // namespace

std::vector<std::string> program_roots(const ProgramRun& program) {
  std::vector<std::string> roots;
  std::error_code ec;
  for (const std::string& arg : program.command) {
    if (!arg.ends_with(".py")) continue;
    // As the command named it (the frames name files as the program's machine saw them).
    const std::filesystem::path script = std::filesystem::absolute(arg, ec);
    if (!ec) roots.push_back(script.parent_path().lexically_normal().string());
  }
  const std::filesystem::path here = std::filesystem::current_path(ec);
  if (!ec) roots.push_back(here.string());
  return roots;
}

void choose_user_frame(OomRecord& oom, const ProgramRun& program,
                       const std::vector<TracebackFrame>& traceback,
                       std::span<const std::string> more_roots) {
  std::vector<std::string> roots = program_roots(program);
  roots.insert(roots.end(), more_roots.begin(), more_roots.end());
  const std::string* user = trace::innermost_user_frame(oom.frames, roots);
  oom.user_frame.clear();
  oom.user_line.clear();
  if (user == nullptr) return;
  oom.user_frame = *user;
  const auto printed = std::find_if(traceback.begin(), traceback.end(),
                                    [&](const TracebackFrame& f) { return f.frame == *user; });
  if (printed != traceback.end() && !printed->code.empty()) {
    oom.user_line = printed->code;
  } else if (const auto place = place_of(*user)) {
    oom.user_line = code_at(place->first, place->second);
  }
}

void describe_failure(OomRecord& oom, const trace::Trace& trace, const ProgramRun& program) {
  constexpr std::size_t kHolders = 10;
  const std::uint32_t fatal = trace::fatal_failure_at(trace);
  std::uint32_t at = fatal;
  if (at == trace::Event::kNone) {
    const std::uint32_t last = trace.demand.last_alloc_at;
    at = last == trace::Event::kNone ? static_cast<std::uint32_t>(trace.events.size()) : last + 1;
  }
  // The program's folders, and its entry script's as its stacks show it (the command may name
  // none: a launcher's, a shell script's).
  const std::vector<std::string> entry = trace::entry_folders(trace);
  std::vector<std::string> roots = program_roots(program);
  roots.insert(roots.end(), entry.begin(), entry.end());
  oom.holders = trace::memory_holders(trace, at, kHolders, roots);
  if (fatal == trace::Event::kNone || !trace.recorded || trace.recorded->frames_of(fatal).empty())
    return;
  const std::string kept_frame = oom.user_frame;
  const std::string kept_line = oom.user_line;
  oom.frames = trace::program_frames(trace.recorded->frames_of(fatal));
  oom.frames_from = "snapshot";
  choose_user_frame(oom, program, {}, entry);
  if (oom.user_frame == kept_frame && !kept_line.empty()) oom.user_line = kept_line;
}

}  // namespace oomlab
