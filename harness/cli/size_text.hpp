// The pieces of the CLI's text reading that parse.cpp and budget.cpp share: case and spaces, plain
// decimals, and a size as written, held exactly (its bytes need not be whole yet).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace oomlab::cli {

// Exact size arithmetic needs more than 64 bits for a moment (whole * unit * 10^decimals).
// NOLINTNEXTLINE(modernize-use-using): __extension__ needs typedef
__extension__ typedef unsigned __int128 Wide;

[[nodiscard]] std::string lower(std::string_view text);
[[nodiscard]] std::string_view trim(std::string_view text);

// A plain decimal: digits, optionally '.' and more digits. No sign, no exponent.
struct Decimal {
  std::string_view whole;
  std::string_view fraction;
};
// The decimal at the start of `text` into `out`, what follows it into `rest`; false: none there.
bool split_decimal(std::string_view text, Decimal& out, std::string_view& rest);

// A size as written: "1.9GiB" is 1.9 x 2^30 bytes, numerator / denominator exactly.
struct SizeText {
  std::string number;  // "1.9"
  std::string unit;    // "GiB", as written ("" for bytes)
  std::uint64_t multiplier = 1;
  Wide numerator = 0;
  Wide denominator = 1;

  [[nodiscard]] bool whole_bytes() const { return numerator % denominator == 0; }
};

// Throws Error(usage) naming `text` when it is not a size, or one past 2^64 bytes.
[[nodiscard]] SizeText read_size_text(std::string_view text);

}  // namespace oomlab::cli
