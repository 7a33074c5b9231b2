// Host f16/bf16 conversions: round to nearest even, subnormals, overflow, NaN, and exact round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/numerics/float16.hpp"

using namespace tilefuse;

TEST(Float16, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);       // halfway past the largest half: rounds to inf
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1); 1 + 3*2^-11 ties up to 1 + 2^-9.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Float16, EveryHalfRoundTrips) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    const float f = half_bits_to_float(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), h) << std::hex << b;
  }
}

TEST(Float16, RoundingMatchesNearestOnRandomFloats) {
  // The chosen half is the nearest of its two neighbours (checked in double).
  std::uint32_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1664525u + 1013904223u;
    const float f = bits_float((state & 0x3fffffffu) | ((state & 1u) << 31)) ;  // |f| < 2, many exponents
    if (!std::isfinite(f)) continue;
    const float r = round_to_half(f);
    const std::uint16_t h = float_to_half_bits(f);
    const float up = half_bits_to_float(static_cast<std::uint16_t>(h + 1));
    const float down = (h & 0x7fff) ? half_bits_to_float(static_cast<std::uint16_t>(h - 1)) : r;
    ASSERT_LE(std::abs(double(r) - f), std::abs(double(up) - f) + 1e-30) << f;
    ASSERT_LE(std::abs(double(r) - f), std::abs(double(down) - f) + 1e-30) << f;
  }
}

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-3.0f), 0xc040);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f818000u)), 0x3f82);  // tie to even, upward
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x3f808001u)), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(bits_float(0x7f7fffffu)), 0x7f80);  // rounds to inf
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  EXPECT_EQ(bfloat16(2.5f).bits, 0x4020);
  EXPECT_EQ(static_cast<float>(bfloat16(2.5f)), 2.5f);
}
