// tilefuse kernel 'softmax_128': 1 warps (32 threads) per program, one program per thread block.
// layout of 128-element tiles: 4 per thread in runs of 2
// (backend/codegen/prelude/core.cuh)

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
  for (int e = 0; e < 4; ++e) v5[e] = (e / 2) * 64 + tid * 2 + e % 2;
  // %6 = splat %3 : i32[128]
  int v6[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v6[e] = v3;
  // %7 = lt %5, %6 : i1[128]
  bool v7[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v7[e] = v5[e - e % 2] < v6[e - e % 2];
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
  // %14 = load %11, %7, %13 : bf16[128]   [programs.hpp:22]
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
  // %16 = max %15 : f32   [programs.hpp:23]
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
  // %20 = sum %19 : f32   [programs.hpp:25]
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
  // store %28, %25, %7   [programs.hpp:25]
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
