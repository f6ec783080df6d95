#include "exec/oom_text.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

namespace oomlab::oom_text {
namespace {

constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The multiplier a unit word stands for; nullopt when the word is not a unit.
std::optional<std::uint64_t> unit_scale(std::string_view word) {
  if (word == "B" || word == "byte" || word == "bytes") return 1;
  if (word.empty() || word.size() > 3) return std::nullopt;
  if (word.size() >= 2 && word.back() == 'B') word.remove_suffix(1);
  if (word.size() == 2 && word.back() == 'i') word.remove_suffix(1);
  if (word.size() != 1) return std::nullopt;
  constexpr std::string_view kPrefixes = "KMGTP";
  const std::size_t power = kPrefixes.find(static_cast<char>(word[0] & ~0x20));
  if (power == std::string_view::npos) return std::nullopt;
  return std::uint64_t{1} << (10U * (power + 1));
}

// " (19104890880 bytes)" or " (6727663616B)" right after a rounded size: the exact count.
std::optional<std::uint64_t> exact_in_parentheses(std::string_view text, std::size_t at) {
  if (at + 2 >= text.size() || text[at] != ' ' || text[at + 1] != '(') return std::nullopt;
  const auto exact = read_size(text, at + 2);
  if (!exact || exact->end >= text.size() || text[exact->end] != ')') return std::nullopt;
  return exact->bytes;
}

}  // namespace

std::optional<SizeRead> read_size(std::string_view text, std::size_t at) {
  while (at < text.size() && text[at] == ' ')
    ++at;
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  std::size_t i = at;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (is_digit(c)) {
      if (whole > (UINT64_MAX - 9) / 10) return std::nullopt;
      whole = whole * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
    } else if (c != ',' || digits == 0 || i + 1 >= text.size() || !is_digit(text[i + 1])) {
      break;
    }
  }
  if (digits == 0) return std::nullopt;
  long double fraction = 0.0L;
  if (i + 1 < text.size() && text[i] == '.' && is_digit(text[i + 1])) {
    long double place = 0.1L;
    for (++i; i < text.size() && is_digit(text[i]); ++i, place /= 10.0L) {
      fraction += static_cast<long double>(text[i] - '0') * place;
    }
  }
  std::size_t word_start = i < text.size() && text[i] == ' ' ? i + 1 : i;
  std::size_t word_end = word_start;
  while (word_end < text.size() && word_end - word_start < 6 && is_letter(text[word_end])) {
    ++word_end;
  }
  const bool word_ends = word_end >= text.size() || !is_letter(text[word_end]);
  const auto scale =
      word_ends ? unit_scale(text.substr(word_start, word_end - word_start)) : std::nullopt;
  const std::uint64_t unit = scale.value_or(1);
  if (whole > UINT64_MAX / unit - 1) return std::nullopt;
  const auto part = static_cast<std::uint64_t>(std::llround(fraction * unit));
  return SizeRead{whole * unit + part, scale ? word_end : i};
}

std::optional<std::uint64_t> size_after(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const auto size = read_size(text, at + key.size());
  if (!size) return std::nullopt;
  return exact_in_parentheses(text, size->end).value_or(size->bytes);
}

std::optional<std::uint64_t> size_before(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  std::size_t start = at;
  const std::size_t floor = at > 40 ? at - 40 : 0;
  while (start > floor && text[start - 1] == ' ')
    --start;
  while (start > floor && is_letter(text[start - 1]))
    --start;
  while (start > floor && text[start - 1] == ' ')
    --start;
  while (start > floor &&
         (is_digit(text[start - 1]) || text[start - 1] == '.' || text[start - 1] == ',')) {
    --start;
  }
  const auto size = read_size(text, start);
  if (!size || size->end > at) return std::nullopt;
  return size->bytes;
}

std::optional<std::uint64_t> tensor_bytes(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 14> kTypes{
      {{"float", 4},
       {"double", 8},
       {"half", 2},
       {"bfloat16", 2},
       {"int8", 1},
       {"uint8", 1},
       {"int16", 2},
       {"uint16", 2},
       {"int32", 4},
       {"uint32", 4},
       {"int64", 8},
       {"uint64", 8},
       {"bool", 1},
       {"complex64", 8}}};
  std::size_t at = text.find("shape[");
  const std::size_t type_at = text.find(" and type ");
  if (at == std::string_view::npos || type_at == std::string_view::npos) return std::nullopt;
  std::uint64_t elements = 1;
  for (at += 6; at < text.size() && text[at] != ']';) {
    std::uint64_t dim = 0;
    std::size_t digits = 0;
    for (; at < text.size() && is_digit(text[at]) && digits < 12; ++at, ++digits) {
      dim = dim * 10 + static_cast<std::uint64_t>(text[at] - '0');
    }
    if (digits == 0 || (dim != 0 && elements > UINT64_MAX / 16 / dim)) return std::nullopt;
    elements *= dim;
    if (at < text.size() && text[at] == ',') ++at;
  }
  std::size_t type_end = type_at + 10;
  while (type_end < text.size() && (is_letter(text[type_end]) || is_digit(text[type_end]))) {
    ++type_end;
  }
  const std::string_view type = text.substr(type_at + 10, type_end - type_at - 10);
  for (const auto& [name, size] : kTypes) {
    if (name == type) return elements * size;
  }
  return std::nullopt;
}

std::string two_decimal_size(std::uint64_t bytes) {
  const auto b = static_cast<double>(bytes);
  if (bytes <= 1024) return fmt::format("{} bytes", bytes);
  if (bytes <= 1048576) return fmt::format("{:.2f} KiB", b / 1024.0);
  if (bytes <= 1073741824) return fmt::format("{:.2f} MiB", b / 1048576.0);
  return fmt::format("{:.2f} GiB", b / 1073741824.0);
}

}  // namespace oomlab::oom_text
