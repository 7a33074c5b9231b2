// Float64 references for the matrix kernels (attention with its log-sum-exp, matmul with its epilogue),
// random inputs, a program with every 2D operation, and the relative-error measure every matrix test uses: max |got - ref| / max |ref|.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "dsl/tl.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/matmul/matmul.hpp"

namespace tilefuse::test {

// Every 2D operation in one program: masked 2D loads from row and column offsets, broadcasting of
// columns and rows, where with a 2D mask, reductions along both axes, trans, and dot with an accumulator.
inline void matrix_ops_program(tilefuse::tl::Ptr<tilefuse::tl::f16> a, tilefuse::tl::Ptr<tilefuse::tl::f16> b, tilefuse::tl::Ptr<tilefuse::tl::f32> c, tilefuse::tl::Ptr<tilefuse::tl::f32> rowmax, tilefuse::tl::Ptr<tilefuse::tl::f32> colsum,
                 tilefuse::tl::Ptr<tilefuse::tl::f32> t, tilefuse::tl::Scalar<tilefuse::tl::i32> m, tilefuse::tl::Scalar<tilefuse::tl::i32> n) {
  const auto rows = tilefuse::tl::arange<32>();
  const auto cols = tilefuse::tl::arange<16>();
  const auto in = (rows(tilefuse::tl::all, tilefuse::tl::none) < m) & (cols(tilefuse::tl::none, tilefuse::tl::all) < n);
  const auto A = tilefuse::tl::load(a + rows(tilefuse::tl::all, tilefuse::tl::none) * 16 + cols(tilefuse::tl::none, tilefuse::tl::all), in);  // [32, 16]
  const auto B = tilefuse::tl::load(b + rows(tilefuse::tl::all, tilefuse::tl::none) * 16 + cols(tilefuse::tl::none, tilefuse::tl::all), in);  // [32, 16]
  const auto x = tilefuse::tl::where(in, tilefuse::tl::cast<tilefuse::tl::f32>(A) * 2.0f + tilefuse::tl::cast<tilefuse::tl::f32>(rows)(tilefuse::tl::all, tilefuse::tl::none), -tilefuse::tl::inf);
  tilefuse::tl::store(rowmax + rows, tilefuse::tl::max<1>(x), rows < m);
  tilefuse::tl::store(colsum + cols, tilefuse::tl::sum<0>(tilefuse::tl::where(in, x, 0.0f)), cols < n);
  tilefuse::tl::store(t + cols(tilefuse::tl::all, tilefuse::tl::none) * 32 + rows(tilefuse::tl::none, tilefuse::tl::all), tilefuse::tl::trans(tilefuse::tl::cast<tilefuse::tl::f32>(B)));
  const auto acc = tilefuse::tl::full<tilefuse::tl::f32, 32, 32>(1.0f);
  const auto ab = tilefuse::tl::dot(A, tilefuse::tl::trans(B), acc);  // [32, 32] = A B^T + 1
  tilefuse::tl::store(c + rows(tilefuse::tl::all, tilefuse::tl::none) * 32 + rows(tilefuse::tl::none, tilefuse::tl::all), ab);
}

/// n elements of H drawn from N(0, sigma) with `seed`.
template <class H>
std::vector<H> random_matrix(std::size_t n, std::uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<H> out(n);
  for (auto& x : out) x = H(d(g));
  return out;
}

/// Attention in float64 of the inputs as stored: O and the natural log-sum-exp per row.
template <class H>
void attention_reference(const std::vector<H>& q, const std::vector<H>& k, const std::vector<H>& v, const kernels::AttentionShape& s,
                         bool causal, double scale, std::vector<double>& o, std::vector<double>& lse) {
  const std::int64_t N = s.seq, D = s.head_dim;
  o.assign(q.size(), 0.0);
  lse.assign(static_cast<std::size_t>(s.batch * s.heads * N), 0.0);
  std::vector<double> p(static_cast<std::size_t>(N));
  for (std::int64_t h = 0; h < s.batch * s.heads; ++h)
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

/// epilogue(a b + bias) in float64.
template <class H>
std::vector<double> matmul_reference(const std::vector<H>& a, const std::vector<H>& b, const std::vector<H>& bias, std::int64_t M,
                                     std::int64_t N, std::int64_t K, kernels::MatmulEpilogue e) {
  std::vector<double> c(static_cast<std::size_t>(M * N));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double x = double(float(bias[j]));
      for (std::int64_t kk = 0; kk < K; ++kk) x += double(float(a[i * K + kk])) * double(float(b[kk * N + j]));
      if (e == kernels::MatmulEpilogue::gelu) x = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      c[i * N + j] = x;
    }
  return c;
}

/// max |got - ref| / max |ref| over the first ref.size() elements.
template <class H>
double relative_error(const std::vector<H>& got, const std::vector<double>& ref) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = double(float(got[i]));
    if (!std::isfinite(g)) return INFINITY;
    err = std::max(err, std::abs(g - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return err / std::max(scale, 1e-30);
}

}  // namespace tilefuse::test
