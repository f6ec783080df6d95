#include "exec/rank_lines.hpp"

namespace oomlab {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

}  // namespace

std::optional<int> number_at(std::string_view text, std::size_t at, std::size_t* end) {
  std::size_t i = at;
  int value = 0;
  while (i < text.size() && is_digit(text[i]) && i - at < 6)
    value = value * 10 + (text[i++] - '0');
  if (i == at) return std::nullopt;
  if (end != nullptr) *end = i;
  return value;
}

std::optional<int> number_after(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + key.size();
  while (i < text.size() && text[i] == ' ')
    ++i;
  return number_at(text, i);
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

std::optional<std::string_view> field(std::string_view line, std::string_view name) {
  const std::string_view t = trimmed(line);
  if (!t.starts_with(name)) return std::nullopt;
  const std::size_t colon = t.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  if (!trimmed(t.substr(name.size(), colon - name.size())).empty()) return std::nullopt;
  return trimmed(t.substr(colon + 1));
}

RankMark read_rank_marks(std::string_view line) {
  RankMark mark{.text = line};
  for (int marks = 0; marks < 4; ++marks) {
    const std::string_view t = mark.text;
    if (t.size() < 4 || t.front() != '[') break;
    std::size_t i = 1;
    while (i < t.size() && is_letter(t[i]))
      ++i;
    std::size_t end = 0;
    const std::optional<int> n = i > 1 ? number_at(t, i, &end) : std::nullopt;
    if (!n || end + 1 >= t.size() || t[end] != ']' || t[end + 1] != ':') break;
    (t.substr(1, i - 1) == "rank" ? mark.rank : mark.local_rank) = *n;
    mark.text = t.substr(end + 2);
    if (!mark.text.empty() && mark.text.front() == ' ') mark.text.remove_prefix(1);
  }
  return mark;
}

std::optional<int> oom_line_device(std::string_view line) {
  if (line.find("out of memory") == std::string_view::npos &&
      line.find("would exceed allowed memory") == std::string_view::npos)
    return std::nullopt;
  for (const std::string_view key : {"GPU ", "Allocation on device "}) {
    std::size_t from = 0;
    while ((from = line.find(key, from)) != std::string_view::npos) {
      std::size_t end = 0;
      const std::optional<int> n = number_at(line, from + key.size(), &end);
      from += key.size();
      if (!n || end >= line.size()) continue;
      const std::string_view rest = line.substr(end);
      if (rest.starts_with(" has a total capacity") || rest.starts_with(";") ||
          rest.starts_with(" would exceed"))
        return n;
    }
  }
  return std::nullopt;
}

}  // namespace oomlab
