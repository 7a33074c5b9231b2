//! Device helpers every generated kernel starts with (embedded into the generator by the build; lines
//! starting with //! are not emitted). f16/bf16 live in registers as float and round after each op;
//! conversions use PTX cvt, so NVRTC compiles the generated code with no CUDA headers.
// ---- tilefuse device helpers ----
typedef unsigned short tf_u16;
__device__ __forceinline__ float tf_f16_to_f32(tf_u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ tf_u16 tf_f32_to_f16(float f) { tf_u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float tf_bf16_to_f32(tf_u16 h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ tf_u16 tf_f32_to_bf16(float f) { tf_u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
// The low and high halves of a word of two f16/bf16 widened in place: a bf16 is the top 16 bits of its
// float, so each half costs one shift or mask, with no extraction of the 16-bit part first.
__device__ __forceinline__ float tf_bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float tf_bf16_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float tf_f16_lo(unsigned w) { float f; asm("{.reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l;}" : "=f"(f) : "r"(w)); return f; }
__device__ __forceinline__ float tf_f16_hi(unsigned w) { float f; asm("{.reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h;}" : "=f"(f) : "r"(w)); return f; }
__device__ __forceinline__ float tf_round_f16(float f) { return tf_f16_to_f32(tf_f32_to_f16(f)); }
__device__ __forceinline__ float tf_round_bf16(float f) { return tf_bf16_to_f32(tf_f32_to_bf16(f)); }
__device__ __forceinline__ int tf_f2i(float f) { return __float2int_rz(f); }
// Tile math uses the hardware approximations, as Triton does: exp and exp2 through ex2.approx (relative
// error about 2^-22, plus the rounding of x * log2(e)), tile division through div.full.f32 (2 ulp).
// (.ftz: results below 2^-126 flush to 0, which spares the range scaling around each ex2.)
__device__ __forceinline__ float tf_exp2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ float tf_exp(float x) { return tf_exp2(x * 1.44269504088896341f); }
// GELU, x Phi(x), through Abramowitz and Stegun 7.1.26 for Phi(-|x|) = erfc(|x| / sqrt 2) / 2: one rcp, one
// ex2 and a dozen FMAs (about 16 PTX instructions; erff 26). The formula, its constants and its error
// (below 2e-7 max(1, |x|)) are backend/numerics/gelu.hpp's, which the interpreter runs; keep them in step.
__device__ __forceinline__ float tf_gelu(float x) {
  const float z = fabsf(x) * 0.70710678118654752f;
  float t;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.3275911f, z, 1.0f)));
  float p = fmaf(t, 0.5307027145f, -0.7265760135f);
  p = fmaf(t, p, 0.7107068705f);
  p = fmaf(t, p, -0.142248368f);
  p = fmaf(t, p, 0.127414796f);
  const float q = p * t * tf_exp2(x * x * -0.72134752044448170f);
  return x * (x >= 0.0f ? 1.0f - q : q);
}
#ifdef TF_PRECISE_DIVISION  // KernelOptions::precise_division: IEEE division, correctly rounded
__device__ __forceinline__ float tf_div(float a, float b) { return __fdiv_rn(a, b); }
#else
__device__ __forceinline__ float tf_div(float a, float b) { float y; asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); return y; }
#endif
__device__ __forceinline__ long long tf_f2ll(float f) { return __float2ll_rz(f); }
// Integer max, min, negation and select. ptxas (CUDA 12.8 to 13.x, sm_90 and later) fuses chains of
// max.s32/min.s32 into the three-input VIMNMX3 and can drop a negation feeding it: max(max(-a, -b), -c)
// came out as max(a, b, -c) (Gpu.IntOpsMatchInterpreterExactly and fuzz seed 20532 hold the patterns). A compare
// and select, and a negation as not-then-add, written in PTX stay out of that fusion; the select is in
// PTX too so that the C++ compiler cannot turn `a > b ? a : b` back into max.s32. 64-bit integers are
// compared with ISETP and SEL, not VIMNMX, and keep plain C++.
__device__ __forceinline__ int tf_imax(int a, int b) { int r; asm("{.reg .pred p; setp.gt.s32 p, %1, %2; selp.b32 %0, %1, %2, p;}" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ int tf_imin(int a, int b) { int r; asm("{.reg .pred p; setp.lt.s32 p, %1, %2; selp.b32 %0, %1, %2, p;}" : "=r"(r) : "r"(a), "r"(b)); return r; }
__device__ __forceinline__ int tf_ineg(int x) { int r; asm("{.reg .b32 t; not.b32 t, %1; add.s32 %0, t, 1;}" : "=r"(r) : "r"(x)); return r; }
__device__ __forceinline__ int tf_isel(bool c, int a, int b) { int r; asm("{.reg .pred p; setp.ne.b32 p, %1, 0; selp.b32 %0, %2, %3, p;}" : "=r"(r) : "r"((int)c), "r"(a), "r"(b)); return r; }
__device__ __forceinline__ long long tf_imax(long long a, long long b) { return a > b ? a : b; }
__device__ __forceinline__ long long tf_imin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long tf_ineg(long long x) { return -x; }
// A thread's mask held as bits (bit e: its element e), read like the bool array it stands for. An interval
// mask's run of W lanes whose first index is f has the bits j < W with f + j below hi + plus: tf_run_below.
struct tf_bits {
  unsigned w;
  __device__ __forceinline__ bool operator[](int e) const { return (w >> e) & 1u; }
};
__device__ __forceinline__ unsigned tf_run_all(int W) { return W >= 32 ? 0xffffffffu : (1u << W) - 1u; }
// hi + plus - f clamped to [0, W] (W < 32), without overflow: the difference saturates first.
__device__ __forceinline__ unsigned tf_run_below(int f, int hi, int plus, int W) {
  int n;
  asm("sub.sat.s32 %0, %1, %2;" : "=r"(n) : "r"(hi), "r"(f));
  n = min(n, W) + plus;
  return (1u << max(min(n, W), 0)) - 1u;
}
// Two floats rounded to f16 or bf16 and packed in one word, low element first: one instruction on sm_80+.
__device__ __forceinline__ unsigned tf_pack_bf16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned d; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo)); return d;
#else
  return (unsigned)tf_f32_to_bf16(lo) | ((unsigned)tf_f32_to_bf16(hi) << 16);
#endif
}
__device__ __forceinline__ unsigned tf_pack_f16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned d; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo)); return d;
#else
  return (unsigned)tf_f32_to_f16(lo) | ((unsigned)tf_f32_to_f16(hi) << 16);
#endif
}
// W elements of S moved as one access of W * sizeof(S) bytes (16 bytes: one 128-bit transaction).
template <int Bytes> struct tf_word;
template <> struct tf_word<2> { typedef unsigned short type; };
template <> struct tf_word<4> { typedef unsigned int type; };
template <> struct tf_word<8> { typedef unsigned long long type; };
template <class S, int W> union tf_pack {
  struct alignas(sizeof(S) * W) Raw { typename tf_word<(sizeof(S) * W > 8 ? 8 : sizeof(S) * W)>::type w[(sizeof(S) * W + 7) / 8]; } raw;
  S s[W];
};
// The L2 policy that keeps lines ahead of others (evict-last), for accesses with L2::cache_hint.
__device__ __forceinline__ unsigned long long tf_evict_last() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// A 2-, 4-, 8- or 16-byte global load or store under the evict-last policy (as __ldcs and __stcs spell
// theirs, by the access's size; other sizes go plain).
template <class V> __device__ __forceinline__ V tf_ld_last(const V* p) {
  union { V v; unsigned short h; unsigned u; unsigned long long d[2]; } r;
  if constexpr (sizeof(V) == 16) asm("ld.global.L2::cache_hint.v2.u64 {%0, %1}, [%2], %3;" : "=l"(r.d[0]), "=l"(r.d[1]) : "l"(p), "l"(tf_evict_last()));
  else if constexpr (sizeof(V) == 8) asm("ld.global.L2::cache_hint.u64 %0, [%1], %2;" : "=l"(r.d[0]) : "l"(p), "l"(tf_evict_last()));
  else if constexpr (sizeof(V) == 4) asm("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(r.u) : "l"(p), "l"(tf_evict_last()));
  else if constexpr (sizeof(V) == 2) asm("ld.global.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(r.h) : "l"(p), "l"(tf_evict_last()));
  else r.v = *p;
  return r.v;
}
template <class V> __device__ __forceinline__ void tf_st_last(V* p, V v) {
  union { V v; unsigned short h; unsigned u; unsigned long long d[2]; } w;
  w.v = v;
  if constexpr (sizeof(V) == 16) asm("st.global.L2::cache_hint.v2.u64 [%0], {%1, %2}, %3;" :: "l"(p), "l"(w.d[0]), "l"(w.d[1]), "l"(tf_evict_last()) : "memory");
  else if constexpr (sizeof(V) == 8) asm("st.global.L2::cache_hint.u64 [%0], %1, %2;" :: "l"(p), "l"(w.d[0]), "l"(tf_evict_last()) : "memory");
  else if constexpr (sizeof(V) == 4) asm("st.global.L2::cache_hint.u32 [%0], %1, %2;" :: "l"(p), "r"(w.u), "l"(tf_evict_last()) : "memory");
  else if constexpr (sizeof(V) == 2) asm("st.global.L2::cache_hint.u16 [%0], %1, %2;" :: "l"(p), "h"(w.h), "l"(tf_evict_last()) : "memory");
  else *p = v;
}
// Global accesses with a cache hint H (tl::Cache): 0 as the hardware caches, 1 streaming (ld/st.cs:
// evicted first), 2 L2 only (ld/st.cg), 3 evict-last (kept in the L2 for a later reread).
template <int H, class V> __device__ __forceinline__ V tf_ld(const V* p) {
  if constexpr (H == 1) return __ldcs(p);
  else if constexpr (H == 2) return __ldcg(p);
  else if constexpr (H == 3) return tf_ld_last(p);
  else return *p;
}
template <int H, class V> __device__ __forceinline__ void tf_st(V* p, V v) {
  if constexpr (H == 1) __stcs(p, v);
  else if constexpr (H == 2) __stcg(p, v);
  else if constexpr (H == 3) tf_st_last(p, v);
  else *p = v;
}
template <class S, int W, int H = 0> __device__ __forceinline__ void tf_load_vec(const S* p, S (&out)[W]) {
  tf_pack<S, W> pk;
  typedef typename tf_pack<S, W>::Raw Raw;
  if constexpr (H == 0) {
    pk.raw = *reinterpret_cast<const Raw*>(p);
  } else if constexpr (sizeof(Raw) == 16) {  // one 128-bit access
    const ulonglong2 v = tf_ld<H>(reinterpret_cast<const ulonglong2*>(p));
    pk.raw.w[0] = v.x; pk.raw.w[1] = v.y;
  } else {
    pk.raw.w[0] = tf_ld<H>(reinterpret_cast<const Raw*>(p)->w);
  }
#pragma unroll
  for (int k = 0; k < W; ++k) out[k] = pk.s[k];
}
template <class S, int W, int H = 0> __device__ __forceinline__ void tf_store_vec(S* p, const S (&in)[W]) {
  tf_pack<S, W> pk;
  typedef typename tf_pack<S, W>::Raw Raw;
#pragma unroll
  for (int k = 0; k < W; ++k) pk.s[k] = in[k];
  if constexpr (H == 0) {
    *reinterpret_cast<Raw*>(p) = pk.raw;
  } else if constexpr (sizeof(Raw) == 16) {
    tf_st<H>(reinterpret_cast<ulonglong2*>(p), make_ulonglong2(pk.raw.w[0], pk.raw.w[1]));
  } else {
    tf_st<H>(reinterpret_cast<Raw*>(p)->w, pk.raw.w[0]);
  }
}
// ---- end of helpers ----
