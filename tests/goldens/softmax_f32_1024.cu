// tilefuse kernel 'softmax_1024': 2 warps (64 threads) per program, one program per thread block.
// layout of 1024-element tiles: 16 per thread in runs of 4
// (backend/codegen/prelude/core.cuh)

extern "C" __global__ void __launch_bounds__(64) tilefuse_softmax_1024(const float* a_in, float* a_out, int a_stride, int a_n_cols) {
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  // %0 = param 0 "in" : ptr<f32>
  const float* const v0 = a_in;
  // %1 = param 1 "out" : ptr<f32>
  float* const v1 = a_out;
  // %2 = param 2 "stride" : i32
  int const v2 = a_stride;
  // %3 = param 3 "n_cols" : i32
  int const v3 = a_n_cols;
  // %4 = program_id 0 : i32
  const int v4 = (int)blockIdx.x;
  // %5 = arange : i32[1024]
  int v5[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v5[e] = (e / 4) * 256 + tid * 4 + e % 4;
  // %6 = splat %3 : i32[1024]
  int v6[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v6[e] = v3;
  // %7 = lt %5, %6 : i1[1024]
  bool v7[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v7[e] = v5[e - e % 4] < v6[e - e % 4];
  // %8 = mul %4, %2 : i32
  int const v8 = v4 * v2;
  // %9 = ptr_add %0, %8 : ptr<f32>
  const float* const v9 = v0 + v8;
  // %10 = splat %9 : ptr<f32>[1024]
  const float* v10[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v10[e] = v9;
  // %11 = ptr_add %10, %5 : ptr<f32>[1024]
  const float* v11[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v11[e] = v10[e] + v5[e];
  // %12 = constant -inf : f32
  float const v12 = __int_as_float(0xff800000);
  // %13 = splat %12 : f32[1024]
  float v13[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v13[e] = v12;
  // %14 = load %11, %7, %13 : f32[1024]   [programs.hpp:22]
  float v14[16];
#pragma unroll
  for (int e0 = 0; e0 < 16; e0 += 4) {
    if (v7[e0]) {
      float raw[4];
      tf_load_vec<float, 4>(v11[e0], raw);
#pragma unroll
      for (int k = 0; k < 4; ++k) v14[e0 + k] = raw[k];
    } else {
#pragma unroll
      for (int e = e0; e < e0 + 4; ++e) v14[e] = v13[e];
    }
  }
  // %15 = max %14 : f32   [programs.hpp:23]
  float v15;
  {
    float acc = __int_as_float(0xff800000);
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = fmaxf(acc, v14[e]);
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc = fmaxf(acc, __shfl_xor_sync(0xffffffffu, acc, offset));
    __shared__ float tf_red15[2];
    if (lane == 0) tf_red15[warp] = acc;
    __syncthreads();
    acc = tf_red15[0];
#pragma unroll
    for (int w = 1; w < 2; ++w) acc = fmaxf(acc, tf_red15[w]);
    v15 = acc;
  }
  // %16 = splat %15 : f32[1024]
  float v16[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v16[e] = v15;
  // %17 = sub %14, %16 : f32[1024]
  float v17[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v17[e] = v14[e] - v16[e];
  // %18 = exp %17 : f32[1024]
  float v18[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v18[e] = tf_exp(v17[e]);
  // %19 = sum %18 : f32   [programs.hpp:25]
  float v19;
  {
    float acc = 0.0f;
#pragma unroll
    for (int e = 0; e < 16; ++e) acc = acc + v18[e];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) acc = acc + __shfl_xor_sync(0xffffffffu, acc, offset);
    __shared__ float tf_red19[2];
    if (lane == 0) tf_red19[warp] = acc;
    __syncthreads();
    acc = tf_red19[0];
#pragma unroll
    for (int w = 1; w < 2; ++w) acc = acc + tf_red19[w];
    v19 = acc;
  }
  // %20 = constant 1 : f32
  float const v20 = 1.0f;
  // %21 = div %20, %19 : f32
  float const v21 = v20 / v19;
  // %22 = splat %21 : f32[1024]
  float v22[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v22[e] = v21;
  // %23 = mul %18, %22 : f32[1024]
  float v23[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v23[e] = v18[e] * v22[e];
  // %24 = ptr_add %1, %8 : ptr<f32>
  float* const v24 = v1 + v8;
  // %25 = splat %24 : ptr<f32>[1024]
  float* v25[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v25[e] = v24;
  // %26 = ptr_add %25, %5 : ptr<f32>[1024]
  float* v26[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v26[e] = v25[e] + v5[e];
  // store %26, %23, %7   [programs.hpp:25]
#pragma unroll
  for (int e0 = 0; e0 < 16; e0 += 4) {
    if (v7[e0]) {
      float raw[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) raw[k] = v23[e0 + k];
      tf_store_vec<float, 4>(v26[e0], raw);
    }
  }
}
