// Device tier: every kernel on the GPU against the interpreter and float64, on fresh random inputs with
// poisoned outputs, every element checked. Skips cleanly (GTEST_SKIP) when there is no GPU.
#include <gtest/gtest.h>

#include <random>

#include "backend/driver/driver.hpp"
#include "kernels/epilogue/epilogue.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/op_kernels.hpp"

namespace {

using namespace tilefuse;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!driver::available(&why)) GTEST_SKIP() << "no GPU: " << why;
  }
  // A fresh seed per check; printed with any failure so it can be replayed.
  static std::uint64_t fresh_seed() { return (std::uint64_t{std::random_device{}()} << 32) | std::random_device{}(); }
};

template <class H>
void check_softmax(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto host_x = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(host_x), y(n), y2(n);
  kernels::UnfusedScratch<DeviceBuffer<H>> scratch{DeviceBuffer<H>(rows), DeviceBuffer<H>(n), DeviceBuffer<H>(n),
                                                   DeviceBuffer<H>(rows)};
  y.fill_bytes(0xff);  // NaN in every float type: an unwritten element fails the check
  y2.fill_bytes(0xff);
  kernels::softmax(x, y, rows, cols, {Backend::gpu});
  kernels::softmax_unfused(x, y2, scratch, rows, cols, {Backend::gpu});
  driver::synchronize();
  const auto gpu = y.download();
  const auto gpu_unfused = y2.download();
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  kernels::softmax(host_x, interp, rows, cols, {Backend::interpreter});
  const auto ref = reference::softmax<H>(host_x, rows, cols);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::relative_error<H>(gpu_unfused, ref), 4 * tol);  // rounds to H between its five steps
  EXPECT_LE(reference::relative_error<H>(interp, ref), tol);
  // Every element: against float64, and GPU against the interpreter (same rounding steps, other order).
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * tol), 1.0);
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 1e-7, 2 * tol), 1.0);
}

TEST_F(Gpu, SoftmaxF32AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384}) check_softmax<float>(67, cols);
}

TEST_F(Gpu, SoftmaxF16AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384}) check_softmax<half>(37, cols);
}

TEST_F(Gpu, SoftmaxBf16AllWidths) {
  for (std::int64_t cols : {1, 7, 128, 1000, 1001, 3000, 4096, 16384}) check_softmax<bfloat16>(37, cols);
}

TEST_F(Gpu, SoftmaxManyRows) {
  check_softmax<float>(65536, 128);  // one-warp programs, 8 per block
  check_softmax<float>(4097, 100);   // a last block with one program
  check_softmax<bfloat16>(5000, 64);
}

TEST_F(Gpu, SoftmaxInPlace) {
  const std::int64_t rows = 33, cols = 777;
  auto host = reference::random_vector<float>(rows * cols, fresh_seed());
  DeviceBuffer<float> x(host);
  kernels::softmax(x, x, rows, cols, {Backend::gpu});
  const auto ref = reference::softmax<float>(host, rows, cols);
  EXPECT_LE(reference::relative_error<float>(x.download(), ref), 1e-5);
}

template <class H, int BLOCK>
void check_float_ops(int n) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("float ops n=" + std::to_string(n) + " seed " + std::to_string(seed));
  const auto& ops = testkit::float_ops();
  auto host_x = reference::random_vector<H>(n, seed, 0.f, 2.f);
  DeviceBuffer<H> x(host_x), out(ops.size() * n);
  out.fill_bytes(0xff);
  Kernel<&testkit::float_ops_program<tl::dtype_of_host_t<H>, BLOCK>> k("float_ops", {.num_warps = 2});
  k.launch({{1}, Backend::gpu}, x, out, n);
  const auto gpu = out.download();
  std::vector<H> interp(ops.size() * n, reference::from_float<H>(std::nanf("")));
  k.launch({{1}, Backend::interpreter}, host_x, interp, n);
  const double tol = reference::tolerance<H>();
  for (std::size_t k2 = 0; k2 < ops.size(); ++k2) {
    for (int i = 0; i < n; ++i) {
      const double xi = reference::to_float(host_x[i]);
      const double want = ops[k2].ref(xi);
      const double g = reference::to_float(gpu[k2 * n + i]);
      const double c = reference::to_float(interp[k2 * n + i]);
      // cast(i32(x*10)) may land on the other side of an integer when x*10 rounds: allow one step there.
      const double slack = std::string(ops[k2].name).rfind("cast", 0) == 0 ? 1.0 : 0.0;
      ASSERT_NEAR(g, want, slack + 4 * tol * (1 + std::abs(want))) << ops[k2].name << " x=" << xi;
      ASSERT_NEAR(g, c, slack + 2 * tol * (1 + std::abs(want))) << ops[k2].name << " x=" << xi << " (GPU vs interpreter)";
    }
  }
}

TEST_F(Gpu, FloatOpsMatchInterpreterAndFloat64) {
  check_float_ops<float, 256>(250);
  check_float_ops<half, 256>(256);
  check_float_ops<bfloat16, 128>(77);
}

TEST_F(Gpu, IntOpsMatchInterpreterExactly) {
  const int n = 200;
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> dist(-30000, 30000);
  std::vector<std::int32_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(gen);
    do b[i] = dist(gen); while (b[i] == 0);
  }
  const std::size_t rows = testkit::int_ops().size();
  DeviceBuffer<std::int32_t> da{std::span<const std::int32_t>(a)}, db{std::span<const std::int32_t>(b)}, out(rows * n);
  DeviceBuffer<std::int64_t> wide(n);
  std::vector<std::int32_t> interp(rows * n, -7);  // the same poison on both sides: unwritten stays -7
  std::vector<std::int64_t> interp_wide(n, -7);
  out.upload(interp);
  wide.upload(interp_wide);
  Kernel<&testkit::int_ops_program<256>> k("int_ops", {.num_warps = 4});
  k.launch({{3}, Backend::gpu}, da, db, out, wide, n);
  k.launch({{3}, Backend::interpreter}, a, b, interp, interp_wide, n);
  const auto gpu = out.download();
  for (std::size_t i = 0; i < gpu.size(); ++i)
    ASSERT_EQ(gpu[i], interp[i]) << testkit::int_ops()[i / n].name << " element " << i % n;
  EXPECT_EQ(wide.download(), interp_wide);
  for (int i = 0; i < n; ++i) EXPECT_EQ(interp_wide[i], std::int64_t{a[i]} * b[i]);
}

TEST_F(Gpu, HostMemoryOnGpuIsAClearError) {
  std::vector<float> x(16), y(16);
  try {
    kernels::softmax(x, y, 1, 16, {Backend::gpu});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 (in)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
}

TEST_F(Gpu, InterpreterRunsOnDeviceBuffers) {
  const std::int64_t rows = 5, cols = 300;
  auto host = reference::random_vector<float>(rows * cols, fresh_seed());
  DeviceBuffer<float> x(host), y(rows * cols);
  y.fill_bytes(0xff);
  kernels::softmax(x, y, rows, cols, {Backend::interpreter});
  EXPECT_LE(reference::relative_error<float>(y.download(), reference::softmax<float>(host, rows, cols)), 1e-5);
}

// Which LayerNorm entry point a check runs (the looped and split kernels' one-pass shifted variance
// allows 1e-4 on rstd; layernorm_auto takes the looped kernel above 16384 columns).
enum class NormVariant { one_program, looped, automatic, split, cluster, staged };

template <class H>
// mean 1e4: same tolerance. `looped`: the looped kernel, whose one-pass shifted variance allows 1e-4 on rstd.
void check_layernorm(std::int64_t rows, std::int64_t cols, float mean = 0.f, NormVariant variant = NormVariant::one_program,
                     std::int64_t splits = 1, float stddev = 1.f) {
  const auto seed = std::random_device{}();
  const char* names[] = {"layernorm ", "layernorm_looped ", "layernorm_auto ", "layernorm_split ", "layernorm_cluster ",
                         "layernorm_staged "};
  SCOPED_TRACE(std::string(names[static_cast<int>(variant)]) + "splits " + std::to_string(splits) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, mean, stddev);
  auto hw = reference::random_vector<H>(cols, seed + 1);
  auto hb = reference::random_vector<H>(cols, seed + 2);
  DeviceBuffer<H> x(hx), w(hw), b(hb), y(n);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
  y.fill_bytes(0xff);
  stats.mean.fill_bytes(0xff);
  stats.rstd.fill_bytes(0xff);
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  kernels::RowStats<std::vector<float>> istats{std::vector<float>(rows), std::vector<float>(rows)};
  kernels::NormSplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * splits), DeviceBuffer<float>(rows * splits)};
  kernels::NormSplitScratch<std::vector<float>> iscratch{std::vector<float>(rows * splits), std::vector<float>(rows * splits)};
  switch (variant) {
    case NormVariant::one_program:
      kernels::layernorm(x, w, b, y, stats, rows, cols, 1e-5f, {Backend::gpu});
      kernels::layernorm(hx, hw, hb, interp, istats, rows, cols, 1e-5f, {Backend::interpreter});
      break;
    case NormVariant::looped:
      kernels::layernorm_looped(x, w, b, y, stats, rows, cols, 1e-5f, {Backend::gpu});
      kernels::layernorm_looped(hx, hw, hb, interp, istats, rows, cols, 1e-5f, {Backend::interpreter});
      break;
    case NormVariant::automatic:
      kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, {Backend::gpu});
      kernels::layernorm_auto(hx, hw, hb, interp, istats, rows, cols, 1e-5f, {Backend::interpreter});
      break;
    case NormVariant::split:
      kernels::layernorm_split(x, w, b, y, stats, scratch, rows, cols, splits, 1e-5f, {Backend::gpu});
      kernels::layernorm_split(hx, hw, hb, interp, istats, iscratch, rows, cols, splits, 1e-5f, {Backend::interpreter});
      break;
    case NormVariant::cluster:
      kernels::layernorm_cluster(x, w, b, y, stats, rows, cols, 1e-5f, {Backend::gpu}, splits);
      kernels::layernorm_cluster(hx, hw, hb, interp, istats, rows, cols, 1e-5f, {Backend::interpreter}, splits);
      break;
    case NormVariant::staged:
      kernels::layernorm_staged(x, w, b, y, stats, rows, cols, 1e-5f, {Backend::gpu});
      kernels::layernorm_staged(hx, hw, hb, interp, istats, rows, cols, 1e-5f, {Backend::interpreter});
      break;
  }
  const bool looped = variant == NormVariant::looped || variant == NormVariant::split ||
                      (variant == NormVariant::automatic && cols > kernels::kNormMaxCols);
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(hx, hw, hb, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  const double tol = reference::tolerance<H>();
  const auto gpu = y.download();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * tol, 4 * tol), 1.0);
  // the mean is near 0 for N(0, 1) rows: an absolute floor, as x[0] + mean(x - x[0]) rounds at |x[0]|
  EXPECT_LE(reference::worst_element<float>(stats.mean.download(), mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(stats.rstd.download(), rstd_ref), looped ? 1e-4 : 1e-5);
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 4 * tol, 4 * tol), 1.0);
}

template <class H>
void check_rmsnorm(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("rmsnorm " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed);
  auto hw = reference::random_vector<H>(cols, seed + 1);
  DeviceBuffer<H> x(hx), w(hw), y(n);
  y.fill_bytes(0xff);
  kernels::rmsnorm(x, w, y, rows, cols, 1e-6f, {Backend::gpu});
  const auto ref = reference::rmsnorm<H>(hx, hw, rows, cols, 1e-6);
  const auto gpu = y.download();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * reference::tolerance<H>(), 4 * reference::tolerance<H>()), 1.0);
}

TEST_F(Gpu, LayerNormAllDtypesAndWidths) {
  for (std::int64_t cols : {1, 7, 128, 700, 768, 1000, 1001, 3000, 4096, 12288, 16384}) {
    check_layernorm<float>(37, cols);
    check_layernorm<half>(19, cols);
    check_layernorm<bfloat16>(19, cols);
  }
  check_layernorm<float>(20000, 64);  // one-warp programs packed per block
}

TEST_F(Gpu, ClusterLayerNormReadsOnce) {
  check_layernorm<bfloat16>(64, 12288, 0.f, NormVariant::cluster, 3);
  check_layernorm<float>(7, 20001, 0.f, NormVariant::cluster, 0);
  check_layernorm<float>(5, 20001, 1e4f, NormVariant::cluster, 3);
  check_layernorm<half>(4, 50000, 0.f, NormVariant::cluster, 0);
  check_layernorm<bfloat16>(8, 131072, 0.f, NormVariant::cluster, 0);
}

TEST_F(Gpu, SplitRowLayerNorm) {
  check_layernorm<float>(7, 20001, 0.f, NormVariant::split, 3);  // not a multiple of the split or the piece
  check_layernorm<float>(5, 9000, 0.f, NormVariant::split, 8);   // more splits than pieces
  check_layernorm<float>(4, 20000, 1e4f, NormVariant::split, 4);
  check_layernorm<bfloat16>(16, 131072, 0.f, NormVariant::split, 16);
  check_layernorm<half>(6, 12288, 0.f, NormVariant::split, 3);
}

TEST_F(Gpu, LayerNormLargeMeanTwoPass) { check_layernorm<float>(64, 4096, 1e4f); }
// Half rows are summed unshifted: at mean 1e4 they still match float64 on the rounded inputs.
TEST_F(Gpu, LayerNormHalvesAtALargeMean) {
  check_layernorm<half>(64, 4096, 1e4f, NormVariant::one_program, 1, 30.f);
  check_layernorm<bfloat16>(64, 8192, 1e4f, NormVariant::one_program, 1, 300.f);
  check_layernorm<half>(16, 3000, -1e4f, NormVariant::one_program, 1, 30.f);
}

TEST_F(Gpu, LayerNormLoopedWideRows) {
  for (std::int64_t cols : {1, 4096, 20000, 131072}) check_layernorm<float>(9, cols, 0.f, NormVariant::looped);
  check_layernorm<float>(8, 20000, 1e4f, NormVariant::looped);
  check_layernorm<bfloat16>(8, 65536, 0.f, NormVariant::looped);
}

template <class H>
// `variant`: 0 softmax_looped, 1 softmax_auto, 2 softmax_cluster, 3 softmax_staged.
void check_softmax_looped(std::int64_t rows, std::int64_t cols, int variant = 0) {
  const auto seed = std::random_device{}();
  const char* names[] = {"softmax_looped ", "softmax_auto ", "softmax_cluster ", "softmax_staged "};
  SCOPED_TRACE(std::string(names[variant]) + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(hx), y(n);
  y.fill_bytes(0xff);
  if (variant == 1) kernels::softmax_auto(x, y, rows, cols, {Backend::gpu});
  else if (variant == 2) kernels::softmax_cluster(x, y, rows, cols, {Backend::gpu});
  else if (variant == 3) kernels::softmax_staged(x, y, rows, cols, {Backend::gpu});
  else kernels::softmax_looped(x, y, rows, cols, {Backend::gpu});
  const auto gpu = y.download();
  const auto ref = reference::softmax<H>(hx, rows, cols);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * tol), 1.0);
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  if (variant == 2) kernels::softmax_cluster(hx, interp, rows, cols, {Backend::interpreter});
  else if (variant == 3) kernels::softmax_staged(hx, interp, rows, cols, {Backend::interpreter});
  else kernels::softmax_looped(hx, interp, rows, cols, {Backend::interpreter});
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 1e-7, 2 * tol), 1.0);
}

template <class H>
void check_softmax_split(std::int64_t rows, std::int64_t cols, std::int64_t splits) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax_split " + std::to_string(rows) + "x" + std::to_string(cols) + " splits " +
               std::to_string(splits) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(hx), y(n);
  kernels::SplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * splits), DeviceBuffer<float>(rows * splits)};
  y.fill_bytes(0xff);
  kernels::softmax_split(x, y, scratch, rows, cols, splits, {Backend::gpu});
  const auto gpu = y.download();
  const auto ref = reference::softmax<H>(hx, rows, cols);
  EXPECT_LE(reference::relative_error<H>(gpu, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

TEST_F(Gpu, SplitRowSoftmax) {
  check_softmax_split<float>(7, 20001, 3);
  check_softmax_split<float>(5, 9000, 8);
  check_softmax_split<bfloat16>(16, 131072, 16);
  check_softmax_split<float>(4, 262144, 64);
}

TEST_F(Gpu, AutomaticRowVariantsAtTheOneProgramLimit) {
  // 16384 columns: the one-program kernels; 16385 and wider: the looped LayerNorm and the staged softmax
  // (32 KB stages), 131072 f32 and 262144 bf16 in eight 64 KB stages, 131073 f32 the looped softmax.
  for (std::int64_t cols : {1000, 16384, 16385, 70000}) {
    check_softmax_looped<float>(5, cols, 1);
    check_softmax_looped<bfloat16>(3, cols, 1);
    check_layernorm<float>(5, cols, 0.f, NormVariant::automatic);
    check_layernorm<half>(3, cols, 0.f, NormVariant::automatic);
  }
  check_softmax_looped<float>(3, 131072, 1);
  check_softmax_looped<float>(3, 131073, 1);
  check_softmax_looped<bfloat16>(2, 262144, 1);
}

TEST_F(Gpu, ClusterSoftmaxReadsOnce) {
  // Rows over clusters of 2 to 8 programs exchanging max and sum through distributed shared memory.
  for (std::int64_t cols : {100, 16385, 50001, 70000, 131072}) check_softmax_looped<float>(6, cols, 2);
  check_softmax_looped<bfloat16>(64, 131072, 2);
  check_softmax_looped<half>(9, 40000, 2);
}

TEST_F(Gpu, StagedLayerNormReadsOnce) {
  for (std::int64_t cols : {1, 7, 1000, 2048, 2049, 8192, 12288, 20000, 32768}) {
    check_layernorm<float>(13, cols, 0.f, NormVariant::staged);
    check_layernorm<half>(11, cols, 0.f, NormVariant::staged);
    check_layernorm<bfloat16>(64, cols, 0.f, NormVariant::staged);
  }
  check_layernorm<float>(8, 12288, 1e4f, NormVariant::staged);
}

TEST_F(Gpu, StagedSoftmaxReadsOnce) {
  // One program per row up to 32 KB of stage, clusters of programs above (2048x131072 bf16: 8 of 16384).
  for (std::int64_t cols : {1, 100, 2049, 8192, 8193, 20001, 32768}) check_softmax_looped<float>(6, cols, 3);
  check_softmax_looped<bfloat16>(64, 131072, 3);
  check_softmax_looped<half>(9, 40000, 3);
  check_softmax_looped<float>(3, 262144, 3);
}

// Loads and stores with cache hints (streaming vector runs, L2-only scalars and masked elements) write
// what the interpreter and float64 do, at a ragged row length (element by element) and a whole one.
TEST_F(Gpu, CacheHintedAccessesMatchTheInterpreter) {
  Kernel<&testkit::hinted_copy_program<1024>> k("hinted_copy", KernelOptions{4, {"x", "h", "y", "h_out", "sums", "n"}});
  for (int n : {1000, 1024}) {
    const int rows = 67, block = 1024;
    const auto seed = std::random_device{}();
    SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed));
    auto hx = reference::random_vector<float>(rows * n, seed);
    auto hh = reference::random_vector<bfloat16>(rows * block, seed + 1);
    DeviceBuffer<float> x(hx), y(rows * n), sums(rows);
    DeviceBuffer<bfloat16> h(hh), h_out(rows * block);
    y.fill_bytes(0xff);
    sums.fill_bytes(0xff);
    h_out.fill_bytes(0xff);
    k.launch({{rows}, Backend::gpu}, x, h, y, h_out, sums, n);
    std::vector<float> iy(hx.size(), std::nanf("")), isums(rows, std::nanf(""));
    std::vector<bfloat16> ih(hh.size());
    k.launch({{rows}, Backend::interpreter}, hx, hh, iy, ih, isums, n);
    std::vector<double> y_ref, sums_ref;
    testkit::hinted_copy_reference(hx, hh, rows, n, block, y_ref, sums_ref);
    const auto gy = y.download(), gsums = sums.download();
    const auto gh = h_out.download();
    EXPECT_LE(reference::worst_element<float>(gy, y_ref, 1e-6, 1e-6), 1.0);
    EXPECT_LE(reference::worst_element<float>(gsums, sums_ref, 1e-4, 1e-5), 1.0);
    for (std::size_t i = 0; i < gy.size(); ++i) ASSERT_EQ(gy[i], iy[i]) << "y[" << i << "]";
    for (std::size_t i = 0; i < gh.size(); ++i) ASSERT_EQ(reference::to_float(gh[i]), reference::to_float(hh[i])) << "h_out[" << i << "]";
  }
}

TEST_F(Gpu, StageSemanticsMatchTheInterpreter) {
  // Copies, stores and loads, inside and across the stage's bounds, owned and read across threads.
  Kernel<&testkit::stage_program> k("stage", KernelOptions{2, {"x", "y", "z", "n", "at"}});
  const auto hx = reference::random_vector<float>(256, 17);
  DeviceBuffer<float> x(hx), y(256), z(128);
  for (int n : {0, 100, 256})
    for (int at : {0, 64, 256, 384, 448, 512, -64, 3}) {
      SCOPED_TRACE("n " + std::to_string(n) + " at " + std::to_string(at));
      y.fill_bytes(0xff);
      z.fill_bytes(0xff);
      k.launch({{1}, Backend::gpu}, x, y, z, n, at);
      std::vector<double> ry, rz;
      testkit::stage_reference(hx, n, at, ry, rz);
      const auto gy = y.download(), gz = z.download();
      for (int i = 0; i < 256; ++i) ASSERT_EQ(gy[i], static_cast<float>(ry[i])) << "y[" << i << "]";
      for (int j = 0; j < 128; ++j) ASSERT_EQ(gz[j], static_cast<float>(rz[j])) << "z[" << j << "]";
    }
}

TEST_F(Gpu, LoopedSoftmaxWideRows) {
  for (std::int64_t cols : {1, 7, 4096, 5000, 16385, 40000}) check_softmax_looped<float>(9, cols);
  check_softmax_looped<bfloat16>(4, 131072);
  check_softmax_looped<half>(4, 70001);
}

template <class H>
void check_epilogue(std::int64_t rows, std::int64_t cols, float p) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("epilogue " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed), hr = reference::random_vector<H>(n, seed + 1);
  auto hb = reference::random_vector<H>(cols, seed + 2);
  DeviceBuffer<H> x(hx), r(hr), b(hb), y(n), y2(n), t1(n), t2(n);
  y.fill_bytes(0xff);
  y2.fill_bytes(0xff);
  const kernels::DropoutParams d{p, static_cast<std::int64_t>(seed), 777};
  kernels::epilogue(x, b, r, y, rows, cols, d, {Backend::gpu});
  kernels::epilogue_unfused(x, b, r, y2, t1, t2, rows, cols, d, {Backend::gpu});
  const auto gpu = y.download();
  const auto ref = reference::epilogue<H>(hx, hb, hr, rows, cols, p, d.seed, d.offset);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * tol, 4 * tol), 1.0);
  EXPECT_LE(reference::relative_error<H>(y2.download(), ref), 4 * tol);
}

TEST_F(Gpu, EpilogueDropsTheSameElementsAsTheInterpreter) {
  // x = 1, bias = 0, residual = 0: a kept element is gelu(1) / (1 - p) > 0, a dropped one is exactly 0.
  const std::int64_t rows = 300, cols = 1000;
  const std::size_t n = rows * cols;
  std::vector<float> hx(n, 1.f), hr(n, 0.f), hb(cols, 0.f), interp(n, -1.f);
  DeviceBuffer<float> x(hx), r(hr), b(hb), y(n);
  y.fill_bytes(0xff);
  const kernels::DropoutParams d{0.3f, static_cast<std::int64_t>(fresh_seed() >> 1), 5};
  kernels::epilogue(x, b, r, y, rows, cols, d, {Backend::gpu});
  kernels::epilogue(hx, hb, hr, interp, rows, cols, d, {Backend::interpreter});
  const auto gpu = y.download();
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(gpu[i] == 0.f, interp[i] == 0.f) << "element " << i;
    dropped += gpu[i] == 0.f;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / n, 0.3, 0.01);
}

TEST_F(Gpu, EpilogueMatchesInterpreterAndFloat64) {
  for (std::int64_t cols : {1, 7, 768, 1000, 4096, 16384}) check_epilogue<float>(33, cols, 0.1f);
  check_epilogue<bfloat16>(64, 4096, 0.2f);
  check_epilogue<half>(64, 3000, 0.5f);
}

TEST_F(Gpu, RmsNormAllDtypes) {
  for (std::int64_t cols : {1, 100, 1024, 4096, 12288}) {
    check_rmsnorm<float>(33, cols);
    check_rmsnorm<half>(33, cols);
    check_rmsnorm<bfloat16>(33, cols);
  }
}

}  // namespace
