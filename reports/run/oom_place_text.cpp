#include "reports/run/oom_place_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "oomlab/registry.hpp"
#include "oomlab/trace.hpp"
#include "oomlab/units.hpp"
#include "reports/run/cache_words.hpp"

namespace oomlab {

namespace {

constexpr std::size_t kBelowShown = 3;

// "name (/long/path/site-packages/diffusers/x.py:12)" -> "name (diffusers/x.py:12)"; another
// file by its last three parts, or, the user's own (`parts` 1), by its name alone.
std::string short_frame(std::string_view frame, int parts = 3) {
  const std::size_t open = frame.rfind(" (");
  if (open == std::string_view::npos) return std::string(frame);
  std::string_view place = frame.substr(open + 2);
  for (const std::string_view root : {"/site-packages/", "/dist-packages/"}) {
    const std::size_t at = place.rfind(root);
    if (at != std::string_view::npos) {
      place.remove_prefix(at + root.size());
      return fmt::format("{} ({}", frame.substr(0, open), place);
    }
  }
  std::size_t at = place.size();
  for (int part = 0; part < parts && at != std::string_view::npos && at > 0; ++part)
    at = place.rfind('/', at - 1);
  if (at != std::string_view::npos) place.remove_prefix(at + 1);
  return fmt::format("{} ({}", frame.substr(0, open), place);
}

// A framework's own code between two of the user's calls (Framework::plumbing_frames).
bool plumbing(std::string_view frame) {
  for (const Framework& f : Registry::global().frameworks()) {
    for (const std::string& mark : f.plumbing_frames) {
      if (frame.find(mark) != std::string_view::npos) return true;
    }
  }
  return false;
}

std::string source_of(const OomRecord& oom) {
  if (oom.frames_from == "traceback") return "the program's traceback";
  if (oom.frames_from == "snapshot") return fmt::format("{}'s snapshot", snapshot_words().owner);
  if (oom.frames_from == "compiled") return "the compiled step's metadata";
  return "the trace";
}

}  // namespace

std::string oom_where_text(const OomRecord& oom) {
  if (oom.frames.empty()) return {};
  const auto user = !oom.user_frame.empty()
                        ? std::find(oom.frames.begin(), oom.frames.end(), oom.user_frame)
                        : std::find_if(oom.frames.begin(), oom.frames.end(),
                                       [](const std::string& f) { return trace::user_frame(f); });
  std::string text;
  if (user == oom.frames.end()) {
    text = fmt::format("no frame in the user's own files among the {} recorded; innermost {}",
                       oom.frames.size(), short_frame(oom.frames.front()));
  } else {
    text = short_frame(*user, 1);
    if (!oom.user_line.empty()) text += ": " + oom.user_line;
    const auto below = static_cast<std::size_t>(user - oom.frames.begin());
    if (below > 0) {
      std::vector<std::string> shown;
      for (std::size_t i = below; i-- > 0 && shown.size() < kBelowShown;) {
        if (!plumbing(oom.frames[i])) shown.push_back(short_frame(oom.frames[i]));
      }
      text += fmt::format(", then {}{}", fmt::join(shown, " → "),
                          below > shown.size()
                              ? fmt::format(" … {} (innermost; {} library frames in all)",
                                            short_frame(oom.frames.front()), below)
                              : "");
    }
  }
  return fmt::format("{} (from {})", text, source_of(oom));
}

std::string oom_where_lines(const OomRecord& oom, bool program_run) {
  if (!oom.frames.empty()) return fmt::format("where      {}\n", oom_where_text(oom));
  // A program whose snapshot was read (it has holders) but holds no stacks: say how to get them.
  if (!program_run || !oom.program || oom.holders.empty()) return {};
  return "where      not known: no stack was recorded at the failing request and the program "
         "printed no traceback (record stacks with --snapshot-stacks python)\n";
}

std::string oom_holder_lines(const OomRecord& oom) {
  std::string out;
  auto it = std::back_inserter(out);
  for (const trace::MemoryHolder& h : oom.holders) {
    fmt::format_to(it, "{:<10} {} in {} block{} · {}\n",
                   &h == &oom.holders.front() ? "held by" : "", format_bytes(h.bytes),
                   format_count(h.blocks), h.blocks == 1 ? "" : "s", h.where);
  }
  return out;
}

std::vector<ReportRow> holder_rows(const OomRecord& oom) {
  std::vector<ReportRow> rows;
  for (const trace::MemoryHolder& h : oom.holders) {
    rows.push_back(
        {format_bytes(h.bytes), fmt::format("{} ({} block{})", h.where, format_count(h.blocks),
                                            h.blocks == 1 ? "" : "s")});
  }
  return rows;
}

}  // namespace oomlab
