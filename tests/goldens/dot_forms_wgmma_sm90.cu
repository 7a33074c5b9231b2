// tilefuse kernel 'dot_forms': 4 warps (128 threads) per program, one program per thread block; 2D tiles in the layouts below.
// layout L0: [64x64] reg(0,1)(0,2)(0,4)(16,0)(32,0) lane(0,8)(0,16)(0,32)(1,0)(2,0) warp(4,0)(8,0)
// layout L1: [64x1] reg(16,0)(32,0) lane(0,0)(0,0)(0,0)(1,0)(2,0) warp(4,0)(8,0)
// layout L2: [64] reg(16,0)(32,0) lane(0,0)(0,0)(0,0)(1,0)(2,0) warp(4,0)(8,0)
// layout L3: [1x64] reg(0,1)(0,2)(0,4) lane(0,8)(0,16)(0,32)(0,0)(0,0) warp(0,0)(0,0)
// layout L4: [64] reg(1,0)(2,0)(4,0) lane(8,0)(16,0)(32,0)(0,0)(0,0) warp(0,0)(0,0)
// layout L5: [64x64] reg(0,1)(8,0)(0,8)(0,16)(0,32) lane(0,2)(0,4)(1,0)(2,0)(4,0) warp(16,0)(32,0)
// layout L6: [64x1] reg(8,0) lane(0,0)(0,0)(1,0)(2,0)(4,0) warp(16,0)(32,0)
// layout L7: [64] reg(8,0) lane(0,0)(0,0)(1,0)(2,0)(4,0) warp(16,0)(32,0)
// layout L8: [1x64] reg(0,1)(0,8)(0,16)(0,32) lane(0,2)(0,4)(0,0)(0,0)(0,0) warp(0,0)(0,0)
// layout L9: [64] reg(1,0)(8,0)(16,0)(32,0) lane(2,0)(4,0)(0,0)(0,0)(0,0) warp(0,0)(0,0)
// (backend/codegen/prelude/core.cuh)

// (backend/codegen/prelude/mma.cuh)

// (backend/codegen/prelude/wgmma.cuh)

// D (f32, 32 per thread) += A B for one m64 x n64 x k16 step of a warpgroup: A from registers, B N-major in shared memory (f16).
__device__ __forceinline__ void tf_wgmma_m64n64k16_f16_rsn(float* d, const unsigned (&a)[4], unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1) : "memory");
}
// D (f32, 32 per thread) += A B for one m64 x n64 x k16 step of a warpgroup: A K-major in shared memory, B N-major in shared memory (f16).
__device__ __forceinline__ void tf_wgmma_m64n64k16_f16_ss_kn(float* d, unsigned long long a, unsigned long long b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                 "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
               : "l"(a), "l"(b), "r"(1) : "memory");
}

extern "C" __global__ void __launch_bounds__(128) tilefuse_dot_forms(const tf_u16* a_arg0, const tf_u16* a_arg1, const tf_u16* a_arg2, float* a_arg3, float* a_arg4) {
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  extern __shared__ __align__(1024) unsigned char tf_shared[];
  const unsigned tf_sbase = tf_smem(tf_shared);
  const int tf_L0_0 = ((lane >> 3) & 1) * 1 + ((lane >> 4) & 1) * 2 + ((warp >> 0) & 1) * 4 + ((warp >> 1) & 1) * 8;
  const int tf_L0_1 = ((lane >> 0) & 1) * 8 + ((lane >> 1) & 1) * 16 + ((lane >> 2) & 1) * 32;
  const int tf_L1_0 = ((lane >> 3) & 1) * 1 + ((lane >> 4) & 1) * 2 + ((warp >> 0) & 1) * 4 + ((warp >> 1) & 1) * 8;
  const int tf_L1_1 = 0;
  const int tf_L2_0 = ((lane >> 3) & 1) * 1 + ((lane >> 4) & 1) * 2 + ((warp >> 0) & 1) * 4 + ((warp >> 1) & 1) * 8;
  const int tf_L3_0 = 0;
  const int tf_L3_1 = ((lane >> 0) & 1) * 8 + ((lane >> 1) & 1) * 16 + ((lane >> 2) & 1) * 32;
  const int tf_L4_0 = ((lane >> 0) & 1) * 8 + ((lane >> 1) & 1) * 16 + ((lane >> 2) & 1) * 32;
  const int tf_L5_0 = ((lane >> 2) & 1) * 1 + ((lane >> 3) & 1) * 2 + ((lane >> 4) & 1) * 4 + ((warp >> 0) & 1) * 16 + ((warp >> 1) & 1) * 32;
  const int tf_L5_1 = ((lane >> 0) & 1) * 2 + ((lane >> 1) & 1) * 4;
  const int tf_L6_0 = ((lane >> 2) & 1) * 1 + ((lane >> 3) & 1) * 2 + ((lane >> 4) & 1) * 4 + ((warp >> 0) & 1) * 16 + ((warp >> 1) & 1) * 32;
  const int tf_L6_1 = 0;
  const int tf_L7_0 = ((lane >> 2) & 1) * 1 + ((lane >> 3) & 1) * 2 + ((lane >> 4) & 1) * 4 + ((warp >> 0) & 1) * 16 + ((warp >> 1) & 1) * 32;
  const int tf_L8_0 = 0;
  const int tf_L8_1 = ((lane >> 0) & 1) * 2 + ((lane >> 1) & 1) * 4;
  const int tf_L9_0 = ((lane >> 0) & 1) * 2 + ((lane >> 1) & 1) * 4;
  // %0 = param 0 "arg0" : ptr<f16>
  const tf_u16* const v0 = a_arg0;
  // %1 = param 1 "arg1" : ptr<f16>
  const tf_u16* const v1 = a_arg1;
  // %2 = param 2 "arg2" : ptr<f16>
  const tf_u16* const v2 = a_arg2;
  // %3 = param 3 "arg3" : ptr<f32>
  float* const v3 = a_arg3;
  // %4 = param 4 "arg4" : ptr<f32>
  float* const v4 = a_arg4;
  // %5 = arange : i32[64]
  // (computed where it is used)
  // %6 = expand 0 %5 : i32[1x64]
  // (computed where it is used)
  // %7 = expand 1 %5 : i32[64x1]
  // (computed where it is used)
  // %8 = constant 64 : i32
  int const v8 = 64;
  // %9 = splat %8 : i32[64x1]
  // (computed where it is used)
  // %10 = mul %7, %9 : i32[64x1]
  // (computed where it is used)
  // %11 = splat %0 : ptr<f16>[64x1]
  // (computed where it is used)
  // %12 = ptr_add %11, %10 : ptr<f16>[64x1]
  // (computed where it is used)
  // %13 = broadcast %12 : ptr<f16>[64x64]
  // (computed where it is used)
  // %14 = broadcast %6 : i32[64x64]
  // (computed where it is used)
  // %15 = ptr_add %13, %14 : ptr<f16>[64x64]
  // (computed where it is used)
  // %16 = load %15 : f16[64x64]   [matrix_check.hpp:54]
  // -> shared buffer 0 (64x64, 16-byte chunks swizzled)
  const tf_u16* v11_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v11_L1[e] = v0;
  int v5_L2[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v5_L2[e] = tf_L2_0 + ((e >> 0) & 1) * 16 + ((e >> 1) & 1) * 32;
  int v7_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v7_L1[e] = v5_L2[e];
  int v9_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v9_L1[e] = v8;
  int v10_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v10_L1[e] = v7_L1[e] * v9_L1[e];
  const tf_u16* v12_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v12_L1[e] = v11_L1[e] + v10_L1[e];
  const tf_u16* v13_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v13_L0[e] = v12_L1[((((e >> 3) & 1) << 0) | (((e >> 4) & 1) << 1))];
  int v5_L4[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v5_L4[e] = tf_L4_0 + ((e >> 0) & 1) * 1 + ((e >> 1) & 1) * 2 + ((e >> 2) & 1) * 4;
  int v6_L3[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) v6_L3[e] = v5_L4[e];
  int v14_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v14_L0[e] = v6_L3[(e & 7)];
  const tf_u16* v15_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v15_L0[e] = v13_L0[e] + v14_L0[e];
#pragma unroll
  for (int e0 = 0; e0 < 32; e0 += 8)
    tf_cp16(tf_sbase + 0 + (tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) * 128 + ((((tf_L0_1 + ((e0 >> 0) & 1) * 1 + ((e0 >> 1) & 1) * 2 + ((e0 >> 2) & 1) * 4) >> 3) ^ ((tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) & 7)) << 4), v15_L0[e0], true);
  tf_cp_commit();
  // %17 = splat %1 : ptr<f16>[64x1]
  // (computed where it is used)
  // %18 = ptr_add %17, %10 : ptr<f16>[64x1]
  // (computed where it is used)
  // %19 = broadcast %18 : ptr<f16>[64x64]
  // (computed where it is used)
  // %20 = ptr_add %19, %14 : ptr<f16>[64x64]
  // (computed where it is used)
  // %21 = load %20 : f16[64x64]   [matrix_check.hpp:58]
  // -> shared buffer 1 (64x64, 16-byte chunks swizzled)
  const tf_u16* v17_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v17_L1[e] = v1;
  const tf_u16* v18_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v18_L1[e] = v17_L1[e] + v10_L1[e];
  const tf_u16* v19_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v19_L0[e] = v18_L1[((((e >> 3) & 1) << 0) | (((e >> 4) & 1) << 1))];
  const tf_u16* v20_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v20_L0[e] = v19_L0[e] + v14_L0[e];
#pragma unroll
  for (int e0 = 0; e0 < 32; e0 += 8)
    tf_cp16(tf_sbase + 8192 + (tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) * 128 + ((((tf_L0_1 + ((e0 >> 0) & 1) * 1 + ((e0 >> 1) & 1) * 2 + ((e0 >> 2) & 1) * 4) >> 3) ^ ((tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) & 7)) << 4), v20_L0[e0], true);
  tf_cp_commit();
  // %22 = constant 1 : f32
  float const v22 = 1.0f;
  // %23 = splat %22 : f32[64x64]
  // (computed where it is used)
  // %24 = dot %16, %21, %23 : f32[64x64]   [matrix_check.hpp:61]
  tf_cp_wait<0>();  // buffer 1's copies have landed
  tf_fence_async_shared();
  __syncthreads();
  float v23_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v23_L5[e] = v22;
  float v24[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v24[e] = v23_L5[e];
  {  // on warpgroup MMA: warps 4g .. 4g + 3 compute rows tf_m0 .. tf_m0 + 63 and columns tf_n0 .. tf_n0 + 63
    const int tf_m0 = ((warp & 3) >> 2) * 64, tf_n0 = (warp >> 2) * 64;
#pragma unroll
    for (int e = 0; e < 32; ++e) tf_wgmma_fence_operand(v24[e]);
    tf_wgmma_fence();
#pragma unroll
    for (int kt = 0; kt < 4; ++kt)
      tf_wgmma_m64n64k16_f16_ss_kn(v24, tf_wgmma_desc(tf_sbase + 0 + (kt * 32 / 128) * 8192 + (tf_m0) * 128 + kt * 32 % 128, 16, 1024, 1),
        tf_wgmma_desc(tf_sbase + 8192 + (tf_n0) / 64 * 8192 + kt * 2048, 8192, 1024, 1));
    tf_wgmma_commit();
    tf_wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < 32; ++e) tf_wgmma_fence_operand(v24[e]);
  }
  // %25 = splat %3 : ptr<f32>[64x1]
  // (computed where it is used)
  // %26 = ptr_add %25, %10 : ptr<f32>[64x1]
  // (computed where it is used)
  // %27 = broadcast %26 : ptr<f32>[64x64]
  // (computed where it is used)
  // %28 = ptr_add %27, %14 : ptr<f32>[64x64]
  // (computed where it is used)
  // store %28, %24   [matrix_check.hpp:64]
  float* v25_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v25_L6[e] = v3;
  int v5_L7[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v5_L7[e] = tf_L7_0 + ((e >> 0) & 1) * 8;
  int v7_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v7_L6[e] = v5_L7[e];
  int v9_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v9_L6[e] = v8;
  int v10_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v10_L6[e] = v7_L6[e] * v9_L6[e];
  float* v26_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v26_L6[e] = v25_L6[e] + v10_L6[e];
  float* v27_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v27_L5[e] = v26_L6[((((e >> 1) & 1) << 0))];
  int v5_L9[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v5_L9[e] = tf_L9_0 + ((e >> 0) & 1) * 1 + ((e >> 1) & 1) * 8 + ((e >> 2) & 1) * 16 + ((e >> 3) & 1) * 32;
  int v6_L8[16];
#pragma unroll
  for (int e = 0; e < 16; ++e) v6_L8[e] = v5_L9[e];
  int v14_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v14_L5[e] = v6_L8[((((e >> 0) & 1) << 0) | (((e >> 2) & 1) << 1) | (((e >> 3) & 1) << 2) | (((e >> 4) & 1) << 3))];
  float* v28_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v28_L5[e] = v27_L5[e] + v14_L5[e];
#pragma unroll
  for (int e0 = 0; e0 < 32; e0 += 2) {
    {
      float tf_w[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) tf_w[k] = v24[e0 + k];
      tf_store_vec<float, 2>(v28_L5[e0], tf_w);
    }
  }
  // %29 = splat %2 : ptr<f16>[64x1]
  // (computed where it is used)
  // %30 = ptr_add %29, %10 : ptr<f16>[64x1]
  // (computed where it is used)
  // %31 = broadcast %30 : ptr<f16>[64x64]
  // (computed where it is used)
  // %32 = ptr_add %31, %14 : ptr<f16>[64x64]
  // (computed where it is used)
  // %33 = load %32 : f16[64x64]   [matrix_check.hpp:65]
  __syncthreads();
  // -> shared buffer 2 (64x64, 16-byte chunks swizzled)
  const tf_u16* v29_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v29_L1[e] = v2;
  const tf_u16* v30_L1[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) v30_L1[e] = v29_L1[e] + v10_L1[e];
  const tf_u16* v31_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v31_L0[e] = v30_L1[((((e >> 3) & 1) << 0) | (((e >> 4) & 1) << 1))];
  const tf_u16* v32_L0[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v32_L0[e] = v31_L0[e] + v14_L0[e];
#pragma unroll
  for (int e0 = 0; e0 < 32; e0 += 8)
    tf_cp16(tf_sbase + 16384 + (tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) * 128 + ((((tf_L0_1 + ((e0 >> 0) & 1) * 1 + ((e0 >> 1) & 1) * 2 + ((e0 >> 2) & 1) * 4) >> 3) ^ ((tf_L0_0 + ((e0 >> 3) & 1) * 16 + ((e0 >> 4) & 1) * 32) & 7)) << 4), v32_L0[e0], true);
  tf_cp_commit();
  // %34 = constant 0.125 : f32
  float const v34 = 0.125f;
  // %35 = splat %34 : f32[64x64]
  // (computed where it is used)
  // %36 = mul %24, %35 : f32[64x64]
  float v35_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v35_L5[e] = v34;
  float v36[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v36[e] = v24[e] * v35_L5[e];
  // %37 = cast %36 : f16[64x64]
  // (packed into fragments by its dot, rounding there)
  // %38 = constant 0 : f32
  float const v38 = 0.0f;
  // %39 = splat %38 : f32[64x64]
  // (computed where it is used)
  // %40 = dot %37, %33, %39 : f32[64x64]   [matrix_check.hpp:66]
  tf_cp_wait<0>();  // buffer 2's copies have landed
  tf_fence_async_shared();
  __syncthreads();
  float v39_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v39_L5[e] = v38;
  float v40[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v40[e] = v39_L5[e];
  {  // on warpgroup MMA: warps 4g .. 4g + 3 compute rows tf_m0 .. tf_m0 + 63 and columns tf_n0 .. tf_n0 + 63
    const int tf_m0 = ((warp & 3) >> 2) * 64, tf_n0 = (warp >> 2) * 64;
    unsigned tf_a[4][4];
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) {
      tf_a[kt][0] = tf_pack_f16x2(v36[((2 * kt + 0) * 2 + 0) * 2], v36[((2 * kt + 0) * 2 + 0) * 2 + 1]);
      tf_a[kt][1] = tf_pack_f16x2(v36[((2 * kt + 0) * 2 + 1) * 2], v36[((2 * kt + 0) * 2 + 1) * 2 + 1]);
      tf_a[kt][2] = tf_pack_f16x2(v36[((2 * kt + 1) * 2 + 0) * 2], v36[((2 * kt + 1) * 2 + 0) * 2 + 1]);
      tf_a[kt][3] = tf_pack_f16x2(v36[((2 * kt + 1) * 2 + 1) * 2], v36[((2 * kt + 1) * 2 + 1) * 2 + 1]);
    }
#pragma unroll
    for (int e = 0; e < 32; ++e) tf_wgmma_fence_operand(v40[e]);
    tf_wgmma_fence();
#pragma unroll
    for (int kt = 0; kt < 4; ++kt)
      tf_wgmma_m64n64k16_f16_rsn(v40, tf_a[kt],
        tf_wgmma_desc(tf_sbase + 16384 + (tf_n0) / 64 * 8192 + kt * 2048, 8192, 1024, 1));
    tf_wgmma_commit();
    tf_wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < 32; ++e) tf_wgmma_fence_operand(v40[e]);
  }
  // %41 = splat %4 : ptr<f32>[64x1]
  // (computed where it is used)
  // %42 = ptr_add %41, %10 : ptr<f32>[64x1]
  // (computed where it is used)
  // %43 = broadcast %42 : ptr<f32>[64x64]
  // (computed where it is used)
  // %44 = ptr_add %43, %14 : ptr<f32>[64x64]
  // (computed where it is used)
  // store %44, %40   [matrix_check.hpp:66]
  float* v41_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v41_L6[e] = v4;
  float* v42_L6[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) v42_L6[e] = v41_L6[e] + v10_L6[e];
  float* v43_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v43_L5[e] = v42_L6[((((e >> 1) & 1) << 0))];
  float* v44_L5[32];
#pragma unroll
  for (int e = 0; e < 32; ++e) v44_L5[e] = v43_L5[e] + v14_L5[e];
#pragma unroll
  for (int e0 = 0; e0 < 32; e0 += 2) {
    {
      float tf_w[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) tf_w[k] = v40[e0 + k];
      tf_store_vec<float, 2>(v44_L5[e0], tf_w);
    }
  }
}
