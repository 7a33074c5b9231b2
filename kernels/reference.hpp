// float64 references for the sample kernels and the checks tests, examples and benches share:
// random inputs, relative error, every-element-written checks.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "backend/numerics/float16.hpp"
#include "backend/numerics/philox.hpp"

namespace tilefuse::reference {

/// x as a float (exact for half and bfloat16).
template <class H> float to_float(H x) { return static_cast<float>(x); }
/// f rounded to the host element type H.
template <class H> H from_float(float f) { return H(f); }
template <> inline float from_float<float>(float f) { return f; }

/// The GELU in float64, erf form: x Phi(x) = x (1 + erf(x / sqrt 2)) / 2.
inline double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

/// `n` normally distributed values (mean `mean`, standard deviation `stddev`) rounded to H.
template <class H>
std::vector<H> random_vector(std::size_t n, std::uint64_t seed, float mean = 0.f, float stddev = 1.f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<H> v(n);
  for (auto& x : v) x = from_float<H>(dist(gen));
  return v;
}

/// Row softmax in float64 of rows x cols values.
template <class H>
std::vector<double> softmax(std::span<const H> x, std::int64_t rows, std::int64_t cols) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(to_float(x[r * cols + c])));
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(to_float(x[r * cols + c])) - m);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(static_cast<double>(to_float(x[r * cols + c])) - m) / s;
  }
  return y;
}

/// ||y - ref|| / ||ref||; infinity when y holds a NaN or infinity (an unwritten or poisoned element).
template <class H>
double relative_error(std::span<const H> y, std::span<const double> ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = to_float(y[i]);
    if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// Largest |y - ref| / (atol + rtol |ref|) over all elements: <= 1 means every element is within tolerance.
template <class H>
double worst_element(std::span<const H> y, std::span<const double> ref, double atol, double rtol) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double v = to_float(y[i]);
    if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(v - ref[i]) / (atol + rtol * std::abs(ref[i])));
  }
  return worst;
}

/// Relative error a result in element type H may have against float64 for a well-conditioned kernel.
template <class H> constexpr double tolerance() {
  if constexpr (std::is_same_v<H, float>) return 1e-5;
  else if constexpr (std::is_same_v<H, half>) return 2e-3;
  else return 1.6e-2;
}

}  // namespace tilefuse::reference

namespace tilefuse::reference {

/// LayerNorm in float64: y = (x - mean) / sqrt(var + eps) * w + b per row; also the mean and rstd.
template <class H>
std::vector<double> layernorm(std::span<const H> x, std::span<const H> w, std::span<const H> b, std::int64_t rows,
                              std::int64_t cols, double eps, std::vector<double>* mean = nullptr,
                              std::vector<double>* rstd = nullptr) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  if (mean) mean->assign(rows, 0);
  if (rstd) rstd->assign(rows, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (std::int64_t c = 0; c < cols; ++c) m += to_float(x[r * cols + c]);
    m /= static_cast<double>(cols);
    for (std::int64_t c = 0; c < cols; ++c) v += (to_float(x[r * cols + c]) - m) * (to_float(x[r * cols + c]) - m);
    v /= static_cast<double>(cols);
    const double rs = 1.0 / std::sqrt(v + eps);
    for (std::int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (to_float(x[r * cols + c]) - m) * rs * to_float(w[c]) + to_float(b[c]);
    if (mean) (*mean)[r] = m;
    if (rstd) (*rstd)[r] = rs;
  }
  return y;
}

/// RMSNorm in float64: y = x / sqrt(mean(x^2) + eps) * w per row.
template <class H>
std::vector<double> rmsnorm(std::span<const H> x, std::span<const H> w, std::int64_t rows, std::int64_t cols, double eps) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += static_cast<double>(to_float(x[r * cols + c])) * to_float(x[r * cols + c]);
    const double rs = 1.0 / std::sqrt(s / static_cast<double>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = to_float(x[r * cols + c]) * rs * to_float(w[c]);
  }
  return y;
}

/// The epilogue in float64, with the same Philox draws: dropout(gelu(x + bias), p) + residual.
template <class H>
std::vector<double> epilogue(std::span<const H> x, std::span<const H> bias, std::span<const H> residual,
                             std::int64_t rows, std::int64_t cols, float p, std::int64_t seed, std::int64_t offset) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      const double h = static_cast<double>(to_float(x[i])) + to_float(bias[c]);
      const double g = gelu(h);
      const bool keep = philox_uniform(static_cast<std::uint64_t>(seed), offset + i) >= p;
      y[i] = (keep ? g / (1.0 - static_cast<double>(p)) : 0.0) + to_float(residual[i]);
    }
  return y;
}

}  // namespace tilefuse::reference
