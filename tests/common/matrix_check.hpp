// The matrix tests' shared pieces: the float64 references (kernels/matrix_reference.hpp) and a program
// with every 2D operation, run on the GPU and in the interpreter.
#pragma once

#include "dsl/tl.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/matmul/matmul.hpp"
#include "kernels/matrix_reference.hpp"
#include "kernels/reference.hpp"

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

// A copy of rows of 16 halves between matrices with a row stride: each row starts wherever stride puts it,
// so runs are 16-byte aligned only when the stride is a multiple of 8 (the fuzzer found them vectorized
// at an odd stride).
inline void strided_copy_program(tilefuse::tl::Ptr<tilefuse::tl::f16> a, tilefuse::tl::Ptr<tilefuse::tl::f16> b,
                                 tilefuse::tl::Scalar<tilefuse::tl::i32> stride) {
  namespace t = tilefuse::tl;
  const auto rows = t::program_id(0) * 16 + t::arange<16>();
  const auto offsets = rows(t::all, t::none) * stride + t::arange<16>()(t::none, t::all);
  t::store(b + offsets, t::load(a + offsets));
}

// Every form of dot operand warpgroup MMA reads: A [M, K] loaded (K-major) or the transpose of a loaded
// [K, M] (M-major), B [K, N] loaded (N-major) or the transpose of a loaded [N, K] (K-major), and A from
// registers (a dot's own result, cast: the probabilities in attention), with rows of 16 to 128 halves (rows
// of 32 and 64 halves are wgmma's 64- and 128-byte swizzles; rows of 16 keep mma.sync). x = A B (+1 when
// Acc); y = cast(x / 8) C with C [N, N].
template <int M, int N, int K, bool TransA, bool TransB, bool Acc>
void dot_forms_program(tilefuse::tl::Ptr<tilefuse::tl::f16> a, tilefuse::tl::Ptr<tilefuse::tl::f16> b, tilefuse::tl::Ptr<tilefuse::tl::f16> c,
                       tilefuse::tl::Ptr<tilefuse::tl::f32> x, tilefuse::tl::Ptr<tilefuse::tl::f32> y) {
  namespace t = tilefuse::tl;
  const auto m = t::arange<M>(), n = t::arange<N>(), k = t::arange<K>();
  const auto A = [&] {
    if constexpr (TransA) return t::trans(t::load(a + k(t::all, t::none) * M + m(t::none, t::all)));
    else return t::load(a + m(t::all, t::none) * K + k(t::none, t::all));
  }();
  const auto B = [&] {
    if constexpr (TransB) return t::trans(t::load(b + n(t::all, t::none) * K + k(t::none, t::all)));
    else return t::load(b + k(t::all, t::none) * N + n(t::none, t::all));
  }();
  const auto ab = [&] {
    if constexpr (Acc) return t::dot(A, B, t::full<t::f32, M, N>(1.0f));
    else return t::dot(A, B);
  }();
  t::store(x + m(t::all, t::none) * N + n(t::none, t::all), ab);
  const auto C = t::load(c + n(t::all, t::none) * N + n(t::none, t::all));
  t::store(y + m(t::all, t::none) * N + n(t::none, t::all), t::dot(t::cast<t::f16>(ab * 0.125f), C));
}

}  // namespace tilefuse::test
