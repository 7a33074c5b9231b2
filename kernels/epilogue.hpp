// A fused elementwise chain, the kind that sits between two GEMMs: y = dropout(gelu(x + bias)) + residual,
// as one kernel (reads x and the residual, writes y: 3 bytes per element-byte) and as four kernels
// (bias, GELU, dropout, residual: 9). Dropout draws Philox numbers from (seed, offset + element index),
// so a launch is reproducible and the GPU and the interpreter drop the same elements.
#pragma once

#include "backend/numerics/philox.hpp"
#include "kernels/common.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// Widest row one epilogue program holds.
inline constexpr std::int64_t kEpilogueMaxCols = 16384;

namespace detail {
// Index of element `cols` of row `row` in an n-column matrix, in i64 (no i32 overflow past 2^31 elements).
template <int BLOCK>
tl::Tile<tl::i64, BLOCK> flat_index(tl::Scalar<tl::i32> row, tl::Scalar<tl::i32> n, tl::Tile<tl::i32, BLOCK> cols) {
  return tl::cast<tl::i64>(row) * tl::cast<tl::i64>(n) + tl::cast<tl::i64>(cols);
}
// GELU, erf form: 0.5 h (1 + erf(h / sqrt 2)).
template <int BLOCK>
tl::Tile<tl::f32, BLOCK> gelu(tl::Tile<tl::f32, BLOCK> h) {
  return 0.5 * h * (1.0 + tl::erf(h * 0.70710678118654752));
}
// Inverted dropout: h / (1 - p) where rand(seed, offset + index) >= p, else 0.
template <int BLOCK>
tl::Tile<tl::f32, BLOCK> dropout(tl::Tile<tl::f32, BLOCK> h, tl::Scalar<tl::f32> p, tl::Scalar<tl::i64> seed,
                                 tl::Scalar<tl::i64> offset, tl::Tile<tl::i64, BLOCK> index) {
  return tl::where(tl::rand(seed, offset + index) >= p, h / (1.0 - p), 0.0);
}
}  // namespace detail

/// The fused chain for one row: y = dropout(gelu(x + bias), p) + residual.
template <class T, int BLOCK>
void epilogue_program(tl::Ptr<T> x, tl::Ptr<T> bias, tl::Ptr<T> residual, tl::Ptr<T> y, tl::Scalar<tl::i32> n,
                      tl::Scalar<tl::f32> p, tl::Scalar<tl::i64> seed, tl::Scalar<tl::i64> offset) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto at = row * n + cols;
  auto h = tl::cast<tl::f32>(tl::load(x + at, mask)) + tl::cast<tl::f32>(tl::load(bias + cols, mask));
  auto d = detail::dropout(detail::gelu(h), p, seed, offset, detail::flat_index(row, n, cols));
  tl::store(y + at, tl::cast<T>(d + tl::cast<tl::f32>(tl::load(residual + at, mask))), mask);
}

/// Unfused step 1: t = x + bias.
template <class T, int BLOCK>
void bias_add_program(tl::Ptr<T> x, tl::Ptr<T> bias, tl::Ptr<T> t, tl::Scalar<tl::i32> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto at = row * n + cols;
  tl::store(t + at, tl::cast<T>(tl::cast<tl::f32>(tl::load(x + at, mask)) + tl::cast<tl::f32>(tl::load(bias + cols, mask))), mask);
}

/// Unfused step 2: t = gelu(t).
template <class T, int BLOCK>
void gelu_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto at = row * n + cols;
  tl::store(out + at, tl::cast<T>(detail::gelu(tl::cast<tl::f32>(tl::load(in + at, mask)))), mask);
}

/// Unfused step 3: t = dropout(t).
template <class T, int BLOCK>
void dropout_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> n, tl::Scalar<tl::f32> p,
                     tl::Scalar<tl::i64> seed, tl::Scalar<tl::i64> offset) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto at = row * n + cols;
  auto d = detail::dropout(tl::cast<tl::f32>(tl::load(in + at, mask)), p, seed, offset, detail::flat_index(row, n, cols));
  tl::store(out + at, tl::cast<T>(d), mask);
}

/// Unfused step 4: y = t + residual.
template <class T, int BLOCK>
void residual_add_program(tl::Ptr<T> in, tl::Ptr<T> residual, tl::Ptr<T> y, tl::Scalar<tl::i32> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto at = row * n + cols;
  tl::store(y + at, tl::cast<T>(tl::cast<tl::f32>(tl::load(in + at, mask)) + tl::cast<tl::f32>(tl::load(residual + at, mask))), mask);
}

/// Dropout probability, seed and offset of one epilogue call.
struct DropoutParams {
  float p = 0.1f;            ///< probability of dropping an element, in [0, 1)
  std::int64_t seed = 0;     ///< Philox key
  std::int64_t offset = 0;   ///< counter base: advance it by rows x cols between calls that need fresh numbers
};

namespace detail {
inline void check_epilogue(const char* kernel, std::int64_t cols, const DropoutParams& d) {
  if (cols > kEpilogueMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the one-program row limit of " + std::to_string(kEpilogueMaxCols));
  if (!(d.p >= 0.f && d.p < 1.f))
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument p: expected a dropout probability in [0, 1), got " +
                                std::to_string(d.p));
}
}  // namespace detail

/// y = dropout(gelu(x + bias), p) + residual in one kernel (rows x cols, contiguous rows).
template <class Buf>
void epilogue(Buf& x, Buf& bias, Buf& residual, Buf& y, std::int64_t rows, std::int64_t cols, const DropoutParams& d,
              const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse epilogue: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  check_matrix("epilogue", "x", x, rows, cols);
  check_matrix("epilogue", "residual", residual, rows, cols);
  check_matrix("epilogue", "y", y, rows, cols);
  check_vector("epilogue", "bias", bias, cols);
  detail::check_epilogue("epilogue", cols, d);
  with_block<kEpilogueMaxCols>(cols, [&]<int BLOCK>() {
    row_kernel<&epilogue_program<T, BLOCK>, BLOCK>("epilogue", {"x", "bias", "residual", "y", "n", "p", "seed", "offset"})
        .launch(LaunchConfig({rows}, opt.backend, opt.stream), x, bias, residual, y, cols, d.p, d.seed, d.offset);
  });
}

/// The same chain as four kernels, with `t1` and `t2` (rows x cols each) holding the intermediates.
template <class Buf>
void epilogue_unfused(Buf& x, Buf& bias, Buf& residual, Buf& y, Buf& t1, Buf& t2, std::int64_t rows, std::int64_t cols,
                      const DropoutParams& d, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse epilogue_unfused: elements must be float, half or bfloat16.");
  for (auto [name, buf] : {std::pair{"x", &x}, std::pair{"residual", &residual}, std::pair{"y", &y},
                           std::pair{"t1", &t1}, std::pair{"t2", &t2}})
    check_matrix("epilogue_unfused", name, *buf, rows, cols);
  check_vector("epilogue_unfused", "bias", bias, cols);
  detail::check_epilogue("epilogue_unfused", cols, d);
  const LaunchConfig cfg({rows}, opt.backend, opt.stream);
  with_block<kEpilogueMaxCols>(cols, [&]<int BLOCK>() {
    row_kernel<&bias_add_program<T, BLOCK>, BLOCK>("bias_add", {"x", "bias", "t", "n"}).launch(cfg, x, bias, t1, cols);
    row_kernel<&gelu_program<T, BLOCK>, BLOCK>("gelu", {"in", "out", "n"}).launch(cfg, t1, t2, cols);
    row_kernel<&dropout_program<T, BLOCK>, BLOCK>("dropout", {"in", "out", "n", "p", "seed", "offset"})
        .launch(cfg, t2, t1, cols, d.p, d.seed, d.offset);
    row_kernel<&residual_add_program<T, BLOCK>, BLOCK>("residual_add", {"in", "residual", "y", "n"})
        .launch(cfg, t1, residual, y, cols);
  });
}

}  // namespace tilefuse::kernels

namespace tilefuse::reference {

/// The epilogue in float64, with the same Philox draws: dropout(gelu(x + bias), p) + residual.
template <class H>
std::vector<double> epilogue(std::span<const H> x, std::span<const H> bias, std::span<const H> residual,
                             std::int64_t rows, std::int64_t cols, float p, std::int64_t seed, std::int64_t offset) {
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      const double h = static_cast<double>(to_float(x[i])) + to_float(bias[c]);
      const double g = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
      const bool keep = philox_uniform(static_cast<std::uint64_t>(seed), offset + i) >= p;
      y[i] = (keep ? g / (1.0 - static_cast<double>(p)) : 0.0) + to_float(residual[i]);
    }
  return y;
}

}  // namespace tilefuse::reference
