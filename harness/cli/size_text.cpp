#include "cli/size_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "oomlab/error.hpp"

namespace oomlab::cli {

namespace {

// Every unit format_bytes prints is read back (EiB included: 1EiB fits in 64 bits, 16EiB not).
constexpr std::string_view kUnitsHelp =
    "B, KiB, MiB, GiB, TiB, PiB, EiB (or K, M, G, T, P, E), KB, MB, GB, TB, PB, EB";

std::uint64_t unit_multiplier(std::string_view unit_text, std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 20> kUnits = {{
      {"", 1},
      {"b", 1},
      {"k", 1ULL << 10U},
      {"kib", 1ULL << 10U},
      {"kb", 1000ULL},
      {"m", 1ULL << 20U},
      {"mib", 1ULL << 20U},
      {"mb", 1000ULL * 1000},
      {"g", 1ULL << 30U},
      {"gib", 1ULL << 30U},
      {"gb", 1000ULL * 1000 * 1000},
      {"t", 1ULL << 40U},
      {"tib", 1ULL << 40U},
      {"tb", 1000ULL * 1000 * 1000 * 1000},
      {"p", 1ULL << 50U},
      {"pib", 1ULL << 50U},
      {"pb", 1000ULL * 1000 * 1000 * 1000 * 1000},
      {"e", 1ULL << 60U},
      {"eib", 1ULL << 60U},
      {"eb", 1000ULL * 1000 * 1000 * 1000 * 1000 * 1000},
  }};
  const std::string unit = lower(trim(unit_text));
  for (const auto& [name, multiplier] : kUnits) {
    if (unit == name) return multiplier;
  }
  throw_usage(fmt::format("'{}' is not a size: unknown unit '{}' (use {})", text, trim(unit_text),
                          kUnitsHelp));
}

}  // namespace

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

bool split_decimal(std::string_view text, Decimal& out, std::string_view& rest) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i;
  out.whole = text.substr(0, i);
  out.fraction = {};
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      ++i;
    out.fraction = text.substr(start, i - start);
  }
  rest = text.substr(i);
  return !out.whole.empty() || !out.fraction.empty();
}

SizeText read_size_text(std::string_view text) {
  const std::string_view body = trim(text);
  if (body.empty()) throw_usage("an empty value is not a size");
  if (body.front() == '-')
    throw_usage(fmt::format("'{}' is not a size: sizes cannot be negative", text));
  Decimal number;
  std::string_view unit;
  if (!split_decimal(body, number, unit)) {
    throw_usage(fmt::format("'{}' is not a size (expected e.g. 512, 64KiB, 8GiB, 1.5GB)", text));
  }
  SizeText size{.number = std::string(body.substr(0, body.size() - unit.size())),
                .unit = std::string(trim(unit)),
                .multiplier = unit_multiplier(unit, text)};
  if (number.fraction.size() > 18) throw_usage(fmt::format("'{}' has too many decimals", text));
  // Exactly: (whole * 10^digits + fraction) * unit / 10^digits.
  const auto too_large = [&] {
    throw_usage(fmt::format("'{}' is too large a size: the largest is 16 EiB less one byte ({} B)",
                            text, UINT64_MAX));
  };
  Wide whole = 0;
  for (const char c : number.whole) {
    whole = whole * 10 + static_cast<unsigned>(c - '0');
    if (whole > UINT64_MAX) too_large();
  }
  if (whole * size.multiplier > UINT64_MAX) too_large();
  Wide fraction = 0;
  for (const char c : number.fraction) {
    fraction = fraction * 10 + static_cast<unsigned>(c - '0');
    size.denominator *= 10;
  }
  size.numerator = (whole * size.denominator + fraction) * size.multiplier;
  return size;
}

}  // namespace oomlab::cli
