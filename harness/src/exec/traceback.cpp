#include "exec/traceback.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>

namespace oomlab {

namespace {

// The line past a torchrun mark: "[rank1]: ", "[default0]:".
std::string_view unmarked(std::string_view line) {
  if (!line.starts_with('[')) return line;
  const std::size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 24) return line;
  line.remove_prefix(close + 2);
  if (line.starts_with(' ')) line.remove_prefix(1);
  return line;
}

// '  File "/x/train.py", line 31, in main' -> "main (/x/train.py:31)".
std::optional<std::string> frame_line(std::string_view line) {
  const std::size_t file = line.find("File \"");
  if (file == std::string_view::npos || line.find_first_not_of(' ') != file) return std::nullopt;
  const std::size_t quote = line.find("\", line ", file + 6);
  if (quote == std::string_view::npos) return std::nullopt;
  const std::string_view path = line.substr(file + 6, quote - file - 6);
  const std::string_view rest = line.substr(quote + 8);
  int number = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (ec != std::errc()) return std::nullopt;
  const std::string_view after(end, static_cast<std::size_t>(rest.data() + rest.size() - end));
  const std::string_view name = after.starts_with(", in ") ? after.substr(5) : "?";
  return fmt::format("{} ({}:{})", name, path, number);
}

}  // namespace

void TracebackReader::feed(std::string_view line) {
  const std::string_view text = unmarked(line);
  if (text.find("Traceback (most recent call last):") != std::string_view::npos) {
    reading_ = true;
    block_.clear();
    return;
  }
  if (!reading_) return;
  if (auto frame = frame_line(text)) {
    block_.push_back({.frame = std::move(*frame), .code = {}});
    return;
  }
  if (text.starts_with(' ') || text.empty()) {  // the code under a frame, or its ^^^ marks
    const std::size_t first = text.find_first_not_of(' ');
    const std::string_view code = first == std::string_view::npos ? "" : text.substr(first);
    const bool marks = code.find_first_not_of("^~ ") == std::string_view::npos;
    if (!block_.empty() && block_.back().code.empty() && !marks) block_.back().code = code;
    return;
  }
  // The exception's own line ends the block.
  reading_ = false;
  if (block_.empty()) return;
  last_.assign(block_.rbegin(), block_.rend());
  block_.clear();
}

}  // namespace oomlab
