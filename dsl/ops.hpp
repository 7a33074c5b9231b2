// The DSL's functions on tiles: program geometry (program_id, num_programs, arange, scalar, full),
// elementwise math, random numbers, minimum/maximum, where, casts, reductions over a tile or across a
// thread-block cluster, and the ordering of a launch against its stream's neighbours (gdc_wait). Each appends IR through the tracing helpers of tile.hpp.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

#include "dsl/tile.hpp"

namespace tilefuse::tl {

// ---- program geometry ----

/// Id of this program along `axis` (0, 1 or 2): the row a row-wise kernel works on.
inline Scalar<i32> program_id(int axis) {
  if (axis < 0 || axis > 2) throw std::invalid_argument("tilefuse: program_id axis must be 0, 1 or 2, got " + std::to_string(axis));
  const ir::ValueType type = Scalar<i32>::type();
  return Scalar<i32>(detail::emit(ir::Op::program_id, &type, {}, ir::attr::Axis{axis}));
}

/// Number of programs launched along `axis` (0, 1 or 2).
inline Scalar<i32> num_programs(int axis) {
  if (axis < 0 || axis > 2) throw std::invalid_argument("tilefuse: num_programs axis must be 0, 1 or 2, got " + std::to_string(axis));
  const ir::ValueType type = Scalar<i32>::type();
  return Scalar<i32>(detail::emit(ir::Op::num_programs, &type, {}, ir::attr::Axis{axis}));
}

/// The i32 tile 0, 1, ..., N-1. N must be a power of two; mask the tail of a ragged row.
template <int N>
Tile<i32, N> arange() {
  static_assert(N > 0 && (N & (N - 1)) == 0,
                "tilefuse: arange<N> needs N to be a power of two; round up and mask the tail (cols < n).");
  static_assert(N <= (1 << 20), "tilefuse: arange<N> is limited to 2^20 elements.");
  const ir::ValueType type = Tile<i32, N>::type();
  return Tile<i32, N>(detail::emit(ir::Op::arange, &type, {}));
}

/// The scalar constant `value` of dtype T (an initial value for a loop-carried scalar, say).
template <class T, Literal V>
Scalar<T> scalar(const V& value) {
  return detail::constant<T>(value);
}

/// A tile of N elements of dtype T, each `value` (a number, tl::inf, or a scalar of dtype T).
template <class T, int N, Operand V>
Tile<T, N> full(const V& value) {
  static_assert(N > 0 && (N & (N - 1)) == 0, "tilefuse: full<T, N> needs N to be a power of two, like arange.");
  if constexpr (TileValue<V>) {
    static_assert(std::is_same_v<V, Scalar<T>>, "tilefuse: full<T, N>(x) takes a number or a scalar of dtype T.");
    return detail::broadcast<Shape<N>>(value);
  } else {
    return detail::broadcast<Shape<N>>(detail::constant<T>(value));
  }
}

// ---- elementwise math ----

#define TILEFUSE_FLOAT_UNARY(fn, opcode, doc)                                                 \
  /** doc */                                                                                  \
  template <class T, int... N>                                                                \
  Tile<T, N...> fn(const Tile<T, N...>& x) {                                                  \
    static_assert(is_float_tag<T>, "tilefuse: " #fn " takes a float tile (f32, f16 or bf16); " \
                                   "cast integers with tl::cast<tl::f32>(x).");               \
    return detail::unary<ir::Op::opcode>(x);                                                  \
  }
TILEFUSE_FLOAT_UNARY(exp, exp, e to the power x)
TILEFUSE_FLOAT_UNARY(exp2, exp2, 2 to the power x)
TILEFUSE_FLOAT_UNARY(log, log, natural logarithm)
TILEFUSE_FLOAT_UNARY(sqrt, sqrt, square root)
TILEFUSE_FLOAT_UNARY(rsqrt, rsqrt, reciprocal square root)
TILEFUSE_FLOAT_UNARY(erf, erf, the error function)
TILEFUSE_FLOAT_UNARY(gelu, gelu, the GELU x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 within 2e-7 max(1, |x|) (docs/dsl.md))
#undef TILEFUSE_FLOAT_UNARY

/// Uniform random f32 in [0, 1) for each offset: Philox4x32-10 keyed by `seed` with the offset as counter
/// (as Triton's tl.rand), so a (seed, offset) pair always gives the same number, on the GPU and in the
/// interpreter. Use distinct offsets for distinct elements (row * n + cols, plus a per-call base).
template <class S, class O, int... N>
Tile<f32, N...> rand(const Scalar<S>& seed, const Tile<O, N...>& offsets) {
  static_assert(is_int_tag<S>, "tilefuse: rand's seed is an i32 or i64 scalar.");
  static_assert(is_int_tag<O>, "tilefuse: rand's offsets are i32 or i64.");
  const ir::ValueType type = Tile<f32, N...>::type();
  return Tile<f32, N...>(detail::emit(ir::Op::rand, &type, {seed.id(), offsets.id()}));
}

/// Absolute value.
template <class T, int... N>
Tile<T, N...> abs(const Tile<T, N...>& x) {
  static_assert(is_float_tag<T> || is_int_tag<T>, "tilefuse: abs takes numbers.");
  return detail::unary<ir::Op::abs>(x);
}

/// Elementwise minimum (a NaN operand yields the other one, as fminf does).
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto minimum(const A& a, const B& b) { return detail::binary<ir::Op::minimum, false>(a, b); }
/// Elementwise maximum (a NaN operand yields the other one, as fmaxf does).
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto maximum(const A& a, const B& b) { return detail::binary<ir::Op::maximum, false>(a, b); }

/// a where cond is true, b elsewhere; a and b may be tiles or literals, broadcast to cond's shape.
template <class C, int... N, Operand A, Operand B>
auto where(const Tile<C, N...>& cond, const A& a, const B& b) {
  static_assert(std::is_same_v<C, i1>, "tilefuse: where() takes a mask (a comparison result) as its condition.");
  static_assert(TileValue<A> || TileValue<B>, "tilefuse: where() needs a tile among a and b to know the dtype.");
  using T = typename detail::operand_dtype<A, B>::type;
  static_assert(!std::is_void_v<T>, "tilefuse: where(cond, a, b) needs a and b of one dtype; cast one of them.");
  using SAB = detail::combined_shape<typename detail::shape_of<A>::type, typename detail::shape_of<B>::type>;
  static_assert(detail::shapes_combine<typename detail::shape_of<A>::type, typename detail::shape_of<B>::type> &&
                    detail::shapes_combine<Shape<N...>, SAB>,
                "tilefuse: where(cond, a, b) needs equal shapes or scalars.");
  using S = detail::combined_shape<Shape<N...>, SAB>;
  auto c = detail::broadcast<S>(cond);
  auto x = detail::broadcast<S>(detail::convert<T>(detail::as_tile<T>(a)));
  auto y = detail::broadcast<S>(detail::convert<T>(detail::as_tile<T>(b)));
  using R = detail::tile_of_t<T, S>;
  const ir::ValueType type = R::type();
  return R(detail::emit(ir::Op::select, &type, {c.id(), x.id(), y.id()}));
}

/// x converted to dtype To (f32, f16, bf16, i32, i64): floats round to nearest, floats to ints truncate.
template <class To, class T, int... N>
Tile<To, N...> cast(const Tile<T, N...>& x) {
  static_assert(is_float_tag<To> || is_int_tag<To>, "tilefuse: cast<To> converts to f32, f16, bf16, i32 or i64.");
  static_assert(is_float_tag<T> || is_int_tag<T> || std::is_same_v<T, i1>, "tilefuse: pointers cannot be cast.");
  return detail::convert<To>(x);
}

// ---- reductions ----

/// Largest element of a 1D tile.
template <class T, int... N>
Scalar<T> max(const Tile<T, N...>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<ir::Op::reduce_max>(x, loc);
}
/// Smallest element of a 1D tile.
template <class T, int... N>
Scalar<T> min(const Tile<T, N...>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<ir::Op::reduce_min>(x, loc);
}
/// Sum of the elements of a 1D tile (f16 and bf16 sum in f32 and round once).
template <class T, int... N>
Scalar<T> sum(const Tile<T, N...>& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<ir::Op::reduce_sum>(x, loc);
}

/// Largest of `x` over the programs of this program's thread-block cluster (KernelOptions::cluster_size
/// programs along axis 0): every program of the cluster gets the same value. Every program must reach
/// each cluster reduction as many times and in the same order: one inside for_range needs the loop's
/// bounds to be the same in every program of the cluster (the interpreter reports programs that part).
inline Scalar<f32> cluster_max(const Scalar<f32>& x, const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Scalar<f32>::type();
  return Scalar<f32>(detail::emit(ir::Op::cluster_max, &type, {x.id()}, {}, detail::site(loc)));
}
/// Sum of `x` over the programs of this program's cluster (see cluster_max).
inline Scalar<f32> cluster_sum(const Scalar<f32>& x, const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Scalar<f32>::type();
  return Scalar<f32>(detail::emit(ir::Op::cluster_sum, &type, {x.id()}, {}, detail::site(loc)));
}

// ---- ordering against the stream's neighbouring launches (programmatic dependent launch) ----

/// Waits until the kernel launched before this one on the stream has finished and its writes are
/// visible (Triton's gdc_wait). Only a launch with LaunchConfig::pdl may start before that kernel ends;
/// its program must reach gdc_wait before it reads anything the earlier kernel writes or writes
/// anything it reads. Everything the program does before gdc_wait overlaps the earlier kernel's last
/// programs. A no-op on a launch without pdl, before sm_90, and in the interpreter.
inline void gdc_wait(const std::source_location& loc = std::source_location::current()) {
  detail::emit(ir::Op::gdc_wait, nullptr, {}, {}, detail::site(loc));
}

/// Lets the kernel launched after this one on the stream with LaunchConfig::pdl start its programs
/// once every program of this one has reached this point (Triton's gdc_launch_dependents); without it,
/// they start as this kernel's programs finish. Those programs still wait at their gdc_wait for this
/// kernel to end, so calling it early is safe: it only lets the next kernel fill the SMs this one's
/// last programs leave idle. A no-op where gdc_wait is.
inline void gdc_launch_dependents(const std::source_location& loc = std::source_location::current()) {
  detail::emit(ir::Op::gdc_launch_dependents, nullptr, {}, {}, detail::site(loc));
}

}  // namespace tilefuse::tl
