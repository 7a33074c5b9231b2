// The fused epilogue chain and its random numbers: Philox known answers, reproducibility, the dropout
// rate, fused == unfused in the interpreter, float64 agreement, and clean NVRTC compiles.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/numerics/philox.hpp"
#include "kernels/epilogue/epilogue.hpp"
#include "kernels/reference.hpp"

using namespace tilefuse;

TEST(Philox, KnownAnswer) {
  // Philox4x32-10 with key 0 and counter 0 gives 0x6627e8d5 as its first word (Random123's test vector).
  EXPECT_EQ(philox_uniform(0, 0), static_cast<float>(0x6627e8d5u >> 8) * 5.9604644775390625e-08f);
}

TEST(Philox, UniformAndReproducible) {
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = philox_uniform(1234, i);
    ASSERT_GE(u, 0.f);
    ASSERT_LT(u, 1.f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_EQ(philox_uniform(7, 99), philox_uniform(7, 99));
  EXPECT_NE(philox_uniform(7, 99), philox_uniform(8, 99));
  EXPECT_NE(philox_uniform(7, 99), philox_uniform(7, 100));
}

namespace {

template <class H>
void check_epilogue(std::int64_t rows, std::int64_t cols, float p) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("epilogue " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto x = reference::random_vector<H>(n, seed), res = reference::random_vector<H>(n, seed + 1);
  auto bias = reference::random_vector<H>(cols, seed + 2);
  std::vector<H> y(n, reference::from_float<H>(std::nanf(""))), y2 = y, t1(n), t2(n);
  const kernels::DropoutParams d{p, static_cast<std::int64_t>(seed), 12345};
  kernels::epilogue(x, bias, res, y, rows, cols, d, {Backend::interpreter});
  kernels::epilogue_unfused(x, bias, res, y2, t1, t2, rows, cols, d, {Backend::interpreter});
  const auto ref = reference::epilogue<H>(x, bias, res, rows, cols, p, d.seed, d.offset);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(y, ref), tol);
  EXPECT_LE(reference::worst_element<H>(y, ref, 4 * tol, 4 * tol), 1.0);
  EXPECT_LE(reference::relative_error<H>(y2, ref), 4 * tol);  // rounds to H between its four kernels
  if constexpr (std::is_same_v<H, float>) {
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], y2[i]) << i;  // same f32 steps: bit for bit
  }
}

}  // namespace

TEST(Epilogue, F32MatchesFloat64AndUnfused) {
  for (std::int64_t cols : {1, 7, 768, 1000, 4096}) check_epilogue<float>(5, cols, 0.1f);
  check_epilogue<float>(3, 1000, 0.f);
  check_epilogue<float>(3, 1000, 0.9f);
}

TEST(Epilogue, HalfTypes) {
  check_epilogue<half>(4, 3000, 0.2f);
  check_epilogue<bfloat16>(4, 3000, 0.2f);
}

TEST(Epilogue, DropsAboutPOfTheElements) {
  const std::int64_t rows = 64, cols = 2048;
  std::vector<float> x(rows * cols, 1.f), res(rows * cols, 0.f), bias(cols, 0.f), y(rows * cols);
  kernels::epilogue(x, bias, res, y, rows, cols, {0.25f, 42, 0}, {Backend::interpreter});
  const double dropped = static_cast<double>(std::count(y.begin(), y.end(), 0.f)) / y.size();
  EXPECT_NEAR(dropped, 0.25, 5 * std::sqrt(0.25 * 0.75 / y.size()));
  std::vector<float> again(y.size()), shifted(y.size());
  kernels::epilogue(x, bias, res, again, rows, cols, {0.25f, 42, 0}, {Backend::interpreter});
  EXPECT_EQ(again, y);  // same seed and offset: the same elements
  kernels::epilogue(x, bias, res, shifted, rows, cols, {0.25f, 42, rows * cols}, {Backend::interpreter});
  EXPECT_NE(shifted, y);  // the next offset: fresh numbers
}

TEST(Epilogue, BadProbabilityIsAClearError) {
  std::vector<float> a(8), b(8), c(8), d(8);
  try {
    kernels::epilogue(a, b, c, d, 1, 8, {1.0f, 0, 0}, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument p: expected a dropout probability in [0, 1), got 1.0"),
              std::string::npos) << e.what();
  }
}

TEST(Epilogue, CompilesWithoutSpills) {
  const kernels::RowOptions interpreter{Backend::interpreter};
  const auto unfused = kernels::epilogue_programs(ir::DType::f16, 1024, false, interpreter);
  ASSERT_EQ(unfused.size(), 4u);
  EXPECT_EQ(unfused[2]->name(), "dropout_1024");
  for (const Program* p : {kernels::epilogue_programs(ir::DType::f32, 4096, true, interpreter).at(0),
                           kernels::epilogue_programs(ir::DType::bf16, 16384, true, interpreter).at(0), unfused[2]}) {
    const auto info = p->compile(p->default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << p->name() << "\n" << info.ptxas_log;
    EXPECT_NE(info.source.find("tf_rand("), std::string::npos);
  }
}
