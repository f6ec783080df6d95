// Byte sizes and ratios as types, with literals (4_MiB) that make sizes readable.
// Parsing user text into these types happens in the CLI alone (harness/cli/parse.hpp).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

namespace oomlab {

// A count of bytes. A distinct type so that a size never mixes with a count of blocks.
struct Bytes {
  std::uint64_t value = 0;

  constexpr Bytes() = default;
  constexpr explicit Bytes(std::uint64_t v) : value(v) {}
  friend constexpr auto operator<=>(Bytes, Bytes) = default;
};

// A share of something, 0..100 (user-facing: "25%").
struct Percent {
  double value = 0.0;
  friend constexpr auto operator<=>(Percent, Percent) = default;
};

// An exact ratio such as keep=1/32; numerator <= denominator, denominator > 0.
struct Fraction {
  std::uint64_t numerator = 0;
  std::uint64_t denominator = 1;
  [[nodiscard]] constexpr double value() const {
    return static_cast<double>(numerator) / static_cast<double>(denominator);
  }
  friend constexpr bool operator==(Fraction, Fraction) = default;
};

inline namespace literals {
constexpr std::size_t operator""_KiB(unsigned long long n) {
  return static_cast<std::size_t>(n) << 10U;
}
constexpr std::size_t operator""_MiB(unsigned long long n) {
  return static_cast<std::size_t>(n) << 20U;
}
constexpr std::size_t operator""_GiB(unsigned long long n) {
  return static_cast<std::size_t>(n) << 30U;
}
constexpr std::size_t operator""_TiB(unsigned long long n) {
  return static_cast<std::size_t>(n) << 40U;
}
}  // namespace literals

// The page size of the CUDA driver's physical allocations on current GPUs (VMM granularity),
// and the resolution of the largest-free-block search.
inline constexpr std::size_t kDevicePageBytes = 2_MiB;

// Whole `multiple`s needed to hold n, without overflow for any n.
[[nodiscard]] constexpr std::uint64_t ceil_div(std::uint64_t n, std::uint64_t multiple) {
  return n / multiple + (n % multiple != 0 ? 1 : 0);
}
// n rounded up to a multiple; saturates at the largest multiple rather than wrapping to 0.
[[nodiscard]] constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t multiple) {
  const std::uint64_t units = ceil_div(n, multiple);
  return units > UINT64_MAX / multiple ? UINT64_MAX / multiple * multiple : units * multiple;
}
[[nodiscard]] constexpr std::uint64_t round_down(std::uint64_t n, std::uint64_t multiple) {
  return n / multiple * multiple;
}

// "1.50 GiB", "64.0 KiB", "512 B": three significant digits, binary units.
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);
// "1,073,741,824": exact, for places where rounding would hide the point.
[[nodiscard]] std::string format_count(std::uint64_t n);
// "1/32", "3/4".
[[nodiscard]] std::string format_fraction(Fraction f);

}  // namespace oomlab
