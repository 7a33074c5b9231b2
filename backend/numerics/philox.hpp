// Philox4x32-10 on the host, step for step as the generated CUDA (codegen's tf_rand) computes it, so the
// interpreter and the GPU draw the same random numbers for the same seed and offset.
#pragma once

#include <cstdint>

namespace tilefuse {

/// Uniform float in [0, 1) (24 random bits) for counter `offset` under key `seed`.
inline float philox_uniform(std::uint64_t seed, std::int64_t offset) {
  std::uint32_t c0 = static_cast<std::uint32_t>(offset);
  std::uint32_t c1 = static_cast<std::uint32_t>(static_cast<std::uint64_t>(offset) >> 32);
  std::uint32_t c2 = 0, c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0, p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const std::uint32_t lo0 = static_cast<std::uint32_t>(p0), hi0 = static_cast<std::uint32_t>(p0 >> 32);
    const std::uint32_t lo1 = static_cast<std::uint32_t>(p1), hi1 = static_cast<std::uint32_t>(p1 >> 32);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return static_cast<float>(c0 >> 8) * 5.9604644775390625e-08f;
}

}  // namespace tilefuse
