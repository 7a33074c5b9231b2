// Numerics at the edges for the row kernels, shared by the interpreter tier and the GPU tier: rows that
// hold NaN, +inf, -inf, only -inf, a constant, very large or very small magnitudes. What each row must
// give is torch's behavior (softmax: torch.softmax; LayerNorm: torch.nn.functional.layer_norm), written
// down in docs/dsl.md, "Numerics at the edges".
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

/// The edge rows, `cols` wide each: 0 a NaN, 1 a +inf, 2 only -inf, 3 one -inf among finite values,
/// 4 a constant, 5 magnitudes near 1e15 (f32) or 1e4 (halves), 6 magnitudes near 1e-30 (f32) or 1e-3.
template <class H>
std::vector<float> edge_rows(int cols) {
  const bool f32 = std::is_same_v<H, float>;
  const float big = f32 ? 1e15f : 1e4f, small = f32 ? 1e-30f : 1e-3f;
  std::vector<float> x(7 * std::size_t(cols));
  for (int c = 0; c < cols; ++c) {
    const float wave = std::sin(0.37f * float(c));
    x[0 * cols + c] = c == cols / 2 ? std::nanf("") : wave;
    x[1 * cols + c] = c == cols / 3 ? kInf : wave;
    x[2 * cols + c] = -kInf;
    x[3 * cols + c] = c == 1 ? -kInf : wave;
    x[4 * cols + c] = 3.5f;
    x[5 * cols + c] = big * (1.0f + 0.25f * wave);
    x[6 * cols + c] = small * (1.0f + 0.25f * wave);
  }
  return x;
}

/// f(x, y) on host vectors (the interpreter) or on device buffers (the GPU); y comes back poisoned with
/// NaN wherever f did not write.
template <class H, class F>
std::vector<H> on_backend(const std::vector<H>& x, Backend backend, F f) {
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  if (backend == Backend::interpreter) {
    std::vector<H> xc = x;
    f(xc, y);
    return y;
  }
  DeviceBuffer<H> dx(x), dy(y);
  f(dx, dy);
  return dy.download();
}

/// softmax_auto over the edge rows on `backend`, checked row by row against torch's behavior.
template <class H>
void check_softmax_edges(int cols, Backend backend) {
  SCOPED_TRACE(std::string("softmax edges, cols ") + std::to_string(cols));
  const std::vector<float> xf = edge_rows<H>(cols);
  std::vector<H> xh(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) xh[i] = reference::from_float<H>(xf[i]);
  const std::vector<H> y = on_backend(xh, backend, [&](auto& x, auto& out) { kernels::softmax_auto(x, out, 7, cols, kernels::RowOptions{backend}); });
  auto at = [&](int r, int c) { return reference::to_float(y[std::size_t(r) * cols + c]); };
  for (int r : {0, 1, 2})  // NaN, +inf, all -inf: every element NaN (as torch: the max or the sum is NaN)
    for (int c = 0; c < cols; ++c) ASSERT_TRUE(std::isnan(at(r, c))) << "row " << r << " col " << c;
  // One -inf among finite values: exactly 0 there, the others the softmax of the finite ones.
  ASSERT_EQ(at(3, 1), 0.0f);
  for (int r : {3, 4, 5, 6}) {
    const auto ref = reference::softmax<H>(std::span<const H>(xh).subspan(std::size_t(r) * cols, cols), 1, cols);
    for (int c = 0; c < cols; ++c) {
      const double want = ref[c];
      ASSERT_TRUE(std::isfinite(at(r, c))) << "row " << r << " col " << c;
      // (f16 holds values below 6e-5 as subnormals, 2^-24 apart: a correctly rounded result may be that far off)
      const double atol = std::is_same_v<H, half> ? 6.0e-8 : 4e-6 * reference::tolerance<H>();
      ASSERT_NEAR(at(r, c), want, 4 * reference::tolerance<H>() * want + atol) << "row " << r << " col " << c;
    }
  }
  for (int c = 0; c < cols; ++c) ASSERT_NEAR(at(4, c), 1.0 / cols, 4 * reference::tolerance<H>() / cols);  // a constant row: uniform
}

/// layernorm_auto over the edge rows (weight 1, bias 0.25) on `backend`, checked against torch's behavior.
template <class H>
void check_layernorm_edges(int cols, Backend backend) {
  SCOPED_TRACE(std::string("layernorm edges, cols ") + std::to_string(cols));
  const std::vector<float> xf = edge_rows<H>(cols);
  std::vector<H> xh(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) xh[i] = reference::from_float<H>(xf[i]);
  const std::vector<H> w(cols, reference::from_float<H>(1.0f)), b(cols, reference::from_float<H>(0.25f));
  const std::vector<H> y = on_backend(xh, backend, [&](auto& x, auto& out) {
    using Buf = std::remove_reference_t<decltype(x)>;
    Buf wb(w), bb(b);
    using F32 = std::conditional_t<std::is_same_v<Buf, std::vector<H>>, std::vector<float>, DeviceBuffer<float>>;
    kernels::RowStats<F32> stats{F32(7), F32(7)};
    kernels::layernorm_auto(x, wb, bb, out, stats, 7, cols, 1e-5f, kernels::RowOptions{backend});
  });
  auto at = [&](int r, int c) { return reference::to_float(y[std::size_t(r) * cols + c]); };
  for (int r : {0, 1, 2, 3})  // NaN, +inf, -inf anywhere in a row: the mean is not finite, every element NaN
    for (int c = 0; c < cols; ++c) ASSERT_TRUE(std::isnan(at(r, c))) << "row " << r << " col " << c;
  for (int c = 0; c < cols; ++c) ASSERT_EQ(at(4, c), 0.25f) << "a constant row gives the bias, col " << c;
  // Large and small magnitudes normalize to the same values as the wave itself: (x - mean) / std.
  for (int r : {5, 6}) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += reference::to_float(xh[std::size_t(r) * cols + c]);
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += std::pow(reference::to_float(xh[std::size_t(r) * cols + c]) - mean, 2);
    var /= cols;
    for (int c = 0; c < cols; ++c) {
      const double want = (reference::to_float(xh[std::size_t(r) * cols + c]) - mean) / std::sqrt(var + 1e-5) + 0.25;
      // Row 6's values are so small that eps (1e-5) dominates the variance, as in torch: y is nearly the bias.
      ASSERT_NEAR(at(r, c), want, 8 * reference::tolerance<H>() * (1 + std::abs(want))) << "row " << r << " col " << c;
    }
  }
}

}  // namespace tilefuse::test
