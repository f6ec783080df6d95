// A seeded generator whose sequence is the same on every platform and compiler (the standard
// distributions are not), so that a seed reproduces a run anywhere: xoshiro256** seeded by
// splitmix64, as published by Blackman and Vigna.
#pragma once

#include <array>
#include <cstdint>

namespace oomlab {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto& word : state_)
      word = splitmix64(seed);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17U;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [lo, hi], without modulo bias (rejection on the short final interval).
  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) {
    if (hi <= lo) return lo;
    const std::uint64_t span = hi - lo;
    if (span == UINT64_MAX) return next();
    const std::uint64_t range = span + 1;
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    std::uint64_t x = next();
    while (x >= limit)
      x = next();
    return lo + x % range;
  }

  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11U) * 0x1.0p-53; }

  bool chance(double probability) { return unit() < probability; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }

  std::array<std::uint64_t, 4> state_{};
};

}  // namespace oomlab
