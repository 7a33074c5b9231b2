//! Random numbers, emitted only into kernels that draw them (tl::rand): Philox4x32-10 (Salmon et al.,
//! 2011) on counter (offset, 0, 0) and key seed; the first word's top 24 bits give a float in [0, 1). The
//! interpreter runs the same integer steps (backend/numerics/philox.hpp), so both draw the same stream.
// ---- tilefuse random numbers ----
__device__ __forceinline__ float tf_rand(unsigned long long seed, long long offset) {
  unsigned c0 = (unsigned)offset, c1 = (unsigned)((unsigned long long)offset >> 32), c2 = 0u, c3 = 0u;
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
    const unsigned lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (float)(c0 >> 8) * 5.9604644775390625e-08f;
}
