#include "oomlab/units.hpp"

#include <fmt/format.h>

#include <array>

namespace oomlab {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 7> kUnits = {"B",   "KiB", "MiB", "GiB",
                                                        "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  // Three significant digits: 1.50 GiB, 64.0 KiB, 512 MiB.
  if (value >= 100.0) return fmt::format("{:.0f} {}", value, kUnits[unit]);
  if (value >= 10.0) return fmt::format("{:.1f} {}", value, kUnits[unit]);
  return fmt::format("{:.2f} {}", value, kUnits[unit]);
}

std::string format_count(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string format_fraction(Fraction f) {
  return fmt::format("{}/{}", f.numerator, f.denominator);
}

}  // namespace oomlab
