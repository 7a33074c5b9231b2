// tilefuse kernel 'softmax_128': 1 warps (32 threads) per program, one program per thread block.
// layout of 128-element tiles: 4 per thread in runs of 4
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
__device__ __forceinline__ float tf_div(float a, float b) { float y; asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b)); return y; }
__device__ __forceinline__ long long tf_f2ll(float f) { return __float2ll_rz(f); }
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
// Global accesses with a cache hint H (tl::Cache): 0 as the hardware caches, 1 streaming (ld/st.cs:
// evicted first), 2 L2 only (ld/st.cg).
template <int H, class V> __device__ __forceinline__ V tf_ld(const V* p) {
  if constexpr (H == 1) return __ldcs(p);
  else if constexpr (H == 2) return __ldcg(p);
  else return *p;
}
template <int H, class V> __device__ __forceinline__ void tf_st(V* p, V v) {
  if constexpr (H == 1) __stcs(p, v);
  else if constexpr (H == 2) __stcg(p, v);
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

extern "C" __global__ void __launch_bounds__(32) tilefuse_softmax_128(const tf_u16* a_in, tf_u16* a_out, int a_stride, int a_n_cols) {
  const int tid = threadIdx.x;
  // %0 = param 0 "in" : ptr<bf16>
  const tf_u16* const v0 = a_in;
  // %1 = param 1 "out" : ptr<bf16>
  tf_u16* const v1 = a_out;
  // %2 = param 2 "stride" : i32
  int const v2 = a_stride;
  // %3 = param 3 "n_cols" : i32
  int const v3 = a_n_cols;
  // %4 = program_id 0 : i32
  const int v4 = (int)blockIdx.x;
  // %5 = arange : i32[128]
  int v5[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v5[e] = tid * 4 + e;
  // %6 = splat %3 : i32[128]
  int v6[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v6[e] = v3;
  // %7 = lt %5, %6 : i1[128]
  bool v7[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v7[e] = v5[e] < v6[e];
  // %8 = mul %4, %2 : i32
  int const v8 = v4 * v2;
  // %9 = ptr_add %0, %8 : ptr<bf16>
  const tf_u16* const v9 = v0 + v8;
  // %10 = splat %9 : ptr<bf16>[128]
  const tf_u16* v10[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v10[e] = v9;
  // %11 = ptr_add %10, %5 : ptr<bf16>[128]
  const tf_u16* v11[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v11[e] = v10[e] + v5[e];
  // %12 = constant -inf : bf16
  float const v12 = __int_as_float(0xff800000);
  // %13 = splat %12 : bf16[128]
  float v13[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v13[e] = v12;
  // %14 = load %11, %7, %13 : bf16[128]   [programs.hpp:21]
  float v14[4];
  unsigned raw14[2];
#pragma unroll
  for (int e0 = 0; e0 < 4; e0 += 2) {
    if (v7[e0]) {
      unsigned raw[1];
      tf_load_vec<unsigned, 1>(reinterpret_cast<const unsigned*>(v11[e0]), raw);
#pragma unroll
      for (int k = 0; k < 1; ++k) raw14[e0 / 2 + k] = raw[k];
    } else {
#pragma unroll
      for (int e2 = e0; e2 < e0 + 2; e2 += 2) {
        unsigned word = 0;
#pragma unroll
        for (int h = 0; h < 2; ++h) { const int e = e2 + h; const tf_u16 half = tf_f32_to_bf16(v13[e]); word |= (unsigned)half << (16 * h); }
        raw14[e2 / 2] = word;
      }
    }
  }
#pragma unroll
  for (int e = 0; e < 4; e += 2) { v14[e] = tf_bf16_lo(raw14[e / 2]); v14[e + 1] = tf_bf16_hi(raw14[e / 2]); }
  // %15 = cast %14 : f32[128]
  float v15[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v15[e] = v14[e];
  // %16 = max %15 : f32   [programs.hpp:22]
  float v16;
  {
    float acc = __int_as_float(0xff800000);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc = fmaxf(acc, v15[e]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc = fmaxf(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    v16 = acc;
  }
  // %17 = splat %16 : f32[128]
  float v17[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v17[e] = v16;
  // %18 = sub %15, %17 : f32[128]
  float v18[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v18[e] = v15[e] - v17[e];
  // %19 = exp %18 : f32[128]
  float v19[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v19[e] = tf_exp(v18[e]);
  // %20 = sum %19 : f32   [programs.hpp:24]
  float v20;
  {
    float acc = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; ++e) acc = acc + v19[e];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, offset);
    v20 = acc;
  }
  // %21 = constant 1 : f32
  float const v21 = 1.0f;
  // %22 = div %21, %20 : f32
  float const v22 = v21 / v20;
  // %23 = splat %22 : f32[128]
  float v23[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v23[e] = v22;
  // %24 = mul %19, %23 : f32[128]
  float v24[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v24[e] = v19[e] * v23[e];
  // %25 = cast %24 : bf16[128]
  float v25[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v25[e] = v24[e]  /* rounded by its stores */;
  // %26 = ptr_add %1, %8 : ptr<bf16>
  tf_u16* const v26 = v1 + v8;
  // %27 = splat %26 : ptr<bf16>[128]
  tf_u16* v27[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v27[e] = v26;
  // %28 = ptr_add %27, %5 : ptr<bf16>[128]
  tf_u16* v28[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v28[e] = v27[e] + v5[e];
  // store %28, %25, %7   [programs.hpp:24]
#pragma unroll
  for (int e0 = 0; e0 < 4; e0 += 2) {
    if (v7[e0]) {
      unsigned raw[1];
#pragma unroll
      for (int k = 0; k < 1; ++k) raw[k] = tf_pack_bf16x2(v25[e0 + 2 * k], v25[e0 + 2 * k + 1]);
      tf_store_vec<unsigned, 1>(reinterpret_cast<unsigned*>(v28[e0]), raw);
    }
  }
}
