// The fused elementwise epilogue's tile programs: y = dropout(gelu(x + bias)) + residual as one program
// per row (reads x and the residual, writes y: 3 bytes per element-byte), and the same chain as four
// programs (bias, GELU, dropout, residual: 9). Dropout draws Philox numbers from (seed, offset + element
// index), so a launch is reproducible and the GPU and the interpreter drop the same elements.
// Launchers: epilogue.hpp.
#pragma once

#include "dsl/tl.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

namespace detail {
// Index of element `cols` of row `row` in an n-column matrix, in i64 (no i32 overflow past 2^31 elements).
template <int BLOCK>
tl::Tile<tl::i64, BLOCK> flat_index(tl::Scalar<tl::i32> row, tl::Scalar<tl::i32> n, tl::Tile<tl::i32, BLOCK> cols) {
  return tl::cast<tl::i64>(row) * tl::cast<tl::i64>(n) + tl::cast<tl::i64>(cols);
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
  auto d = detail::dropout(tl::gelu(h), p, seed, offset, detail::flat_index(row, n, cols));
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
  tl::store(out + at, tl::cast<T>(tl::gelu(tl::cast<tl::f32>(tl::load(in + at, mask)))), mask);
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

}  // namespace tilefuse::kernels
