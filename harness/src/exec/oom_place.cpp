#include "exec/oom_place.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <optional>
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

void describe_failure(OomRecord& oom, const trace::Trace& trace) {
  constexpr std::size_t kHolders = 10;
  const std::uint32_t fatal = trace::fatal_failure_at(trace);
  std::uint32_t at = fatal;
  if (at == trace::Event::kNone) {
    const std::uint32_t last = trace.demand.last_alloc_at;
    at = last == trace::Event::kNone ? static_cast<std::uint32_t>(trace.events.size()) : last + 1;
  }
  oom.holders = trace::memory_holders(trace, at, kHolders);
  if (fatal != trace::Event::kNone && trace.pytorch && !trace.pytorch->frames_of(fatal).empty()) {
    oom.frames = trace.pytorch->frames_of(fatal);
    oom.frames_from = "snapshot";
  }
  if (!oom.user_line.empty()) return;
  const auto user = std::find_if(oom.frames.begin(), oom.frames.end(),
                                 [](const std::string& f) { return trace::user_frame(f); });
  if (user == oom.frames.end()) return;
  if (const auto place = place_of(*user)) oom.user_line = code_at(place->first, place->second);
}

}  // namespace oomlab
