// Host-side f16 and bf16 storage types with round-to-nearest-even conversions that match the GPU's
// cvt.rn instructions bit for bit, so the interpreter rounds exactly as the generated kernels do.
#pragma once

#include <cstdint>
#include <cstring>

namespace tilefuse {

/// Bits of a float.
inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
/// Float with the given bits.
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE binary16 bits of f, rounded to nearest even (NaN stays NaN, overflow goes to infinity).
inline std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds past the largest half (65504)
  if (abs < 0x38800000u) {                          // subnormal half or zero
    if (abs < 0x33000000u) return sign;             // below half the smallest subnormal
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;         // 113 - exp + 13
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

/// The float a binary16 bit pattern denotes (exact).
inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u));
  if (exp == 0) {
    const float m = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -m : m;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// bfloat16 bits of f, rounded to nearest even (NaN stays a quiet NaN).
inline std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  const std::uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

/// The float a bfloat16 bit pattern denotes (exact).
inline float bf16_bits_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

/// A binary16 value in host memory (2 bytes, same layout as CUDA's __half).
struct half {
  std::uint16_t bits = 0;
  half() = default;
  /// Rounds f to the nearest half.
  explicit half(float f) : bits(float_to_half_bits(f)) {}
  /// The exact float value.
  explicit operator float() const { return half_bits_to_float(bits); }
};

/// A bfloat16 value in host memory (2 bytes, same layout as CUDA's __nv_bfloat16).
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  /// Rounds f to the nearest bfloat16.
  explicit bfloat16(float f) : bits(float_to_bf16_bits(f)) {}
  /// The exact float value.
  explicit operator float() const { return bf16_bits_to_float(bits); }
};

/// f rounded to the nearest half and back.
inline float round_to_half(float f) { return half_bits_to_float(float_to_half_bits(f)); }
/// f rounded to the nearest bfloat16 and back.
inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

}  // namespace tilefuse
