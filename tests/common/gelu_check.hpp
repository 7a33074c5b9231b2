// tl::gelu against float64 over a dense grid of [-12, 12] and at its edges (zeros, tiny and huge
// magnitudes, infinities, NaN), shared by the interpreter tier and the GPU tier: the bound it is held to
// is the one docs/dsl.md states, in units of max(1, |x|).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "dsl/tl.hpp"
#include "kernels/reference.hpp"

namespace tilefuse::test {

/// y[i] = gelu(x[i]) for i < n, one BLOCK of elements per program.
template <int BLOCK>
void gelu_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::i32> n) {
  const auto i = tl::program_id(0) * BLOCK + tl::arange<BLOCK>();
  tl::store(y + i, tl::gelu(tl::load(x + i, i < n)), i < n);
}

/// Runs tl::gelu on `backend` over `points` evenly spaced values of [-12, 12] and the edge values, and
/// checks each finite result within bound * max(1, |x|) of float64; +inf gives +inf, -inf and NaN NaN.
/// Returns the largest error seen, in those units.
inline double check_gelu(Backend backend, int points, double bound) {
  std::vector<float> x;
  for (int i = 0; i < points; ++i) x.push_back(static_cast<float>(-12.0 + 24.0 * i / (points - 1)));
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> edges = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 30.0f, -30.0f, 1e30f, -1e30f,
                                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  x.insert(x.end(), edges.begin(), edges.end());
  const std::size_t finite = x.size();
  x.insert(x.end(), {inf, -inf, std::nanf("")});
  const int n = static_cast<int>(x.size());
  constexpr int kBlock = 1024;
  std::vector<float> y(x.size(), 12345.0f);
  Kernel<&gelu_program<kBlock>> k("gelu_accuracy", {.num_warps = 4});
  if (backend == Backend::gpu) {
    DeviceBuffer<float> dx(x), dy(y);
    k.launch({{(n + kBlock - 1) / kBlock}, backend}, dx, dy, n);
    y = dy.download();
  } else {
    k.launch({{(n + kBlock - 1) / kBlock}, backend}, x, y, n);
  }
  double worst = 0;
  for (std::size_t i = 0; i < finite; ++i) {
    const double xi = x[i], want = reference::gelu(xi);
    const double err = std::abs(y[i] - want) / std::max(1.0, std::abs(xi));
    worst = std::max(worst, err);
    EXPECT_LE(err, bound) << "gelu(" << xi << ") = " << y[i] << ", float64 " << want;
  }
  EXPECT_EQ(y[finite], inf) << "gelu(+inf)";
  EXPECT_TRUE(std::isnan(y[finite + 1])) << "gelu(-inf), NaN as in the erf form (-inf * 0)";
  EXPECT_TRUE(std::isnan(y[finite + 2])) << "gelu(NaN)";
  return worst;
}

}  // namespace tilefuse::test
