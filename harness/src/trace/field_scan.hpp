// The common shapes of a CSV trace's numbers, read from a pointer in one pass: each returns where
// the number ends (its caller checks the character there) or nullptr for anything else. They
// accept, never refuse: what they do not take goes to the string_view readers (importers.hpp),
// whose messages are the only ones a bad field gets. Shared by the field readers
// (csv_fields.cpp) and the RMM row reader's one-pass path (rmm_rows.cpp).
#pragma once

#include <array>
#include <cstdint>

namespace oomlab::trace::scan {

inline bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

// 0-15, or 16 for a character that is not a hexadecimal digit: a table, since in an address
// digits and letters come in no order a branch could predict.
inline constexpr std::array<std::uint8_t, 256> kHexDigits = [] {
  std::array<std::uint8_t, 256> table{};
  table.fill(16);
  for (int c = 0; c < 10; ++c)
    table['0' + c] = static_cast<std::uint8_t>(c);
  for (int c = 0; c < 6; ++c) {
    table['a' + c] = static_cast<std::uint8_t>(10 + c);
    table['A' + c] = static_cast<std::uint8_t>(10 + c);
  }
  return table;
}();

inline unsigned hex_digit(char c) {
  return kHexDigits[static_cast<unsigned char>(c)];
}

// 1 to `most` decimal digits (more is nullptr).
inline const char* decimal(const char* p, int most, std::uint64_t& value) {
  std::uint64_t v = 0;
  int n = 0;
  for (; n <= most && is_digit(p[n]); ++n)
    v = v * 10 + static_cast<unsigned>(p[n] - '0');
  if (n == 0 || n > most) return nullptr;
  value = v;
  return p + n;
}

// "0x"/"0X" (optional) and 1 to 16 hexadecimal digits.
inline const char* hex(const char* p, std::uint64_t& value) {
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  std::uint64_t v = 0;
  int n = 0;
  for (unsigned d = hex_digit(p[0]); n < 16 && d < 16; d = hex_digit(p[++n]))
    v = v << 4U | d;
  if (n == 0) return nullptr;
  value = v;
  return p + n;
}

// Nothing (ns = 0), or ".f…": 1 to 9 digits to nanoseconds, ending where the digits end (at the
// ninth at most).
inline const char* fraction_ns(const char* p, std::uint64_t& ns) {
  ns = 0;
  if (*p != '.') return p;
  ++p;
  if (is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && is_digit(p[4]) &&
      is_digit(p[5]) && !is_digit(p[6])) {  // microseconds, as RMM writes them
    std::uint64_t us = 0;
    for (int i = 0; i < 6; ++i)
      us = us * 10 + static_cast<unsigned>(p[i] - '0');
    ns = us * 1000;
    return p + 6;
  }
  int n = 0;
  for (; n < 9 && is_digit(p[n]); ++n)
    ns = ns * 10 + static_cast<unsigned>(p[n] - '0');
  if (n == 0) return nullptr;
  for (int k = n; k < 9; ++k)
    ns *= 10;
  return p + n;
}

inline bool two_digits(const char* p, std::uint64_t& value) {
  if (!is_digit(p[0]) || !is_digit(p[1])) return false;
  value = static_cast<unsigned>(p[0] - '0') * 10U + static_cast<unsigned>(p[1] - '0');
  return true;
}

// RMM's HH:MM:SS.ffffff, or seconds since the epoch (up to 2^33) with a fraction, in ns.
inline const char* clock_ns(const char* text, std::uint64_t& ns) {
  constexpr std::uint64_t kNsPerSecond = 1'000'000'000ULL;
  std::uint64_t h = 0;
  std::uint64_t m = 0;
  std::uint64_t s = 0;
  std::uint64_t fraction = 0;
  if (text[0] != '\0' && text[1] != '\0' && text[2] == ':') {
    if (!two_digits(text, h) || !two_digits(text + 3, m) || text[5] != ':' ||
        !two_digits(text + 6, s) || h > 23 || m > 59 || s > 60) {
      return nullptr;
    }
    const char* end = fraction_ns(text + 8, fraction);
    if (end != nullptr) ns = ((h * 60 + m) * 60 + s) * kNsPerSecond + fraction;
    return end;
  }
  const char* p = decimal(text, 10, s);
  if (p == nullptr || s > 1ULL << 33U) return nullptr;
  const char* end = fraction_ns(p, fraction);
  if (end != nullptr) ns = s * kNsPerSecond + fraction;
  return end;
}

}  // namespace oomlab::trace::scan
