// Device tier, memory the caller owns: views over memory tilefuse did not allocate, read-only arguments,
// the caller's stream, the specialization an inspection reports against the one a launch compiles, and
// why a kernel recompiled.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "kernels/reference.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/gpu.hpp"
#include "tests/common/matrix_check.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;

// out[i] = in[i] * s + 1 over n elements, `in` read-only.
void affine(tl::Ptr<const tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::f32> s, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 512 + tl::arange<512>();
  tl::store(out + i, tl::load(in + i, i < n) * s + 1.0f, i < n);
}

// Device memory tilefuse does not own: allocated and freed through the driver, as a caller's allocator would.
struct Foreign {
  std::uint64_t address;
  explicit Foreign(std::size_t bytes) : address(driver::allocate(bytes)) {}
  ~Foreign() { driver::release(address); }
};

using GpuInterop = Gpu;

TEST_F(GpuInterop, ViewsOfForeignMemoryMatchDeviceBuffers) {
  const int rows = 333, cols = 1000;
  const std::size_t n = std::size_t{rows} * cols;
  const auto seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto x = reference::random_vector<float>(n, seed);
  Foreign fx(n * sizeof(float)), fy(n * sizeof(float));
  driver::copy_to_device(fx.address, x.data(), n * sizeof(float));
  driver::fill_bytes(fy.address, 0xff, n * sizeof(float));
  DeviceView<float> xv(fx.address, n), yv(fy.address, n);
  EXPECT_EQ(xv.device_ptr(), fx.address);  // a view, not a copy
  kernels::softmax_auto(xv, yv, rows, cols, kernels::RowOptions{Backend::gpu});
  std::vector<float> y(n);
  driver::synchronize();
  driver::copy_to_host(y.data(), fy.address, n * sizeof(float));
  DeviceBuffer<float> xb(x), yb(n);
  yb.fill_bytes(0xff);
  kernels::softmax_auto(xb, yb, rows, cols, kernels::RowOptions{Backend::gpu});
  const auto yb_host = yb.download();
  EXPECT_EQ(std::memcmp(y.data(), yb_host.data(), n * sizeof(float)), 0);
  EXPECT_LT(reference::relative_error<float>(y, reference::softmax<float>(x, rows, cols)), 1e-5);
}

TEST_F(GpuInterop, ReadOnlyArgumentsAndTheCallersStream) {
  const int n = 100003;
  const auto x = reference::random_vector<float>(n, fresh_seed());
  const DeviceBuffer<float> xb(x);  // const: binds to tl::Ptr<const f32>
  DeviceBuffer<float> out(n);
  out.fill_bytes(0xff);
  Kernel<&affine> k("affine", {.num_warps = 4, .param_names = {"in", "out", "s", "n"}});
  driver::Stream stream;  // any CUstream of the context; the launch is ordered on it
  k.launch({{(n + 511) / 512}, Backend::gpu, stream.handle()}, xb, out.view(), 3.0f, n);
  k.launch({{(n + 511) / 512}, Backend::gpu, stream.handle()}, DeviceView<const float>(out.view()), out, 1.0f, n);
  stream.synchronize();
  const auto y = out.download();
  // (x * 3 + 1 may contract to one fma on the GPU: compare to float64 within a rounding or two)
  for (int i = 0; i < n; ++i) ASSERT_NEAR(y[i], double(x[i]) * 3 + 2, 1e-6 * (1 + std::abs(double(x[i]) * 3 + 2))) << i;
  // The interpreter takes the same read-only device arguments (copied in; never copied back).
  std::vector<float> host_out(n, -1.0f);
  k.launch({{(n + 511) / 512}, Backend::interpreter}, xb, host_out, 3.0f, n);
  for (int i = 0; i < n; ++i) ASSERT_NEAR(host_out[i], double(x[i]) * 3 + 1, 1e-6 * (1 + std::abs(double(x[i]) * 3 + 1))) << i;
}

TEST_F(GpuInterop, InspectionKeyIsTheLaunchedKey) {
  Kernel<&affine> k("affine_keys", {.num_warps = 4, .param_names = {"in", "out", "s", "n"}});
  DeviceBuffer<float> in(4096), out(4096);
  // 1000 elements: n divisible by 8; then 1000 from an output 4 bytes into its buffer.
  const Inspection before = k.inspect({{2}, Backend::gpu}, in, out, 1.0f, 1000);
  EXPECT_NE(before.reason.find("kernel 'affine_keys': the first specialization"), std::string::npos) << before.reason;
  k.launch({{2}, Backend::gpu}, in, out, 1.0f, 1000);
  ASSERT_EQ(k.program().specializations().size(), 1u);
  EXPECT_EQ(k.program().describe(k.program().specializations()[0]), before.key);
  EXPECT_EQ(before.key, "in:align16 out:align16 s:f32 n:div8");
  const Inspection again = k.inspect({{2}, Backend::gpu}, in, out, 1.0f, 1000);
  EXPECT_NE(again.reason.find("compiled already"), std::string::npos) << again.reason;
  DeviceView<float> shifted = out.view().subview(1, 1000);
  const Inspection next = k.inspect({{2}, Backend::gpu}, in, shifted, 1.0f, 1000);
  EXPECT_NE(next.reason.find("argument 1 (out) = address 0x"), std::string::npos) << next.reason;
  EXPECT_NE(next.reason.find("is aligned to 4 bytes, where the compiled one assumed aligned to 16 bytes"), std::string::npos)
      << next.reason;
  k.launch({{2}, Backend::gpu}, in, shifted, 1.0f, 1000);
  k.launch({{2}, Backend::gpu}, in, out, 1.0f, 1001);
  ASSERT_EQ(k.program().specializations().size(), 3u);
  EXPECT_EQ(k.program().describe(k.program().specializations()[1]), next.key);
  const auto reasons = k.program().recompile_reasons();
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_NE(reasons[0].find("argument 1 (out)"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[1].find("argument 3 (n) = 1001 is odd, where the compiled one assumed divisible by 8"), std::string::npos)
      << reasons[1];
}

TEST_F(GpuInterop, ConstantParamsRunTheirValueAndRecompilePerValue) {
  // KernelOptions::constant_params: n compiled in; each value runs its own kernel, right at the mask's end.
  Kernel<&affine> k("affine_constant_n", {.num_warps = 4, .param_names = {"in", "out", "s", "n"}, .constant_params = {"n"}});
  const int n = 2000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 97) - 48.0f;
  DeviceBuffer<float> in(x), out(n);
  for (int count : {1999, 1000, 1, 1999}) {
    out.fill_bytes(0xff);  // NaN: an element written past the mask or left unwritten shows
    k.launch({{4}, Backend::gpu}, in, out, 2.0f, count);
    const auto got = out.download();
    for (int i = 0; i < n; ++i) {
      if (i < count) ASSERT_EQ(got[i], x[i] * 2.0f + 1.0f) << "n = " << count << ", element " << i;
      else ASSERT_TRUE(std::isnan(got[i])) << "n = " << count << ", element " << i;
    }
  }
  ASSERT_EQ(k.program().specializations().size(), 3u);  // 1999 ran again without compiling
  EXPECT_EQ(k.program().describe(k.program().specializations()[0]), "in:align16 out:align16 s:f32 n=1999");
  const auto reasons = k.program().recompile_reasons();
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_NE(reasons[0].find("argument 3 (n) = 1000, where the compiled one has 1999 compiled in (KernelOptions::constant_params)"),
            std::string::npos)
      << reasons[0];
}

// ---- the debug mode's bounds checks (TILEFUSE_DEBUG_BOUNDS=1) ----

struct DebugBounds {
  DebugBounds() { setenv("TILEFUSE_DEBUG_BOUNDS", "1", 1); }
  ~DebugBounds() { unsetenv("TILEFUSE_DEBUG_BOUNDS"); }
};

// Reads 256 elements from `in` with no mask (past the end when n < 256); writes `out` with `limit` as the mask.
void overreach(tl::Ptr<const tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> /*n*/, tl::Scalar<tl::i32> limit) {
  auto i = tl::arange<256>();
  auto x = tl::load(in + i);
  tl::store(out + i, x + 1.0f, i < limit);
}

std::string bounds_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const BoundsError& e) {
    return e.what();
  }
  return "";
}

TEST_F(GpuInterop, BoundsChecksReportTheFirstViolation) {
  DebugBounds on;
  Kernel<&overreach> k("overreach", {.num_warps = 2, .param_names = {"in", "out", "n", "limit"}});
  DeviceBuffer<float> in(200), out(200);
  const std::string load = bounds_message([&] { k.launch({{1}, Backend::gpu}, in, out, 200, 200); });
  EXPECT_NE(load.find("tilefuse GPU bounds check: kernel 'overreach', program (0,0,0) thread "), std::string::npos) << load;
  EXPECT_NE(load.find("load %"), std::string::npos) << load;
  EXPECT_NE(load.find("test_interop.cpp:"), std::string::npos) << load;
  EXPECT_NE(load.find(": load through argument 0 (in) at element 2"), std::string::npos) << load;
  EXPECT_NE(load.find("outside its 200 elements (the access has no mask)"), std::string::npos) << load;
  DeviceBuffer<float> in_big(256);
  const std::string store = bounds_message([&] { k.launch({{1}, Backend::gpu}, in_big, out, 256, 208); });
  EXPECT_NE(store.find(": store through argument 1 (out) at element 20"), std::string::npos) << store;
  EXPECT_NE(store.find("outside its 200 elements (the mask let it through)"), std::string::npos) << store;
  // The record is cleared: a launch within bounds runs and gives the right values.
  const std::vector<float> ones(256, 1.0f);
  in_big.upload(ones);
  EXPECT_EQ(bounds_message([&] { k.launch({{1}, Backend::gpu}, in_big, out, 256, 200); }), "");
  for (float v : out.download()) ASSERT_EQ(v, 2.0f);
}

// With the checks on, the sample kernels run every path clean and give the same bits as without them.
TEST_F(GpuInterop, BoundsChecksFindNothingInTheSampleKernels) {
  const auto seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto twice = [](auto&& run) {
    auto plain = run();
    DebugBounds on;
    std::string err;
    decltype(plain) checked;
    try {
      checked = run();
    } catch (const BoundsError& e) {
      err = e.what();
    }
    EXPECT_EQ(err, "");
    ASSERT_EQ(plain.size(), checked.size());
    EXPECT_EQ(std::memcmp(plain.data(), checked.data(), plain.size() * sizeof(plain[0])), 0);
  };
  for (auto [rows, cols] : {std::pair{257, 100}, std::pair{100, 3001}, std::pair{16, 40000}, std::pair{4, 300001}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const auto x = reference::random_vector<bfloat16>(std::size_t(rows) * cols, seed);
    twice([&] {
      DeviceBuffer<bfloat16> dx(x), dy(x.size());
      kernels::softmax_auto(dx, dy, rows, cols, kernels::RowOptions{Backend::gpu});
      return dy.download();
    });
    twice([&] {
      DeviceBuffer<bfloat16> dx(x), dw(reference::random_vector<bfloat16>(cols, seed + 1)), db(reference::random_vector<bfloat16>(cols, seed + 2)),
          dy(x.size());
      kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
      kernels::layernorm_auto(dx, dw, db, dy, stats, rows, cols, 1e-5f, kernels::RowOptions{Backend::gpu});
      return dy.download();
    });
  }
  twice([&] {
    const int M = 300, N = 260, K = 1000;
    DeviceBuffer<bfloat16> a(reference::random_vector<bfloat16>(M * K, seed)), b(reference::random_vector<bfloat16>(K * N, seed + 1)),
        bias(reference::random_vector<bfloat16>(N, seed + 2)), c(M * N);
    kernels::matmul(a, b, bias, c, M, N, K, kernels::MatmulEpilogue::gelu);
    return c.download();
  });
  twice([&] {
    const kernels::AttentionShape s{1, 3, 777, 64};
    const std::size_t n = s.batch * s.heads * s.seq * s.head_dim;
    DeviceBuffer<half> q(reference::random_vector<half>(n, seed)), k(reference::random_vector<half>(n, seed + 1)),
        v(reference::random_vector<half>(n, seed + 2)), o(n);
    DeviceBuffer<float> lse(s.batch * s.heads * s.seq);
    kernels::attention(q, k, v, o, lse, s, true, 0.125f);
    return o.download();
  });
}

}  // namespace
