// The CSV readers' fast path: a field as the CSV reader hands it out (NUL-terminated), converted
// in one pass without measuring it first. Only the common shapes are taken here; anything else
// (a sign, a 20-digit number, (nil), a bad character) goes to the string_view readers, whose
// messages are the only ones a bad field gets.
#include <cstring>
#include <string_view>

#include "trace/importers.hpp"

namespace oomlab::trace {
namespace {

constexpr std::uint64_t kNsPerSecond = 1'000'000'000ULL;

bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

// 0-15, or 16 for a character that is not a hexadecimal digit.
unsigned hex_digit(char c) {
  const auto d = static_cast<unsigned char>(c - '0');
  if (d < 10) return d;
  const auto letter = static_cast<unsigned char>((c | 0x20) - 'a');  // either case
  return letter < 6 ? letter + 10U : 16U;
}

// 1 to `most` decimal digits at p; p is left on the character after them.
bool digits(const char*& p, int most, std::uint64_t& value) {
  std::uint64_t v = 0;
  int n = 0;
  for (; n <= most && is_digit(p[n]); ++n)
    v = v * 10 + static_cast<unsigned>(p[n] - '0');
  if (n == 0 || n > most) return false;
  p += n;
  value = v;
  return true;
}

// Nothing, or ".f…": 1 to 9 digits to nanoseconds; characters past the ninth are ignored (as
// the string_view reader does), fewer than nine must end the field.
bool fraction_ns(const char* p, std::uint64_t& ns) {
  ns = 0;
  if (*p == '\0') return true;
  if (*p++ != '.') return false;
  if (is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && is_digit(p[4]) &&
      is_digit(p[5]) && p[6] == '\0') {  // microseconds, as RMM writes them
    std::uint64_t us = 0;
    for (int i = 0; i < 6; ++i)
      us = us * 10 + static_cast<unsigned>(p[i] - '0');
    ns = us * 1000;
    return true;
  }
  int n = 0;
  for (; n < 9 && is_digit(p[n]); ++n)
    ns = ns * 10 + static_cast<unsigned>(p[n] - '0');
  if (n == 0 || (n < 9 && p[n] != '\0')) return false;
  for (; n < 9; ++n)
    ns *= 10;
  return true;
}

bool two_digits(const char* p, std::uint64_t& value) {
  if (!is_digit(p[0]) || !is_digit(p[1])) return false;
  value = static_cast<unsigned>(p[0] - '0') * 10U + static_cast<unsigned>(p[1] - '0');
  return true;
}

bool clock_ns(const char* text, std::uint64_t& ns) {
  std::uint64_t h = 0;
  std::uint64_t m = 0;
  std::uint64_t s = 0;
  std::uint64_t fraction = 0;
  if (text[0] != '\0' && text[1] != '\0' && text[2] == ':') {  // HH:MM:SS.ffffff
    if (!two_digits(text, h) || !two_digits(text + 3, m) || text[5] != ':' ||
        !two_digits(text + 6, s) || !fraction_ns(text + 8, fraction)) {
      return false;
    }
    if (h > 23 || m > 59 || s > 60) return false;
    ns = ((h * 60 + m) * 60 + s) * kNsPerSecond + fraction;
    return true;
  }
  const char* p = text;  // seconds since the epoch
  if (!digits(p, 10, s) || s > 1ULL << 33U || !fraction_ns(p, fraction)) return false;
  ns = s * kNsPerSecond + fraction;
  return true;
}

}  // namespace

std::uint64_t read_decimal_field(const char* field, const Place& place) {
  const char* p = field;
  std::uint64_t value = 0;
  if (digits(p, 19, value) && *p == '\0') return value;  // 19 digits cannot overflow
  return read_decimal(std::string_view(field), place);
}

std::uint64_t read_size_field(const char* field, const Place& place) {
  const char* p = field;
  std::uint64_t value = 0;
  if (digits(p, 19, value) && *p == '\0' && value <= kLargestSize) return value;
  return read_size(std::string_view(field), place);
}

std::uint64_t read_hex_field(const char* field, const Place& place) {
  const char* p = field;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  std::uint64_t value = 0;
  int n = 0;
  for (unsigned d = hex_digit(p[0]); n < 16 && d < 16; d = hex_digit(p[++n]))
    value = value << 4U | d;
  if (n > 0 && p[n] == '\0') return value;
  return read_hex(std::string_view(field), place);
}

std::uint64_t read_clock_field(const char* field, const Place& place) {
  std::uint64_t ns = 0;
  if (clock_ns(field, ns)) return ns;
  return read_clock(std::string_view(field), place);
}

}  // namespace oomlab::trace
