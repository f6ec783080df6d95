// The cast kernel against host conversions written here from the formats' definitions (not from
// CUDA's headers): round to nearest, ties to even; fp16 overflows to infinity, fp8 e4m3
// saturates to ±448.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "oomlab/rng.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

std::uint16_t bf16_reference(float f) {
  const auto u = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16U) | 0x40U);
  const std::uint32_t bias = 0x7FFFU + ((u >> 16U) & 1U);
  return static_cast<std::uint16_t>((u + bias) >> 16U);
}

// The value of a code of a binary format with `m` mantissa bits and exponent bias `b`.
double decode(std::uint32_t code, int mantissa_bits, int bias) {
  const std::uint32_t mantissa = code & ((1U << mantissa_bits) - 1U);
  const int exponent = static_cast<int>(code >> mantissa_bits);
  if (exponent == 0) return std::ldexp(mantissa, 1 - bias - mantissa_bits);
  return std::ldexp(mantissa + (1U << mantissa_bits), exponent - bias - mantissa_bits);
}

// The nearest of the positive codes [0, last] (values rise with codes), ties to the even code.
std::uint32_t nearest(double x, std::uint32_t last, int mantissa_bits, int bias) {
  std::uint32_t lo = 0;
  std::uint32_t hi = last;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (decode(mid, mantissa_bits, bias) <= x ? lo : hi) = mid;
  }
  const double below = x - decode(lo, mantissa_bits, bias);
  const double above = decode(hi, mantissa_bits, bias) - x;
  if (below < above || (below == above && lo % 2 == 0)) return lo;
  return hi;
}

std::uint16_t fp16_reference(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000U : 0U;
  const double x = std::fabs(static_cast<double>(f));
  if (x >= 65520.0) return sign | 0x7C00U;  // past the largest finite value's half step: infinity
  return static_cast<std::uint16_t>(sign | nearest(x, 0x7BFFU, 10, 15));
}

std::uint8_t fp8_e4m3_reference(float f) {
  const std::uint8_t sign = std::signbit(f) ? 0x80U : 0U;
  const double x = std::fabs(static_cast<double>(f));
  if (x >= 448.0) return sign | 0x7EU;  // saturate to the largest finite value
  return static_cast<std::uint8_t>(sign | nearest(x, 0x7EU, 3, 7));
}

std::vector<float> inputs(double largest, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values = {0.5F,     1.0F,     1.5F,     3.0F, 1e-3F,  2.5e-5F, 448.0F, 500.0F,
                               65504.0F, 65519.0F, 65520.0F, 1e6F, -0.25F, -7.5F,   0.0F};
  for (int i = 0; i < 20000; ++i) {
    const double magnitude = std::pow(10.0, -8.0 + rng.unit() * (std::log10(largest) + 8.0));
    values.push_back(static_cast<float>(rng.chance(0.5) ? magnitude : -magnitude));
  }
  return values;
}

template <typename Code>
std::vector<Code> cast_on_device(const std::vector<float>& values, Precision precision) {
  DeviceSession session(0);
  void* source = nullptr;
  void* target = nullptr;
  EXPECT_EQ(cudaMalloc(&source, values.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&target, values.size() * sizeof(Code)), cudaSuccess);
  EXPECT_EQ(
      cudaMemcpy(source, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
      cudaSuccess);
  kernels::cast(static_cast<const float*>(source), target, values.size(), precision,
                session.stream());
  session.synchronize();
  std::vector<Code> out(values.size());
  EXPECT_EQ(cudaMemcpy(out.data(), target, out.size() * sizeof(Code), cudaMemcpyDeviceToHost),
            cudaSuccess);
  (void)cudaFree(source);
  (void)cudaFree(target);
  return out;
}

template <typename Code, typename Reference>
void expect_all_match(const std::vector<float>& values, const std::vector<Code>& device,
                      Reference reference) {
  int mismatches = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (device[i] != reference(values[i]) && ++mismatches <= 5) {
      ADD_FAILURE() << "cast of " << values[i] << ": device 0x" << std::hex << +device[i]
                    << ", reference 0x" << +reference(values[i]);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Kernels, CastToFp16MatchesTheHostConversion) {
  OOMLAB_REQUIRE_GPU();
  const std::vector<float> values = inputs(1e5, 1);
  expect_all_match(values, cast_on_device<std::uint16_t>(values, Precision::fp16), fp16_reference);
}

TEST(Kernels, CastToBf16MatchesTheHostConversion) {
  OOMLAB_REQUIRE_GPU();
  const std::vector<float> values = inputs(1e30, 2);
  expect_all_match(values, cast_on_device<std::uint16_t>(values, Precision::bf16), bf16_reference);
}

TEST(Kernels, CastToFp8E4m3MatchesTheHostConversion) {
  OOMLAB_REQUIRE_GPU();
  const std::vector<float> values = inputs(2000.0, 3);
  expect_all_match(values, cast_on_device<std::uint8_t>(values, Precision::fp8_e4m3),
                   fp8_e4m3_reference);
}

TEST(Kernels, HostReferencesKnowTheFormats) {  // the references themselves, on known codes
  EXPECT_EQ(fp16_reference(1.0F), 0x3C00U);
  EXPECT_EQ(fp16_reference(65504.0F), 0x7BFFU);
  EXPECT_EQ(fp16_reference(1e6F), 0x7C00U);
  EXPECT_EQ(fp16_reference(-2.0F), 0xC000U);
  EXPECT_EQ(bf16_reference(1.0F), 0x3F80U);
  EXPECT_EQ(bf16_reference(-2.0F), 0xC000U);
  EXPECT_EQ(fp8_e4m3_reference(1.0F), 0x38U);
  EXPECT_EQ(fp8_e4m3_reference(448.0F), 0x7EU);
  EXPECT_EQ(fp8_e4m3_reference(1e4F), 0x7EU);
  EXPECT_EQ(fp8_e4m3_reference(std::ldexp(1.0F, -9)), 0x01U) << "the smallest subnormal";
  EXPECT_EQ(fp8_e4m3_reference(1.0625F), 0x38U) << "a tie goes to the even code";
  EXPECT_EQ(fp8_e4m3_reference(1.1875F), 0x3AU) << "a tie goes to the even code";
}

}  // namespace
}  // namespace oomlab
