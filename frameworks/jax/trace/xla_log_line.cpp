#include "jax/trace/xla_log_line.hpp"

#include <algorithm>

namespace oomlab::jax {

std::optional<std::uint64_t> digits(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  for (const char c : text) {
    if (!is_digit(c)) return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::optional<std::uint64_t> time_of_day(std::string_view line, std::size_t at) {
  if (line.size() < at + 15 || line[at + 2] != ':' || line[at + 5] != ':' || line[at + 8] != '.')
    return std::nullopt;
  const auto h = digits(line.substr(at, 2));
  const auto m = digits(line.substr(at + 3, 2));
  const auto s = digits(line.substr(at + 6, 2));
  const auto us = digits(line.substr(at + 9, 6));
  if (!h || !m || !s || !us || *h > 23 || *m > 59 || *s > 60) return std::nullopt;
  return (((*h * 60 + *m) * 60 + *s) * 1'000'000 + *us) * 1'000;
}

std::size_t tensorflow_prefix(std::string_view line) {
  if (line.size() < 30 || line[4] != '-' || line[7] != '-' || line[10] != ' ' ||
      line.substr(26, 2) != ": " ||
      std::string_view("IWEF").find(line[28]) == std::string_view::npos)
    return 0;
  return 29;
}

std::optional<LogLine> read_log_line(std::string_view line) {
  // absl's "I1129 01:46:33.048540" is 21 characters, TensorFlow's prefix 29; then the thread
  // (TensorFlow's only if asked for), the place and "] ".
  const std::size_t tf = tensorflow_prefix(line);
  const std::size_t head = tf != 0 ? tf : 21;
  if (line.size() < head + 3 || (tf == 0 && line[5] != ' ')) return std::nullopt;
  const std::optional<std::uint64_t> t_ns = time_of_day(line, tf != 0 ? 11 : 6);
  const std::size_t close = line.find("] ", head);
  if (!t_ns || close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(head, close - head);
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  const std::size_t space = rest.find(' ');
  const auto thread =
      space == std::string_view::npos ? std::nullopt : digits(rest.substr(0, space));
  return LogLine{.t_ns = *t_ns,
                 .thread = thread.value_or(0),
                 .thread_known = thread.has_value(),
                 .message = line.substr(close + 2)};
}

}  // namespace oomlab::jax
