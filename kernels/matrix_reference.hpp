// Float64 references of the matrix kernels: attention (O and the per-row log-sum-exp) and matmul with its
// epilogue, from the inputs as stored, and the error measure their checks use: max |got - ref| / max |ref|
// (stricter than the L2 measure of reference.hpp). Shared by the tests, the examples and the bench.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/reference.hpp"

namespace tilefuse::reference {

/// Attention in float64 of the inputs as stored: O and the natural log-sum-exp per row.
/// `heads` independent heads (batch x heads) of `seq` rows of `dim` elements each, stored one after another.
template <class H>
void attention(const std::vector<H>& q, const std::vector<H>& k, const std::vector<H>& v, std::int64_t heads, std::int64_t seq,
               std::int64_t dim, bool causal, double scale, std::vector<double>& o, std::vector<double>& lse) {
  const std::int64_t N = seq, D = dim;
  o.assign(q.size(), 0.0);
  lse.assign(static_cast<std::size_t>(heads * N), 0.0);
  std::vector<double> p(static_cast<std::size_t>(N));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < N; ++i) {
      const std::int64_t last = causal ? i : N - 1;
      double mx = -INFINITY;
      for (std::int64_t j = 0; j <= last; ++j) {
        double a = 0;
        for (std::int64_t d = 0; d < D; ++d) a += double(float(q[(h * N + i) * D + d])) * double(float(k[(h * N + j) * D + d]));
        p[j] = a * scale;
        mx = std::max(mx, p[j]);
      }
      double sum = 0;
      for (std::int64_t j = 0; j <= last; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (std::int64_t d = 0; d < D; ++d) {
        double a = 0;
        for (std::int64_t j = 0; j <= last; ++j) a += p[j] * double(float(v[(h * N + j) * D + d]));
        o[(h * N + i) * D + d] = a / sum;
      }
      lse[h * N + i] = mx + std::log(sum);
    }
}

/// a b + bias in float64, through the exact (erf) GELU when `gelu`.
template <class H>
std::vector<double> matmul(const std::vector<H>& a, const std::vector<H>& b, const std::vector<H>& bias, std::int64_t M, std::int64_t N,
                           std::int64_t K, bool gelu) {
  std::vector<double> c(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double x = double(float(bias[j]));
      for (std::int64_t kk = 0; kk < K; ++kk) x += double(float(a[i * K + kk])) * double(float(b[kk * N + j]));
      if (gelu) x = reference::gelu(x);
      c[i * N + j] = x;
    }
  return c;
}

/// max |got - ref| / max |ref| over the first ref.size() elements.
template <class H>
double max_relative_error(const std::vector<H>& got, const std::vector<double>& ref) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = double(float(got[i]));
    if (!std::isfinite(g)) return INFINITY;
    err = std::max(err, std::abs(g - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace tilefuse::reference
