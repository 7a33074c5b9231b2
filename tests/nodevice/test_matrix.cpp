// 2D tiles and dot without a GPU: the interpreter against float64 for the 2D operations, attention in
// every mode (causal or not, f16 and bf16, head dims 64 and 128, ragged lengths) and matmul at ragged
// shapes; the traced IR of 2D programs; and the generated CUDA of every matrix kernel compiled by NVRTC
// for sm_90 without spills.
#include <gtest/gtest.h>

#include <tuple>

#include "backend/codegen/cuda.hpp"
#include "backend/ir/ir.hpp"
#include "dsl/tl.hpp"
#include "kernels/attention/programs.hpp"
#include "kernels/matmul/programs.hpp"
#include "tests/common/matrix_check.hpp"
#include "tests/common/text.hpp"

namespace tl = tilefuse::tl;
using namespace tilefuse;

namespace {

TEST(Matrix, TwoDimensionalOpsInTheInterpreter) {
  Kernel<&test::matrix_ops_program> k("matrix_ops", KernelOptions{4});
  const int M = 27, N = 13;
  auto a = reference::random_vector<half>(32 * 16, 1), b = reference::random_vector<half>(32 * 16, 2);
  std::vector<float> c(32 * 32, -7.0f), rowmax(32, -7.0f), colsum(16, -7.0f), t(16 * 32, -7.0f);
  k.launch({1, Backend::interpreter}, a, b, c, rowmax, colsum, t, M, N);
  auto in = [&](int i, int j) { return i < M && j < N; };
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 32; ++j) {
      double ref = 1.0;
      for (int kk = 0; kk < 16; ++kk)
        ref += (in(i, kk) ? double(float(a[i * 16 + kk])) : 0.0) * (in(j, kk) ? double(float(b[j * 16 + kk])) : 0.0);
      EXPECT_NEAR(c[i * 32 + j], ref, 1e-4 * (1 + std::abs(ref))) << i << "," << j;
    }
    if (i < M) {
      double mx = -INFINITY;
      for (int j = 0; j < N; ++j) mx = std::max(mx, 2.0 * double(float(a[i * 16 + j])) + i);
      EXPECT_FLOAT_EQ(rowmax[i], float(mx));
    } else {
      EXPECT_EQ(rowmax[i], -7.0f);  // masked: untouched
    }
  }
  for (int j = 0; j < 16; ++j) {
    double s = 0;
    for (int i = 0; i < M; ++i) s += j < N ? 2.0 * double(float(a[i * 16 + j])) + i : 0.0;
    if (j < N) {
      EXPECT_NEAR(colsum[j], s, 1e-4 * (1 + std::abs(s)));
    }
    for (int i = 0; i < 32; ++i) EXPECT_EQ(t[j * 32 + i], in(i, j) ? float(b[i * 16 + j]) : 0.0f);
  }
}

// Rows at an odd stride start off 16-byte alignment: only a stride that is a multiple of 8 halves lets
// the row runs move as 16-byte vectors.
TEST(Matrix, RowStartsAreAlignedOnlyByTheStride) {
  Kernel<&test::strided_copy_program> k("strided_copy", KernelOptions{1});
  const std::string odd = k.program().cuda_source(Specialization{{16, 16, 1}});
  const std::string two = k.program().cuda_source(Specialization{{16, 16, 2}});
  const std::string eight = k.program().cuda_source(Specialization{{16, 16, 8}});
  EXPECT_EQ(odd.find("tf_load_vec<tf_u16"), std::string::npos) << odd;
  EXPECT_EQ(odd.find("tf_store_vec<tf_u16"), std::string::npos) << odd;
  EXPECT_NE(two.find("tf_load_vec<tf_u16, 2>"), std::string::npos) << two;
  EXPECT_NE(eight.find("tf_load_vec<tf_u16, 8>"), std::string::npos) << eight;
}

TEST(Matrix, TracesTwoDimensionalIr) {
  Kernel<&test::matrix_ops_program> k("matrix_ops", KernelOptions{4});
  const std::string ir = ir::print(k.program().ir());
  for (const char* op : {"expand 1", "expand 0", "broadcast", "max_along 1", "sum_along 0", "trans", "dot"})
    EXPECT_NE(ir.find(op), std::string::npos) << op << " missing from\n" << ir;
  EXPECT_NE(ir.find("f32[32x32]"), std::string::npos);
}

struct AttentionCase {
  bool bf16;
  int head_dim;
  bool causal;
  int seq;
};

class AttentionInterp : public ::testing::TestWithParam<AttentionCase> {};

template <class H>
void check_attention(const AttentionCase& c, const kernels::MatrixOptions& opt, double tol) {
  const kernels::AttentionShape s{1, 2, c.seq, c.head_dim};
  const std::size_t n = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  auto q = reference::random_vector<H>(n, 11), k = reference::random_vector<H>(n, 12), v = reference::random_vector<H>(n, 13);
  std::vector<H> o(n, H(-7.0f));
  std::vector<float> lse(static_cast<std::size_t>(s.batch * s.heads * s.seq), -7.0f);
  const float scale = 1.0f / std::sqrt(float(c.head_dim));
  kernels::attention(q, k, v, o, lse, s, c.causal, scale, opt);
  std::vector<double> ro, rl;
  reference::attention(q, k, v, s.batch * s.heads, s.seq, s.head_dim, c.causal, scale, ro, rl);
  EXPECT_LT(reference::max_relative_error(o, ro), tol);
  EXPECT_LT(reference::max_relative_error(lse, rl), tol);
}

TEST_P(AttentionInterp, MatchesFloat64) {
  const AttentionCase c = GetParam();
  const kernels::MatrixOptions opt{Backend::interpreter};
  if (c.bf16) check_attention<bfloat16>(c, opt, 1e-2);
  else check_attention<half>(c, opt, 2e-3);
}

INSTANTIATE_TEST_SUITE_P(Modes, AttentionInterp,
                         ::testing::Values(AttentionCase{true, 64, false, 77}, AttentionCase{true, 64, true, 77},
                                           AttentionCase{true, 128, false, 130}, AttentionCase{true, 128, true, 130},
                                           AttentionCase{false, 64, true, 200}, AttentionCase{false, 128, false, 64}));

TEST(Matrix, MatmulInterpreterAtRaggedShapes) {
  for (auto [M, N, K] : {std::tuple{70, 50, 40}, std::tuple{128, 136, 32}, std::tuple{1, 3, 17}}) {
    for (auto e : {kernels::MatmulEpilogue::none, kernels::MatmulEpilogue::gelu}) {
      auto a = reference::random_vector<bfloat16>(M * K, 21), b = reference::random_vector<bfloat16>(K * N, 22);
      auto bias = reference::random_vector<bfloat16>(N, 23);
      std::vector<bfloat16> c(M * N, bfloat16(-7.0f));
      kernels::matmul(a, b, bias, c, M, N, K, e, {Backend::interpreter});
      EXPECT_LT(reference::max_relative_error(c, reference::matmul(a, b, bias, M, N, K, e == kernels::MatmulEpilogue::gelu)), 1e-2) << M << "x" << N << "x" << K;
    }
  }
}

TEST(Matrix, RejectsBadShapesWithTheArgument) {
  std::vector<bfloat16> q(64 * 64), o(64 * 64);
  std::vector<float> lse(64);
  try {
    kernels::attention(q, q, q, o, lse, {1, 1, 64, 96}, false, 1.0f, {Backend::interpreter});
    FAIL() << "head_dim 96 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim: expected 64 or 128, got 96"), std::string::npos) << e.what();
  }
  try {
    kernels::attention(q, q, q, o, lse, {1, 2, 64, 64}, false, 1.0f, {Backend::interpreter});
    FAIL() << "short buffers accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument q holds 4096 elements, expected at least 8192"), std::string::npos) << e.what();
  }
  std::vector<bfloat16> a(10), c(10);
  EXPECT_THROW(kernels::matmul(a, a, a, c, 4, 4, 4, kernels::MatmulEpilogue::none, {Backend::interpreter}), std::invalid_argument);
}

// The generated CUDA of the matrix kernels compiles for sm_90 within the registers (at most `spill` bytes
// spilled: the mma.sync attention block at head dim 128 is the fastest measured even with its 128), its
// dots on warpgroup MMA (compiled for sm_90a) when `wgmma`, else on mma.sync.
template <auto Fn>
void expect_compiles(const char* name, int warps, bool wgmma, int spill = 0, int stages = 2) {
  KernelOptions o{warps};
  o.num_stages = stages;
  Kernel<Fn> k(name, o);
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_LE(info.spill_bytes, spill) << name << "\n" << info.ptxas_log;
  EXPECT_GT(info.registers, 0);
  EXPECT_EQ(info.source.find("wgmma.mma_async") != std::string::npos, wgmma) << name;
  EXPECT_EQ(info.options.find("sm_90a") != std::string::npos, wgmma) << name << ": " << info.options;
  if (!wgmma) {
    EXPECT_NE(info.source.find("mma.sync"), std::string::npos) << name;
  }
}

TEST(Matrix, KernelsCompileForSm90) {
  // The blocks the launchers pick without warpgroup MMA (128 rows over 4 warps cannot be warpgroups of 16-row warps) ...
  expect_compiles<&kernels::attention_program<tl::bf16, 128, 64, 128, false>>("attention", 4, false, 256);
  expect_compiles<&kernels::attention_program<tl::f16, 128, 64, 64, true>>("attention_causal", 4, false);
  expect_compiles<&kernels::matmul_program<tl::bf16, 128, 128, 64, kernels::MatmulEpilogue::gelu>>("matmul_gelu", 4, false);
  expect_compiles<&test::matrix_ops_program>("matrix_ops", 4, false);
  // ... and with it (sm_90): one warpgroup over 64 query rows; two over 128 x 256 of C, four stages.
  expect_compiles<&kernels::attention_program<tl::bf16, 64, 64, 128, false>>("attention_wg", 4, true);
  expect_compiles<&kernels::attention_program<tl::f16, 64, 64, 64, true>>("attention_causal_wg", 4, true);
  expect_compiles<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::gelu>>("matmul_gelu_wg", 8, true, 0, 4);
}

// A loop's dot that accumulates into what the loop carries (matmul's) leaves its wgmmas in flight into the
// next iteration: it waits for the previous iteration's only, accumulates in place, and the copies go one
// iteration less ahead so that a stage is rewritten two iterations after its wgmmas were issued. With two
// stages, or a dot whose accumulator is also read elsewhere (attention rescales it), every dot waits for its own.
TEST(Matrix, LoopDotsKeepTheirWgmmasInFlight) {
  auto source = [](int stages) {
    KernelOptions o{8};
    o.num_stages = stages;
    Kernel<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::none>> k("matmul_deferred", o);
    return k.program().cuda_source(k.program().default_specialization(), "sm_90");
  };
  const std::string four = source(4), two = source(2);
  EXPECT_NE(four.find("4 stages, 2 iterations ahead"), std::string::npos);
  EXPECT_NE(four.find("tf_wgmma_wait<1>();"), std::string::npos);
  EXPECT_NE(four.find("accumulated in place by its dot"), std::string::npos);
  const std::size_t loop_end = four.find("tf_wgmma_wait<0>();  // the last iteration's wgmmas have finished");
  ASSERT_NE(loop_end, std::string::npos);
  EXPECT_LT(loop_end, four.find("tf_cp_wait<0>();  // every copy issued ahead has landed")) << "before the buffers are reused";
  EXPECT_NE(two.find("2 stages, 1 iteration ahead"), std::string::npos);
  EXPECT_EQ(two.find("tf_wgmma_wait<1>"), std::string::npos);
  KernelOptions three{4};
  three.num_stages = 3;
  Kernel<&kernels::attention_program<tl::bf16, 64, 64, 128, false>> attention("attention_wg", three);
  const std::string a = attention.program().cuda_source(attention.program().default_specialization(), "sm_90");
  EXPECT_NE(a.find("tf_wgmma_wait<0>();"), std::string::npos);
  EXPECT_EQ(a.find("tf_wgmma_wait<1>"), std::string::npos);
}

// A pipelined loop's body barriers once per wait for its copies, not once more for the copies ahead:
// those are issued right after the body's first barrier (every thread is then done with the previous
// iteration, so the stage they overwrite is free) and before the body's dots.
TEST(Matrix, CopiesAheadFollowTheBodysFirstBarrier) {
  // The body of the loop whose stage variable is `stage`: from its header to the stage's increment.
  auto body = [](const std::string& src, const std::string& stage) {
    const std::size_t end = src.find("\n    " + stage + " = ");
    const std::size_t begin = src.rfind("  for (int v", end);
    EXPECT_NE(end, std::string::npos);
    EXPECT_NE(begin, std::string::npos);
    return src.substr(begin, end - begin);
  };
  KernelOptions o{8};
  o.num_stages = 4;
  o.tma = false;  // (cp.async copies; the TMA copies' order is checked in Matrix.TmaCopiesFollowTheBodysFirstBarrier)
  Kernel<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::none>> wg("matmul_one_barrier", o);
  o.num_stages = 2;
  Kernel<&kernels::matmul_program<tl::bf16, 128, 128, 64, kernels::MatmulEpilogue::none>> sync("matmul_one_barrier_sync", o);
  for (const std::string& src : {wg.program().cuda_source(wg.program().default_specialization(), "sm_90"),
                                 sync.program().cuda_source(sync.program().default_specialization())}) {
    const std::string b = body(src, "tf_stage0");
    EXPECT_EQ(test::occurrences(b, "__syncthreads()"), 1u) << b;
    const std::size_t barrier = b.find("__syncthreads()"), copies = b.find("-> shared buffer 0, stage (tf_stage0");
    ASSERT_NE(copies, std::string::npos) << b;
    EXPECT_LT(b.find("tf_cp_wait<"), barrier) << b;
    EXPECT_LT(barrier, copies) << b;
    EXPECT_LT(copies, b.find(src.find("wgmma.mma_async") != std::string::npos ? "tf_wgmma_m64n256k16" : "tf_mma_bf16")) << b;
  }
  // Attention: two waits (K, then V), two barriers; both copies ahead after the first.
  KernelOptions a{4};
  Kernel<&kernels::attention_program<tl::bf16, 64, 64, 128, true>> attention("attention_one_barrier", a);
  const std::string b = body(attention.program().cuda_source(attention.program().default_specialization(), "sm_90"), "tf_stage0");
  EXPECT_EQ(test::occurrences(b, "__syncthreads()"), 2u) << b;
  EXPECT_LT(b.find("__syncthreads()"), b.find("-> shared buffer 2, stage (tf_stage0")) << b;
  EXPECT_LT(b.find("-> shared buffer 2, stage (tf_stage0"), b.find("tf_wgmma_wait<0>")) << b;
}

// The launcher's sm_90 matmul with the GELU epilogue: 128 x 256 x 64 blocks over 8 warps, 4 stages.
using GeluMatmul = Kernel<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::gelu>>;
KernelOptions matmul_options(bool tma = true) {
  KernelOptions o{8};
  o.num_stages = 4;
  o.tma = tma;
  return o;
}

// TMA copies (sm_90, warpgroup MMA): the matmul's loads of A [M, K] and B [K, N] blocks are row-major
// matrix blocks masked by the matrices' bounds, so each becomes a tensor map the kernel takes as a
// trailing parameter, and the loop's copies are thread 0's bulk tensor copies completing on an mbarrier
// per stage; C's store is a third map (TmaStoresTheLastBlock). Not where a row's 16-byte alignment is not
// proven (K not a multiple of 8: A keeps cp.async, B still TMA), nor with KernelOptions::tma off, nor on
// mma.sync, nor with bounds checks; attention's loads (no column mask) keep cp.async. The kernel compiles
// for sm_90a without spills.
TEST(Matrix, TmaCopiesRowMajorBlocks) {
  GeluMatmul k("matmul_tma", matmul_options());
  const Program& p = k.program();
  Specialization spec = p.default_specialization();
  const codegen::Generated g = p.generate(spec, "sm_90");
  ASSERT_EQ(g.tensor_maps.size(), 3u) << g.source;
  // Parameters: a b bias c M N K; A and B are copied in, C stored out.
  const codegen::TensorMap& a = g.tensor_maps[0];
  EXPECT_EQ(std::tuple(a.pointer_param, a.rows_param, a.cols_param, a.box_rows, a.box_cols), std::tuple(0, 4, 6, 128, 64));
  const codegen::TensorMap& b = g.tensor_maps[1];
  EXPECT_EQ(std::tuple(b.pointer_param, b.rows_param, b.cols_param, b.box_rows, b.box_cols), std::tuple(1, 6, 5, 64, 64));
  const codegen::TensorMap& c = g.tensor_maps[2];
  EXPECT_EQ(std::tuple(c.pointer_param, c.rows_param, c.cols_param, c.box_rows, c.box_cols), std::tuple(3, 4, 5, 128, 64));
  EXPECT_EQ(a.dtype, ir::DType::bf16);
  EXPECT_NE(g.source.find(", const __grid_constant__ tf_tmap tf_map0, const __grid_constant__ tf_tmap tf_map1, const __grid_constant__ tf_tmap tf_map2) {"),
            std::string::npos);
  EXPECT_EQ(test::occurrences(g.source, "tf_tma2d(tf_sbase"), 3u * 5u) << g.source;  // (prologue's two stages and the loop's: A one box, B four)
  EXPECT_EQ(g.source.find("tf_cp16(tf_sbase"), std::string::npos);
  const auto info = p.compile(spec, "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  EXPECT_NE(info.ptxas_log.find("sm_90a"), std::string::npos) << info.ptxas_log;
  // K not a multiple of 8: A's rows are not whole 16-byte vectors; B's (N) are.
  spec.divisibility[6] = 4;
  const codegen::Generated mixed = p.generate(spec, "sm_90");
  ASSERT_EQ(mixed.tensor_maps.size(), 2u);
  EXPECT_EQ(mixed.tensor_maps[0].pointer_param, 1);
  EXPECT_EQ(mixed.tensor_maps[1].pointer_param, 3);
  EXPECT_EQ(test::occurrences(mixed.source, "tf_tma2d(tf_sbase"), 3u * 4u) << mixed.source;
  EXPECT_EQ(test::occurrences(mixed.source, "&tf_map0"), 3u * 4u) << mixed.source;
  // Off: no tensor maps.
  EXPECT_TRUE(p.generate(p.default_specialization(), "sm_80").tensor_maps.empty());
  Specialization checked = p.default_specialization();
  checked.bounds_checks = true;
  EXPECT_TRUE(p.generate(checked, "sm_90").tensor_maps.empty());
  GeluMatmul off("matmul_no_tma", matmul_options(false));
  EXPECT_TRUE(off.program().generate(off.program().default_specialization(), "sm_90").tensor_maps.empty());
  Kernel<&kernels::attention_program<tl::bf16, 64, 64, 128, true>> attention("attention_no_tma", KernelOptions{4});
  EXPECT_TRUE(attention.program().generate(attention.program().default_specialization(), "sm_90").tensor_maps.empty());
}

// The matmul's store of C (a block of a row-major matrix, masked by its bounds, the kernel's last global
// access) goes through shared memory and TMA: the tile written into a 64-column block layout of 128-byte
// swizzled rows, made visible to the copy engine, a barrier, then thread 0's one bulk store per column block,
// waiting until they have read shared memory. Not when C's rows are not whole 16-byte vectors (N odd),
// on sm_80, or with TMA off: stores from registers there.
TEST(Matrix, TmaStoresTheLastBlock) {
  GeluMatmul k("matmul_tma_store", matmul_options());
  const Program& p = k.program();
  Specialization spec = p.default_specialization();
  const std::string src = p.cuda_source(spec, "sm_90");
  EXPECT_EQ(test::occurrences(src, "tf_tma2d_store(&tf_map2, "), 4u) << src;
  const std::size_t fence = src.find("tf_fence_async_shared();  // the copy engine"), barrier = src.find("__syncthreads();", fence),
                    first = src.find("tf_tma2d_store(&tf_map2, v"), wait = src.find("tf_tma_store_wait();");
  ASSERT_NE(fence, std::string::npos) << src;
  EXPECT_LT(barrier, first);
  EXPECT_LT(first, wait);
  EXPECT_EQ(src.find("tf_store_vec<tf_u16, 2>(v"), std::string::npos) << "no store from registers to global memory";
  const auto info = p.compile(spec, "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  spec.divisibility[5] = 1;  // N odd: neither B nor C is a TMA block
  const codegen::Generated odd = p.generate(spec, "sm_90");
  ASSERT_EQ(odd.tensor_maps.size(), 1u);
  EXPECT_EQ(odd.tensor_maps[0].pointer_param, 0);
  EXPECT_EQ(odd.source.find("tf_tma2d_store(&"), std::string::npos);
  EXPECT_EQ(p.cuda_source(p.default_specialization(), "sm_80").find("tf_tma2d_store"), std::string::npos);
  GeluMatmul off("matmul_no_tma_store", matmul_options(false));
  EXPECT_EQ(off.program().cuda_source(off.program().default_specialization(), "sm_90").find("tf_tma2d_store"), std::string::npos);
}

// With TMA copies the loop body keeps one barrier: each thread waits on the stage's mbarrier, then the
// barrier, then thread 0 copies the stage two iterations ahead (free: every warpgroup has waited for the
// wgmmas that read it), then the wgmmas; the parity flips when the stage wraps.
TEST(Matrix, TmaCopiesFollowTheBodysFirstBarrier) {
  KernelOptions o{8};
  o.num_stages = 4;
  Kernel<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::none>> k("matmul_tma_barrier", o);
  const std::string src = k.program().cuda_source(k.program().default_specialization(), "sm_90");
  const std::size_t end = src.find("\n    tf_stage0 = ");
  const std::string b = src.substr(src.rfind("  for (int v", end), std::string::npos).substr(0, src.find("// yield", end) - src.rfind("  for (int v", end));
  EXPECT_EQ(test::occurrences(b, "__syncthreads()"), 1u) << b;
  const std::size_t wait = b.find("tf_mbar_wait(tf_bar0_at + 8 * tf_stage0, tf_bar0_parity)"), barrier = b.find("__syncthreads()"),
                    copies = b.find("tf_tma2d(tf_sbase + 0 + ((tf_stage0 + 2) % 4)"), mma = b.find("tf_wgmma_m64n256k16");
  ASSERT_NE(wait, std::string::npos) << b;
  EXPECT_LT(wait, barrier) << b;
  EXPECT_LT(barrier, copies) << b;
  EXPECT_LT(copies, mma) << b;
  EXPECT_NE(b.find("if (tf_stage0 == 0) tf_bar0_parity ^= 1;"), std::string::npos) << b;
  EXPECT_NE(src.find("if (tid == 0) tf_mbar_init<4>(tf_bar0_at);"), std::string::npos);
}

// Warpgroup MMA is generated only for sm_90 and only when allowed: the architecture-free source (what
// every sm_80+ GPU runs) and KernelOptions::warpgroup_mma = false keep mma.sync.
TEST(Matrix, WarpgroupMmaOnlyForSm90WhenAllowed) {
  using Matmul = Kernel<&kernels::matmul_program<tl::bf16, 128, 128, 64, kernels::MatmulEpilogue::none>>;
  KernelOptions o{8};
  Matmul on("matmul_wg", o);
  const Specialization spec = on.program().default_specialization();
  EXPECT_NE(on.program().cuda_source(spec, "sm_90").find("wgmma.mma_async"), std::string::npos);
  EXPECT_EQ(on.program().cuda_source(spec).find("wgmma"), std::string::npos);
  EXPECT_EQ(on.program().cuda_source(spec, "sm_80").find("wgmma"), std::string::npos);
  o.warpgroup_mma = false;
  Matmul off("matmul_mma_sync", o);
  const std::string sync = off.program().cuda_source(spec, "sm_90");
  EXPECT_EQ(sync.find("wgmma"), std::string::npos);
  EXPECT_NE(sync.find("mma.sync"), std::string::npos);
}

// Every operand form of warpgroup MMA (test::dot_forms_program) compiles for sm_90a without spills, its
// dots on wgmma where `dots` says: operands in shared memory K- or M/N-major at 64- and 128-byte rows,
// wider rows in column blocks, A from registers, one and two warpgroups, and two side by side in N.
template <int M, int N, int K, bool TA, bool TB, bool Acc>
void expect_warpgroup_dots(int warps, int dots) {
  Kernel<&test::dot_forms_program<M, N, K, TA, TB, Acc>> k("dot_forms", KernelOptions{warps});
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  const std::string& src = info.source;
  int issued = 0;
  for (std::size_t at = src.find("// on warpgroup MMA"); at != std::string::npos; at = src.find("// on warpgroup MMA", at + 1)) ++issued;
  EXPECT_EQ(issued, dots) << M << "x" << N << "x" << K << " over " << warps << " warps\n" << src;
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(Matrix, WarpgroupDotsCompileInEveryOperandForm) {
  expect_warpgroup_dots<64, 64, 64, false, false, false>(4, 2);
  expect_warpgroup_dots<64, 128, 128, false, true, true>(4, 2);
  expect_warpgroup_dots<64, 32, 16, true, false, true>(4, 2);
  expect_warpgroup_dots<64, 16, 32, true, true, false>(4, 1);  // (its second dot's C has rows of 16)
  expect_warpgroup_dots<128, 64, 32, false, false, true>(8, 2);
  expect_warpgroup_dots<64, 128, 64, false, true, false>(8, 2);
  // 32 rows cannot make a warpgroup: mma.sync.
  expect_warpgroup_dots<32, 32, 32, false, false, false>(4, 0);
  // Operand rows of 16 halves (wgmma's 32-byte swizzle, run on a GPU only N-major) keep mma.sync; the second
  // dot (K = N = 64, A from registers) still takes wgmma.
  expect_warpgroup_dots<64, 64, 16, false, true, false>(4, 1);
}

// Loads that feed a loop's dots are copied a stage ahead (num_stages 2, the default), in place with 1;
// either way the interpreter's answer is the program's, and a stage count out of range is an error.
// A loop with copies issued ahead leaves copies for iterations past its end in flight (predicated off,
// they still zero-fill): every one must land before the next loop's copies reuse the buffers. Attention
// has two such loops (whole key blocks, then the masked last one); compute-sanitizer's racecheck found
// the write-after-write between them before each loop ended with this wait.
TEST(Matrix, CopiesAheadLandBeforeTheNextLoopReusesTheirBuffers) {
  for (int stages : {2, 3}) {
    KernelOptions o;
    o.num_warps = 4;
    o.num_stages = stages;
    Kernel<&kernels::attention_program<tl::f16, 128, 64, 64, true>> k("attention_two_loops", o);
    const std::string cuda = k.program().cuda_source(k.program().default_specialization());
    const std::size_t first = cuda.find("// copies ahead for the loop below");
    const std::size_t second = cuda.find("// copies ahead for the loop below", first + 1);
    ASSERT_NE(second, std::string::npos) << "attention has two pipelined loops";
    const std::size_t wait = cuda.find("tf_cp_wait<0>();", first);
    EXPECT_LT(wait, second) << "stages " << stages;
    EXPECT_NE(cuda.find("__syncthreads();", wait), std::string::npos);
    EXPECT_LT(cuda.find("__syncthreads();", wait), second);
  }
}

TEST(Matrix, PipelinedCopiesFollowNumStages) {
  using Program = kernels::MatmulEpilogue;
  auto source = [](int stages) {
    KernelOptions o;
    o.num_warps = 4;
    o.num_stages = stages;
    Kernel<&kernels::matmul_program<tl::bf16, 64, 64, 32, Program::none>> k("matmul_stages", o);
    return k.program().cuda_source(k.program().default_specialization());
  };
  const std::string one = source(1), two = source(2), three = source(3);
  EXPECT_EQ(one.find("copied ahead"), std::string::npos);
  EXPECT_NE(two.find("copied ahead"), std::string::npos);
  EXPECT_NE(two.find("tf_stage0 ^ 1"), std::string::npos);
  EXPECT_NE(three.find("% 3"), std::string::npos);
  KernelOptions bad;
  bad.num_stages = 5;
  try {
    Kernel<&kernels::matmul_program<tl::bf16, 64, 64, 32, Program::none>> k("matmul_bad", bad);
    FAIL() << "num_stages 5 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_stages must be from 1 to 4, got 5"), std::string::npos) << e.what();
  }
}

TEST(Matrix, TooLargeTilesSayWhatToShrink) {
  Kernel<&kernels::attention_program<tl::bf16, 128, 128, 128, false>> k("attention_big", KernelOptions{2});
  try {
    (void)k.program().cuda_source(k.program().default_specialization());
    FAIL() << "a 128-row block over 2 warps fit";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("use smaller blocks (tile sizes) or more warps"), std::string::npos) << e.what();
  }
}

}  // namespace
