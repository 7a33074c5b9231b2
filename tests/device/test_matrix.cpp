// 2D tiles and dot on the GPU: attention (fused and naive) in every mode and matmul at ragged and
// aligned shapes against float64 on fresh random inputs with outputs poisoned first, and the program
// with every 2D operation against the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "backend/runtime/buffer.hpp"
#include "tests/common/gpu.hpp"
#include "tests/common/matrix_check.hpp"

using namespace tilefuse;

namespace {

class MatrixGpu : public test::Gpu {};

// Row strides of every alignment (found by the fuzzer: odd strides were copied with 16-byte vectors, a
// misaligned-address fault).
TEST_F(MatrixGpu, StridedRowsAtEveryAlignment) {
  Kernel<&test::strided_copy_program> k("strided_copy", KernelOptions{1});
  for (int stride : {16, 17, 18, 20, 24, 33}) {
    const int rows = 48;
    std::vector<half> a(static_cast<std::size_t>(rows * stride));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = half(float(i % 1000));
    DeviceBuffer<half> da(a), db(std::vector<half>(a.size(), half(-1.0f)));
    k.launch({{rows / 16}, Backend::gpu}, da, db, stride);
    const std::vector<half> b = db.download();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < stride; ++c)
        ASSERT_EQ(float(b[r * stride + c]), c < 16 ? float(a[r * stride + c]) : -1.0f) << "stride " << stride << " row " << r << " col " << c;
  }
}

template <class H>
void gpu_attention(std::uint64_t seed, const kernels::AttentionShape& s, bool causal, double tol, bool naive = false) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " seq " + std::to_string(s.seq) + " d " + std::to_string(s.head_dim) +
               (causal ? " causal" : ""));
  const std::size_t n = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  auto q = reference::random_vector<H>(n, seed), k = reference::random_vector<H>(n, seed + 1), v = reference::random_vector<H>(n, seed + 2);
  DeviceBuffer<H> dq(q), dk(k), dv(v), d_o(std::vector<H>(n, H(NAN)));
  DeviceBuffer<float> dl(std::vector<float>(static_cast<std::size_t>(s.batch * s.heads * s.seq), NAN));
  const float scale = 1.0f / std::sqrt(float(s.head_dim));
  if (naive) {
    const std::size_t n2 = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.seq);
    DeviceBuffer<float> scores(n2);
    DeviceBuffer<H> probs(n2);
    kernels::attention_naive(dq, dk, dv, d_o, scores, probs, s, causal, scale);
  } else {
    kernels::attention(dq, dk, dv, d_o, dl, s, causal, scale);
  }
  std::vector<double> ro, rl;
  reference::attention(q, k, v, s.batch * s.heads, s.seq, s.head_dim, causal, scale, ro, rl);
  EXPECT_LT(reference::max_relative_error(d_o.download(), ro), tol);
  if (!naive) {
    EXPECT_LT(reference::max_relative_error(dl.download(), rl), tol);
  }
}

// Every mode as its own test (head dim, causal or not, a ragged and a whole number of blocks), so that
// shards (compute-sanitizer runs, bench/sanitize_gpu.sh) spread them.
class AttentionModeGpu : public test::Gpu, public ::testing::WithParamInterface<std::tuple<int, bool, std::int64_t>> {};

TEST_P(AttentionModeGpu, MatchesFloat64) {
  const auto [d, causal, seq] = GetParam();
  gpu_attention<bfloat16>(fresh_seed(), {2, 3, seq, d}, causal, 1e-2);
  gpu_attention<half>(fresh_seed(), {1, 2, seq, d}, causal, 5e-3);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, AttentionModeGpu,
                         ::testing::Combine(::testing::Values(64, 128), ::testing::Bool(), ::testing::Values(std::int64_t{200}, std::int64_t{1024})));

TEST_F(MatrixGpu, NaiveAttentionMatchesFloat64) {
  for (bool causal : {false, true}) {
    gpu_attention<bfloat16>(fresh_seed(), {1, 2, 300, 64}, causal, 1e-2, true);
    gpu_attention<half>(fresh_seed(), {1, 1, 512, 128}, causal, 1e-2, true);
  }
}

TEST_F(MatrixGpu, MatmulMatchesFloat64) {
  for (auto [M, N, K] : {std::tuple{70, 50, 40}, std::tuple{512, 512, 512}, std::tuple{300, 260, 1000}, std::tuple{1, 129, 33}})
    for (auto e : {kernels::MatmulEpilogue::none, kernels::MatmulEpilogue::gelu}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE("seed " + std::to_string(seed) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
      auto a = reference::random_vector<bfloat16>(M * K, seed), b = reference::random_vector<bfloat16>(K * N, seed + 1);
      auto bias = reference::random_vector<bfloat16>(N, seed + 2);
      DeviceBuffer<bfloat16> da(a), db(b), dbias(bias), dc(std::vector<bfloat16>(M * N, bfloat16(NAN)));
      kernels::matmul(da, db, dbias, dc, M, N, K, e);
      EXPECT_LT(reference::max_relative_error(dc.download(), reference::matmul(a, b, bias, M, N, K, e == kernels::MatmulEpilogue::gelu)), 1e-2);
      auto ah = reference::random_vector<half>(M * K, seed + 3), bh = reference::random_vector<half>(K * N, seed + 4);
      auto biash = reference::random_vector<half>(N, seed + 5);
      DeviceBuffer<half> ha(ah), hb(bh), hbias(biash), hc(std::vector<half>(M * N, half(NAN)));
      kernels::matmul(ha, hb, hbias, hc, M, N, K, e);
      EXPECT_LT(reference::max_relative_error(hc.download(), reference::matmul(ah, bh, biash, M, N, K, e == kernels::MatmulEpilogue::gelu)), 5e-3);
    }
}

// Every stage count gives the same bits: the copies move data, the arithmetic is the same.
TEST_F(MatrixGpu, StageCountsAgree) {
  const std::int64_t M = 200, N = 136, K = 300;
  const std::uint64_t seed = fresh_seed();
  auto a = reference::random_vector<bfloat16>(M * K, seed), b = reference::random_vector<bfloat16>(K * N, seed + 1);
  auto bias = reference::random_vector<bfloat16>(N, seed + 2);
  DeviceBuffer<bfloat16> da(a), db(b), dbias(bias);
  std::vector<std::vector<bfloat16>> results;
  for (int stages : {1, 2, 3, 4}) {
    KernelOptions o;
    o.num_warps = 4;
    o.num_stages = stages;
    Kernel<&kernels::matmul_program<tl::bf16, 64, 64, 32, kernels::MatmulEpilogue::gelu>> k("matmul_stages", o);
    DeviceBuffer<bfloat16> c(std::vector<bfloat16>(M * N, bfloat16(NAN)));
    k.launch({((M + 63) / 64) * ((N + 63) / 64)}, da, db, dbias, c, M, N, K);
    results.push_back(c.download());
  }
  EXPECT_LT(reference::max_relative_error(results[0], reference::matmul(a, b, bias, M, N, K, true)), 1e-2);
  for (std::size_t s = 1; s < results.size(); ++s)
    for (std::size_t i = 0; i < results[0].size(); ++i)
      ASSERT_EQ(float(results[s][i]), float(results[0][i])) << "stages " << s + 1 << " element " << i;
}

// TMA copies and per-thread cp.async copies give the same bits (the copies move data; the arithmetic is
// the same), at ragged shapes where the last blocks along M, N and K reach past the matrices (TMA writes
// zeros there, as the masks do) and where only B's rows are whole 16-byte vectors (K = 1004: A keeps
// cp.async). C is stored by TMA too (where N is a multiple of 8; N = 1001: from registers): every element
// of the poisoned C is written, and nothing past it. On GPUs without TMA both kernels are the cp.async one.
TEST_F(MatrixGpu, TmaAndCpAsyncCopiesAgree) {
  for (auto [M, N, K] : {std::tuple{1000, 1000, 1000}, std::tuple{333, 520, 1004}, std::tuple{129, 264, 72}, std::tuple{200, 1001, 64}}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
    auto a = reference::random_vector<bfloat16>(M * K, seed), b = reference::random_vector<bfloat16>(K * N, seed + 1);
    auto bias = reference::random_vector<bfloat16>(N, seed + 2);
    DeviceBuffer<bfloat16> da(a), db(b), dbias(bias);
    std::vector<std::vector<bfloat16>> results;
    for (bool tma : {true, false}) {
      KernelOptions o{8};
      o.num_stages = 4;
      o.tma = tma;
      Kernel<&kernels::matmul_program<tl::bf16, 128, 256, 64, kernels::MatmulEpilogue::gelu>> k(tma ? "matmul_tma" : "matmul_cp_async", o);
      // C poisoned, with a guard after it that a store past the matrix's end would overwrite.
      constexpr int guard = 4096;
      DeviceBuffer<bfloat16> c(std::vector<bfloat16>(M * N + guard, bfloat16(NAN)));
      k.launch({((M + 127) / 128) * ((N + 255) / 256)}, da, db, dbias, c, M, N, K);
      std::vector<bfloat16> out = c.download();
      for (std::size_t i = M * N; i < out.size(); ++i) ASSERT_TRUE(std::isnan(float(out[i]))) << "guard element " << i - M * N << " written";
      out.resize(M * N);
      results.push_back(out);
    }
    EXPECT_LT(reference::max_relative_error(results[0], reference::matmul(a, b, bias, M, N, K, true)), 1e-2);
    for (std::size_t i = 0; i < results[0].size(); ++i) ASSERT_EQ(float(results[1][i]), float(results[0][i])) << "element " << i;
  }
}

// Every operand form of warpgroup MMA (test::dot_forms_program), on wgmma and on mma.sync, against the
// interpreter: both products within 2e-3 of the largest reference element (sums in another order; y also
// from halves that may round the other way).
template <int M, int N, int K, bool TA, bool TB, bool Acc>
void expect_dot_forms(int warps, std::uint64_t seed) {
  SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + (TA ? " A M-major" : "") + (TB ? " B K-major" : "") +
               " over " + std::to_string(warps) + " warps");
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto a = reference::random_vector<half>(M * K, seed), b = reference::random_vector<half>(K * N, seed + 1), c = reference::random_vector<half>(N * N, seed + 2);
  std::vector<float> x(M * N, -7.0f), y(M * N, -7.0f);
  KernelOptions o{warps};
  Kernel<&test::dot_forms_program<M, N, K, TA, TB, Acc>> interp("dot_forms", o);
  interp.launch({1, Backend::interpreter}, a, b, c, x, y);
  for (bool wgmma : {true, false}) {
    SCOPED_TRACE(wgmma ? "wgmma" : "mma.sync");
    o.warpgroup_mma = wgmma;
    Kernel<&test::dot_forms_program<M, N, K, TA, TB, Acc>> k("dot_forms", o);
    EXPECT_EQ(k.program().cuda_source(k.program().default_specialization(), "sm_90").find("wgmma.mma_async") != std::string::npos, wgmma);
    DeviceBuffer<half> da(a), db(b), dc(c);
    DeviceBuffer<float> dx(std::vector<float>(x.size(), NAN)), dy(std::vector<float>(y.size(), NAN));
    k.launch({1}, da, db, dc, dx, dy);
    EXPECT_LT(reference::max_relative_error(dx.download(), std::vector<double>(x.begin(), x.end())), 2e-3);
    EXPECT_LT(reference::max_relative_error(dy.download(), std::vector<double>(y.begin(), y.end())), 2e-3);
  }
}

TEST_F(MatrixGpu, WarpgroupDotsMatchTheInterpreter) {
  expect_dot_forms<64, 64, 64, false, false, false>(4, fresh_seed());
  expect_dot_forms<64, 128, 128, false, true, true>(4, fresh_seed());
  expect_dot_forms<64, 32, 16, true, false, true>(4, fresh_seed());
  expect_dot_forms<64, 16, 32, true, true, false>(4, fresh_seed());
  expect_dot_forms<128, 64, 32, false, false, true>(8, fresh_seed());
  expect_dot_forms<64, 128, 64, false, true, false>(8, fresh_seed());
}

TEST_F(MatrixGpu, TwoDimensionalOpsMatchTheInterpreter) {
  Kernel<&test::matrix_ops_program> k("matrix_ops", KernelOptions{4});
  const std::uint64_t seed = fresh_seed();
  auto a = reference::random_vector<half>(32 * 16, seed), b = reference::random_vector<half>(32 * 16, seed + 1);
  for (auto [m, n] : {std::pair{27, 13}, std::pair{32, 16}, std::pair{1, 1}}) {
    std::vector<float> c(32 * 32, -7.0f), rowmax(32, -7.0f), colsum(16, -7.0f), t(16 * 32, -7.0f);
    k.launch({1, Backend::interpreter}, a, b, c, rowmax, colsum, t, m, n);
    DeviceBuffer<half> da(a), db(b);
    DeviceBuffer<float> dc(std::vector<float>(c.size(), -7.0f)), dr(std::vector<float>(32, -7.0f)), ds(std::vector<float>(16, -7.0f)),
        dt(std::vector<float>(t.size(), -7.0f));
    k.launch({1}, da, db, dc, dr, ds, dt, m, n);
    auto gc = dc.download(), gr = dr.download(), gs = ds.download(), gt = dt.download();
    for (std::size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(gc[i], c[i], 1e-4 * (1 + std::abs(c[i]))) << "c " << i;
    for (std::size_t i = 0; i < rowmax.size(); ++i) EXPECT_EQ(gr[i], rowmax[i]) << "rowmax " << i;
    for (std::size_t i = 0; i < colsum.size(); ++i) EXPECT_NEAR(gs[i], colsum[i], 1e-4 * (1 + std::abs(colsum[i]))) << "colsum " << i;
    for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(gt[i], t[i]) << "t " << i;
  }
}

}  // namespace
