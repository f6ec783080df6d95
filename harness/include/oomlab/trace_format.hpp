// A trace format as the registry holds it: how a file of it is recognised and read. oomlab's own
// events.csv and RMM's log are the engine's; a framework adds its own (Framework::
// add_trace_formats) and a plugin its own (Registry::add_trace_format). `trace::load` detects a
// file's format by asking each in turn and reads it with that one's importer, which builds the
// Trace with a TraceBuilder (oomlab/trace_builder.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <string>
#include <string_view>

#include "oomlab/trace.hpp"

namespace oomlab::trace {

inline constexpr std::uint8_t kFirstRegisteredFormat = 16;

struct FormatInfo {
  Format format = Format::registered;  // the registry sets a registered one's
  std::string name;                    // as --format names it
  // What such a file is, for messages: "an events.csv", "an RMM log".
  std::string described_as;
  // Whether a file that starts with `head` (its first 4 KiB, as read) is one of these.
  bool (*detect)(std::string_view head) = nullptr;
  // Reads it, calling options.check_stop now and then; throws Error(input) with "file:line: what"
  // (or "file: byte N: what") for anything it cannot read.
  Trace (*load)(const std::filesystem::path& path, const LoadOptions& options) = nullptr;
  // The backend (its name) that models the allocator such a trace was recorded under: `auto`
  // replays the trace through it ("": auto's usual rule).
  std::string replayed_by;
  // Whether the trace can be read at the tensor level, which --level picks (else: one level).
  bool has_levels = false;
  // Where a block has no frames, why, and how to record them ("" : nothing more to say than that
  // none were recorded).
  std::string no_frames_words;
  // Whether a series of its traces pairs their requests by their order alone (no frames are
  // recorded) where a request made at one value only is common (XLA's autotuner tries more
  // candidates at one shape than at another): a pair that grew more than twice as fast as the
  // value did is then a shifted pair: the larger value's request is made in proportion to the
  // value instead of on the pair's line.
  bool shifted_pairs = false;
  // Whether its requests on streams past the first are the framework's own work beside the
  // program's, not the program's sequence (a compiler's autotuner trying candidates on threads
  // of its own, as many as it likes at each shape): a series pairs the first stream's requests
  // alone and makes each of the others at the largest value's size, one the framework may be
  // refused and go on without (an autotuner skips a candidate that does not fit).
  bool side_streams = false;
};

// `head` past a UTF-8 byte-order mark and the blank lines before a header (what the CSV readers
// skip too).
[[nodiscard]] inline std::string_view first_content(std::string_view head) {
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  const auto first = head.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string_view{} : head.substr(first);
}

// The formats `trace::load` knows, in number order: the engine's (oomlab, rmm), then what the
// registered frameworks add (Framework::add_trace_formats, on the first call) and plugins'.
[[nodiscard]] const std::list<FormatInfo>& formats();
[[nodiscard]] const FormatInfo* format_info(Format format);
[[nodiscard]] const FormatInfo* find_format(std::string_view name);  // by its --format name
// "an events.csv, an RMM log, or a PyTorch snapshot as pickle or JSON", for messages.
[[nodiscard]] std::string known_formats();

}  // namespace oomlab::trace
