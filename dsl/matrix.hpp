// The DSL's 2D operations: tiles of M rows and N columns filled with a value, reductions along an axis,
// transposition and the matrix product on tensor cores (dot), with shapes and dtypes checked at compile
// time. Elementwise operations, where, loads and stores take 2D tiles as they take 1D ones (ops.hpp,
// memory.hpp); a 1D tile joins them as a column x(tl::all, tl::none) or a row x(tl::none, tl::all).
#pragma once

#include <source_location>
#include <type_traits>

#include "dsl/tile.hpp"

namespace tilefuse::tl {

/// A tile of M x N elements of dtype T, each `value` (a number, tl::inf, or a scalar of dtype T).
template <class T, int M, int N, Operand V>
Tile<T, M, N> full(const V& value) {
  if constexpr (TileValue<V>) {
    static_assert(std::is_same_v<V, Scalar<T>>, "tilefuse: full<T, M, N>(x) takes a number or a scalar of dtype T.");
    return detail::broadcast<Shape<M, N>>(value);
  } else {
    return detail::broadcast<Shape<M, N>>(detail::constant<T>(value));
  }
}

/// A tile of M x N zeros of dtype T (the usual initial accumulator of a dot).
template <class T, int M, int N>
Tile<T, M, N> zeros() {
  return full<T, M, N>(0);
}

namespace detail {
template <ir::Op op, int Axis, class T, int M, int N>
Tile<T, (Axis == 0 ? N : M)> reduce_along(const Tile<T, M, N>& x, const std::source_location& loc) {
  static_assert(Axis == 0 || Axis == 1, "tilefuse: a 2D tile reduces along axis 0 (down its columns) or 1 (along its rows).");
  static_assert(!is_ptr_tag<T>::value && !std::is_same_v<T, i1>, "tilefuse: only numbers can be reduced.");
  using R = Tile<T, (Axis == 0 ? N : M)>;
  const ir::ValueType type = R::type();
  return R(emit(op, &type, {x.id()}, ir::attr::Axis{Axis}, site(loc)));
}
}  // namespace detail

/// Largest element along `Axis` of a 2D tile: tl::max<1>(x) is the 1D tile of each row's maximum
/// (Triton's tl.max(x, axis=1)), tl::max<0>(x) each column's.
template <int Axis, class T, int M, int N>
Tile<T, (Axis == 0 ? N : M)> max(const Tile<T, M, N>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce_along<ir::Op::max_along, Axis>(x, loc);
}
/// Smallest element along `Axis` of a 2D tile.
template <int Axis, class T, int M, int N>
Tile<T, (Axis == 0 ? N : M)> min(const Tile<T, M, N>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce_along<ir::Op::min_along, Axis>(x, loc);
}
/// Sum along `Axis` of a 2D tile (f16 and bf16 sum in f32 and round once).
template <int Axis, class T, int M, int N>
Tile<T, (Axis == 0 ? N : M)> sum(const Tile<T, M, N>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce_along<ir::Op::sum_along, Axis>(x, loc);
}

/// The transpose of a 2D tile: element (i, j) of the result is x's (j, i). Feeding a dot, it costs nothing:
/// the tensor cores read the operand either way.
template <class T, int M, int N>
Tile<T, N, M> trans(const Tile<T, M, N>& x) {
  const ir::ValueType type = Tile<T, N, M>::type();
  return Tile<T, N, M>(detail::emit(ir::Op::trans, &type, {x.id()}));
}

/// acc + a b: the matrix product of a [M, K] and b [K, N] (both f16 or both bf16) added to the f32
/// accumulator acc [M, N], on tensor cores: products exact, sums in f32 (Triton's tl.dot(a, b, acc)).
/// M must be a multiple of 16, N of 8 and K of 16 (the shape of one tensor-core instruction).
template <class T, int M, int K, class U, int K2, int N>
Tile<f32, M, N> dot(const Tile<T, M, K>& a, const Tile<U, K2, N>& b, const Tile<f32, M, N>& acc,
                    const std::source_location& loc = std::source_location::current()) {
  static_assert(std::is_same_v<T, f16> || std::is_same_v<T, bf16>,
                "tilefuse: dot multiplies f16 or bf16 tiles (accumulating in f32); cast the operands with "
                "tl::cast<tl::bf16>(x) first.");
  static_assert(std::is_same_v<T, U>, "tilefuse: dot's operands must have one dtype (both f16 or both bf16).");
  static_assert(K == K2, "tilefuse: dot(a, b) needs a's columns to equal b's rows (a is [M, K], b is [K, N]).");
  static_assert(M % 16 == 0 && N % 8 == 0 && K % 16 == 0,
                "tilefuse: dot needs M a multiple of 16, N of 8 and K of 16 (one tensor-core instruction is "
                "m16n8k16); pad the tiles and mask the edges.");
  const ir::ValueType type = Tile<f32, M, N>::type();
  return Tile<f32, M, N>(detail::emit(ir::Op::dot, &type, {a.id(), b.id(), acc.id()}, {}, detail::site(loc)));
}

/// The matrix product a b in f32 (dot with a zero accumulator).
template <class T, int M, int K, class U, int K2, int N>
Tile<f32, M, N> dot(const Tile<T, M, K>& a, const Tile<U, K2, N>& b,
                    const std::source_location& loc = std::source_location::current()) {
  return dot(a, b, zeros<f32, M, N>(), loc);
}

}  // namespace tilefuse::tl
