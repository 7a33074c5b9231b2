// The interpreter against float64 for every op and dtype, exact integer semantics, f16/bf16 rounding
// after each op, and the errors it raises instead of crashing.
#include <gtest/gtest.h>

#include <random>

#include "backend/interp/interp.hpp"
#include "kernels/reference.hpp"
#include "tests/common/op_kernels.hpp"

using namespace tilefuse;

namespace {

template <class H, int BLOCK>
void check_float_ops(int n, std::uint64_t seed) {
  const auto& ops = testkit::float_ops();
  auto x = reference::random_vector<H>(n, seed, 0.f, 2.f);
  std::vector<H> out(ops.size() * n, reference::from_float<H>(std::nanf("")));
  Kernel<&testkit::float_ops_program<tl::dtype_of_host_t<H>, BLOCK>> k("float_ops", {.num_warps = 2});
  k.launch({{1}, Backend::interpreter}, x, out, n);
  const double tol = reference::tolerance<H>();
  for (std::size_t op = 0; op < ops.size(); ++op)
    for (int i = 0; i < n; ++i) {
      const double xi = reference::to_float(x[i]);
      const double want = ops[op].ref(xi);
      const double got = reference::to_float(out[op * n + i]);
      const double slack = std::string(ops[op].name).rfind("cast", 0) == 0 ? 1.0 : 0.0;
      ASSERT_NEAR(got, want, slack + 2 * tol * (1 + std::abs(want))) << ops[op].name << " x=" << xi << " seed " << seed;
    }
}

}  // namespace

TEST(Interp, FloatOpsF32) { check_float_ops<float, 256>(250, std::random_device{}()); }
TEST(Interp, FloatOpsF16) { check_float_ops<half, 128>(128, std::random_device{}()); }
TEST(Interp, FloatOpsBf16) { check_float_ops<bfloat16, 64>(33, std::random_device{}()); }

TEST(Interp, F16ResultsAreRoundedAfterEachOp) {
  // x*x in f16 must equal the f16 rounding of the f32 product, bit for bit.
  const int n = 64;
  auto x = reference::random_vector<half>(n, std::random_device{}(), 0.f, 4.f);
  const auto& ops = testkit::float_ops();
  std::vector<half> out(ops.size() * n);
  Kernel<&testkit::float_ops_program<tl::f16, 64>> k("float_ops", {.num_warps = 1});
  k.launch({{1}, Backend::interpreter}, x, out, n);
  const std::size_t square = 7;
  ASSERT_STREQ(ops[square].name, "x*x");
  for (int i = 0; i < n; ++i) {
    const float f = static_cast<float>(x[i]);
    EXPECT_EQ(out[square * n + i].bits, half(f * f).bits) << f;
  }
}

TEST(Interp, IntOpsAreExact) {
  const int n = 100, programs = 3;
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> dist(-30000, 30000);
  std::vector<std::int32_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = dist(gen);
    do b[i] = dist(gen); while (b[i] == 0);
  }
  const std::size_t rows = testkit::int_ops().size();
  std::vector<std::int32_t> out(rows * n, -7);
  std::vector<std::int64_t> wide(n, -7);
  Kernel<&testkit::int_ops_program<128>> k("int_ops", {.num_warps = 1});
  k.launch({{programs}, Backend::interpreter}, a, b, out, wide, n);
  std::int64_t sum = 0, mx = INT32_MIN, mn = INT32_MAX;
  for (int i = 0; i < n; ++i) {
    for (std::size_t op = 0; op < testkit::int_ops().size(); ++op)
      if (op < 10 || op > 13) {
        ASSERT_EQ(out[op * n + i], static_cast<std::int32_t>(testkit::int_ops()[op].ref(a[i], b[i])))
            << testkit::int_ops()[op].name << " a=" << a[i] << " b=" << b[i];
      }
    EXPECT_EQ(wide[i], std::int64_t{a[i]} * b[i]);
    sum += a[i];
    mx = std::max<std::int64_t>(mx, a[i]);
    mn = std::min<std::int64_t>(mn, b[i]);
  }
  EXPECT_EQ(out[10 * n], sum);
  EXPECT_EQ(out[11 * n + 5], mx);
  EXPECT_EQ(out[12 * n + 7], mn);
  for (int p = 0; p < programs; ++p) EXPECT_EQ(out[13 * n + p], p + programs);
}

namespace {
void out_of_bounds(tl::Ptr<tl::f32> x, tl::Scalar<tl::i32> n) {
  auto i = tl::arange<16>();
  tl::store(x + i, tl::cast<tl::f32>(i), i < n);  // n > the buffer: the mask lets a bad element through
}
void divide(tl::Ptr<tl::i32> x, tl::Scalar<tl::i32> d) { tl::store(x, tl::load(x) / d); }
void unmasked_out_of_bounds(tl::Ptr<tl::f32> x) { tl::store(x + tl::arange<16>(), tl::load(x + tl::arange<16>()) * 2.0f); }
}  // namespace

TEST(Interp, OutOfBoundsAccessIsAnError) {
  Kernel<&out_of_bounds> k("oob", {.num_warps = 1, .param_names = {"x", "n"}});
  std::vector<float> x(10);
  try {
    k.launch({{1}, Backend::interpreter}, x, 16);
    FAIL() << "expected an error";
  } catch (const interp::InterpreterError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'oob'"), std::string::npos) << what;
    EXPECT_NE(what.find("argument 0 (x)"), std::string::npos) << what;
    EXPECT_NE(what.find("element 10"), std::string::npos) << what;
    EXPECT_NE(what.find("(the mask let it through)"), std::string::npos) << what;
  }
  Kernel<&unmasked_out_of_bounds> u("oob_unmasked", {.num_warps = 1, .param_names = {"x"}});
  try {
    u.launch({{1}, Backend::interpreter}, x);
    FAIL() << "expected an error";
  } catch (const interp::InterpreterError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("element 10"), std::string::npos) << what;
    EXPECT_NE(what.find("(the access has no mask)"), std::string::npos) << what;
    EXPECT_EQ(what.find("mask let it through"), std::string::npos) << what;
  }
  std::vector<float> ok(16);
  EXPECT_NO_THROW(k.launch({{1}, Backend::interpreter}, ok, 16));
  EXPECT_EQ(ok[15], 15.0f);
}

TEST(Interp, IntegerDivisionByZeroIsAnError) {
  Kernel<&divide> k("divide", {.num_warps = 1});
  std::vector<std::int32_t> x{7};
  EXPECT_THROW(k.launch({{1}, Backend::interpreter}, x, 0), interp::InterpreterError);
  k.launch({{1}, Backend::interpreter}, x, -2);
  EXPECT_EQ(x[0], -3);
}

// Cache hints change nothing the interpreter computes: hinted_copy_program against float64, rows of a
// ragged length (masked) and of the whole tile.
TEST(Interp, CacheHintedAccessesMatchFloat64) {
  for (int n : {1000, 1024}) {
    const int rows = 3, block = 1024;
    const auto seed = std::random_device{}();
    SCOPED_TRACE("n " + std::to_string(n) + " seed " + std::to_string(seed));
    auto x = reference::random_vector<float>(rows * n, seed);
    auto h = reference::random_vector<bfloat16>(rows * block, seed + 1);
    std::vector<float> y(x.size(), std::nanf("")), sums(rows, std::nanf(""));
    std::vector<bfloat16> h_out(h.size(), reference::from_float<bfloat16>(std::nanf("")));
    Kernel<&testkit::hinted_copy_program<1024>> k("hinted_copy", KernelOptions{4, {"x", "h", "y", "h_out", "sums", "n"}});
    k.launch({{rows}, Backend::interpreter}, x, h, y, h_out, sums, n);
    std::vector<double> y_ref, sums_ref;
    testkit::hinted_copy_reference(x, h, rows, n, block, y_ref, sums_ref);
    EXPECT_LE(reference::worst_element<float>(y, y_ref, 1e-6, 1e-6), 1.0);
    EXPECT_LE(reference::worst_element<float>(sums, sums_ref, 1e-4, 1e-5), 1.0);
    for (std::size_t i = 0; i < h.size(); ++i) ASSERT_EQ(reference::to_float(h_out[i]), reference::to_float(h[i])) << i;
  }
}
