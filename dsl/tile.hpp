// Tile values of the DSL. A Tile carries its dtype and static shape in its C++ type and, at run time,
// only the id of the IR value it names: every operation appends one instruction to the function being
// traced, so expression templates stop here and everything after this works on plain IR.
#pragma once

#include <array>
#include <limits>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backend/ir/ir.hpp"
#include "dsl/dtype.hpp"

namespace tilefuse::tl {

namespace detail {

/// The function being traced on this thread; null outside tracing.
inline thread_local ir::Function* tracing = nullptr;
/// The block new instructions go to: a loop body while one is traced, else (null) the function body.
inline thread_local std::vector<ir::Instr>* tracing_block = nullptr;

/// The function being traced; throws when a tile operation runs outside a kernel trace.
inline ir::Function& traced() {
  if (!tracing)
    throw std::logic_error(
        "tilefuse: tile operations run only while tilefuse traces a kernel (inside the program function given to "
        "tilefuse::Kernel)");
  return *tracing;
}

/// "file:line" of a DSL call site, for the comments of the generated code.
inline std::string site(const std::source_location& loc) {
  std::string file = loc.file_name();
  const auto slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(loc.line());
}

/// Appends an instruction and returns its result id (or -1 for none).
inline ir::ValueId emit(ir::Op op, const ir::ValueType* type, std::vector<ir::ValueId> args, ir::Attribute attr = {},
                        std::string where = {}) {
  ir::Instr in;
  in.op = op;
  in.args = std::move(args);
  in.attr = attr;
  in.where = std::move(where);
  ir::Function& fn = traced();
  in.result = type ? fn.add_value(*type) : -1;
  const ir::ValueId id = in.result;
  (tracing_block ? *tracing_block : fn.body).push_back(std::move(in));
  return id;
}

}  // namespace detail

/// Static shape of a tile as a type: Shape<> for scalars, Shape<N> for 1D tiles.
template <int... N> struct Shape {};

/// A tile of dtype T and static shape N... (no N: a scalar, uniform across the program).
template <class T, int... N>
class Tile {
  static_assert(sizeof...(N) <= 1,
                "tilefuse: only scalars and 1D tiles are supported so far; 2D tiles arrive with dot.");
  static_assert(((N > 0) && ...), "tilefuse: every tile dimension must be positive.");

 public:
  using dtype = T;                ///< element tag (f32, i32, ptr<f16>, ...)
  using shape = Shape<N...>;      ///< static shape as a type
  static constexpr int rank = sizeof...(N);  ///< 0 for scalars, 1 for 1D tiles

  /// Names an existing IR value; made by the DSL's operations, not by users.
  explicit Tile(ir::ValueId id) : id_(id) {}
  /// The IR value this tile names.
  ir::ValueId id() const { return id_; }

  /// IR type of this tile.
  static ir::ValueType type() {
    ir::ValueType t;
    t.dtype = T::id;
    t.pointer = is_ptr_tag<T>::value;
    t.rank = rank;
    int i = 0;
    ((t.dims[i++] = N), ...);
    return t;
  }

 private:
  ir::ValueId id_;
};

/// A scalar of dtype T: program ids, scalar kernel parameters, reductions.
template <class T> using Scalar = Tile<T>;
/// A scalar pointer to elements of dtype T: the type of a pointer kernel parameter.
template <class T> using Ptr = Tile<ptr<T>>;

template <class X> struct is_tile : std::false_type {};
template <class T, int... N> struct is_tile<Tile<T, N...>> : std::true_type {};
/// True for tile types.
template <class X> concept TileValue = is_tile<std::remove_cvref_t<X>>::value;

/// Infinity as a literal: `-tl::inf` is the natural `other` of a masked load feeding a max.
struct Inf {
  bool negative = false;
  /// Negative infinity.
  constexpr Inf operator-() const { return Inf{!negative}; }
  /// The value as a double.
  constexpr double value() const {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
};
/// Positive infinity; negate for -inf.
inline constexpr Inf inf{};

/// C++ numbers and tl::inf, which combine with tiles as constants of the tile's dtype.
template <class X> concept Literal = std::is_arithmetic_v<std::remove_cvref_t<X>> || std::is_same_v<std::remove_cvref_t<X>, Inf>;
/// Anything a tile operation accepts as an operand.
template <class X> concept Operand = TileValue<X> || Literal<X>;

namespace detail {

template <class T, class S> struct tile_of;
template <class T, int... N> struct tile_of<T, Shape<N...>> { using type = Tile<T, N...>; };
/// The tile of dtype T and shape S.
template <class T, class S> using tile_of_t = typename tile_of<T, S>::type;

template <class S> struct shape_rank;
template <int... N> struct shape_rank<Shape<N...>> : std::integral_constant<int, sizeof...(N)> {};

/// Whether shapes A and B combine: equal, or one of them a scalar.
template <class A, class B>
inline constexpr bool shapes_combine = std::is_same_v<A, B> || shape_rank<A>::value == 0 || shape_rank<B>::value == 0;
/// The combined shape of A and B (the non-scalar one).
template <class A, class B> using combined_shape = std::conditional_t<shape_rank<A>::value == 0, B, A>;

/// The dtype two operand dtypes combine to: equal dtypes, or integers widened to the wider one.
template <class A, class B>
using combined_dtype = std::conditional_t<std::is_same_v<A, B>, A,
                                          std::conditional_t<is_int_tag<A> && is_int_tag<B>, i64, void>>;

/// A literal as a scalar constant of dtype T.
template <class T, class L>
Scalar<T> constant(const L& lit) {
  using X = std::remove_cvref_t<L>;
  static_assert(!is_ptr_tag<T>::value, "tilefuse: a number cannot be used as a pointer; add it to one instead.");
  static_assert(!std::is_same_v<T, i1> || std::is_same_v<X, bool>,
                "tilefuse: masks combine only with other masks or with true/false.");
  static_assert(!is_int_tag<T> || std::is_integral_v<X>,
                "tilefuse: a floating-point literal (or tl::inf) cannot combine with an integer tile; cast the tile "
                "with tl::cast<tl::f32>(...) first.");
  double v;
  if constexpr (std::is_same_v<X, Inf>) v = lit.value();
  else v = static_cast<double>(lit);
  const ir::ValueType type = Scalar<T>::type();
  return Scalar<T>(emit(ir::Op::constant, &type, {}, ir::attr::Constant{v}));
}

/// The value of tile `x` with dtype To (a cast instruction when it differs).
template <class To, class T, int... N>
Tile<To, N...> convert(const Tile<T, N...>& x) {
  if constexpr (std::is_same_v<T, To>) {
    return x;
  } else {
    const ir::ValueType type = Tile<To, N...>::type();
    return Tile<To, N...>(emit(ir::Op::cast, &type, {x.id()}));
  }
}

/// The value of x broadcast to shape S (a splat instruction for scalars).
template <class S, class T, int... N>
tile_of_t<T, S> broadcast(const Tile<T, N...>& x) {
  using R = tile_of_t<T, S>;
  if constexpr (std::is_same_v<Shape<N...>, S>) {
    return x;
  } else {
    const ir::ValueType type = R::type();
    return R(emit(ir::Op::splat, &type, {x.id()}));
  }
}

/// An operand as a tile: tiles as they are, literals as constants of dtype T.
template <class T, class X>
auto as_tile(const X& x) {
  if constexpr (TileValue<X>) return x;
  else return constant<T>(x);
}

/// The dtype a binary operation between A and B works in (literals take the tile's dtype).
template <class A, class B> struct operand_dtype;
template <class A, class B> requires TileValue<A> && TileValue<B>
struct operand_dtype<A, B> { using type = combined_dtype<typename A::dtype, typename B::dtype>; };
template <class A, class B> requires TileValue<A> && (!TileValue<B>)
struct operand_dtype<A, B> { using type = typename A::dtype; };
template <class A, class B> requires (!TileValue<A>) && TileValue<B>
struct operand_dtype<A, B> { using type = typename B::dtype; };

template <class X> struct shape_of { using type = Shape<>; };
template <TileValue X> struct shape_of<X> { using type = typename X::shape; };

/// Elementwise binary op on two operands (tiles or literals) with broadcasting; Cmp gives a mask.
template <ir::Op op, bool Cmp, class A, class B>
auto binary(const A& a, const B& b) {
  using SA = typename shape_of<A>::type;
  using SB = typename shape_of<B>::type;
  static_assert(shapes_combine<SA, SB>,
                "tilefuse: the tile shapes differ; elementwise operations need equal shapes or a scalar operand.");
  using T = typename operand_dtype<A, B>::type;
  static_assert(!std::is_void_v<T>,
                "tilefuse: the operands have different dtypes; convert one with tl::cast<...>(x) first.");
  static_assert(!is_ptr_tag<T>::value,
                "tilefuse: pointers only support adding an integer offset (ptr + offsets).");
  using S = combined_shape<SA, SB>;
  auto x = broadcast<S>(convert<T>(as_tile<T>(a)));
  auto y = broadcast<S>(convert<T>(as_tile<T>(b)));
  using R = tile_of_t<std::conditional_t<Cmp, i1, T>, S>;
  const ir::ValueType type = R::type();
  return R(emit(op, &type, {x.id(), y.id()}));
}

/// Pointer tile (or scalar pointer) plus integer offsets, broadcast to a common shape.
template <class P, class O>
auto pointer_add(const P& p, const O& off) {
  using T = typename P::dtype;
  using SP = typename shape_of<P>::type;
  using SO = typename shape_of<O>::type;
  static_assert(shapes_combine<SP, SO>, "tilefuse: the pointer and offset tiles have different shapes.");
  if constexpr (TileValue<O>) {
    static_assert(is_int_tag<typename O::dtype>,
                  "tilefuse: a pointer can only be advanced by an integer (i32 or i64) offset.");
  } else {
    static_assert(std::is_integral_v<O>, "tilefuse: a pointer can only be advanced by an integer offset.");
  }
  using S = combined_shape<SP, SO>;
  auto base = broadcast<S>(p);
  auto offset = broadcast<S>(as_tile<i32>(off));
  using R = tile_of_t<T, S>;
  const ir::ValueType type = R::type();
  return R(emit(ir::Op::ptr_add, &type, {base.id(), offset.id()}));
}

/// Elementwise unary op on a tile.
template <ir::Op op, class T, int... N>
Tile<T, N...> unary(const Tile<T, N...>& x) {
  const ir::ValueType type = Tile<T, N...>::type();
  return Tile<T, N...>(emit(op, &type, {x.id()}));
}

/// Reduction of a 1D tile to a scalar.
template <ir::Op op, class T, int... N>
Scalar<T> reduce(const Tile<T, N...>& x, const std::source_location& loc) {
  static_assert(sizeof...(N) == 1, "tilefuse: max/min/sum reduce a 1D tile; this operand is already a scalar.");
  static_assert(!is_ptr_tag<T>::value && !std::is_same_v<T, i1>, "tilefuse: only numbers can be reduced.");
  const ir::ValueType type = Scalar<T>::type();
  return Scalar<T>(emit(op, &type, {x.id()}, {}, site(loc)));
}

template <class X> inline constexpr bool is_pointer_operand = false;
template <TileValue X> inline constexpr bool is_pointer_operand<X> = is_ptr_tag<typename X::dtype>::value;

}  // namespace detail

// ---- arithmetic and comparison operators (at least one operand is a tile) ----

/// a + b elementwise; a pointer plus integer offsets gives pointers.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator+(const A& a, const B& b) {
  if constexpr (detail::is_pointer_operand<A>) return detail::pointer_add(a, b);
  else if constexpr (detail::is_pointer_operand<B>) return detail::pointer_add(b, a);
  else return detail::binary<ir::Op::add, false>(a, b);
}
/// a - b elementwise.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator-(const A& a, const B& b) { return detail::binary<ir::Op::sub, false>(a, b); }
/// a * b elementwise.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator*(const A& a, const B& b) { return detail::binary<ir::Op::mul, false>(a, b); }
/// a / b elementwise (integers truncate toward zero).
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator/(const A& a, const B& b) { return detail::binary<ir::Op::div, false>(a, b); }
/// a % b elementwise (integers only, sign of a as in C++).
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator%(const A& a, const B& b) {
  static_assert(!is_float_tag<typename detail::operand_dtype<A, B>::type>, "tilefuse: % takes integers.");
  return detail::binary<ir::Op::rem, false>(a, b);
}
/// a < b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator<(const A& a, const B& b) { return detail::binary<ir::Op::lt, true>(a, b); }
/// a <= b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator<=(const A& a, const B& b) { return detail::binary<ir::Op::le, true>(a, b); }
/// a > b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator>(const A& a, const B& b) { return detail::binary<ir::Op::gt, true>(a, b); }
/// a >= b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator>=(const A& a, const B& b) { return detail::binary<ir::Op::ge, true>(a, b); }
/// a == b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator==(const A& a, const B& b) { return detail::binary<ir::Op::eq, true>(a, b); }
/// a != b elementwise, giving a mask.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator!=(const A& a, const B& b) { return detail::binary<ir::Op::ne, true>(a, b); }

/// Mask and: true where both masks are.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator&(const A& a, const B& b) {
  static_assert(std::is_same_v<typename detail::operand_dtype<A, B>::type, i1>, "tilefuse: & combines masks (i1 tiles).");
  return detail::binary<ir::Op::logical_and, false>(a, b);
}
/// Mask or: true where either mask is.
template <Operand A, Operand B> requires (TileValue<A> || TileValue<B>)
auto operator|(const A& a, const B& b) {
  static_assert(std::is_same_v<typename detail::operand_dtype<A, B>::type, i1>, "tilefuse: | combines masks (i1 tiles).");
  return detail::binary<ir::Op::logical_or, false>(a, b);
}
/// Mask not.
template <class T, int... N>
Tile<T, N...> operator!(const Tile<T, N...>& x) {
  static_assert(std::is_same_v<T, i1>, "tilefuse: ! negates masks (i1 tiles); use -x for numbers.");
  return detail::unary<ir::Op::logical_not>(x);
}
/// Negation.
template <class T, int... N>
Tile<T, N...> operator-(const Tile<T, N...>& x) {
  static_assert(is_float_tag<T> || is_int_tag<T>, "tilefuse: unary minus takes numbers.");
  return detail::unary<ir::Op::neg>(x);
}

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
/// each cluster reduction, so they cannot be inside loops.
inline Scalar<f32> cluster_max(const Scalar<f32>& x, const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Scalar<f32>::type();
  return Scalar<f32>(detail::emit(ir::Op::cluster_max, &type, {x.id()}, {}, detail::site(loc)));
}
/// Sum of `x` over the programs of this program's cluster (see cluster_max).
inline Scalar<f32> cluster_sum(const Scalar<f32>& x, const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Scalar<f32>::type();
  return Scalar<f32>(detail::emit(ir::Op::cluster_sum, &type, {x.id()}, {}, detail::site(loc)));
}

// ---- memory ----

/// How a load or store asks the caches to treat its lines, as Triton's cache_modifier: Cache::streaming
/// for data touched once (a row streamed through a kernel), so that what is reused (a weight vector)
/// stays cached; Cache::l2_only to skip L1; Cache::normal otherwise. The interpreter ignores it.
using Cache = ir::CacheHint;

/// Loads the elements `ptrs` point to where `mask` is true and `other` elsewhere (0 when not given).
template <class T, int... N, class M, int... K, Operand O>
Tile<T, N...> load(const Tile<ptr<T>, N...>& ptrs, const Tile<M, K...>& mask, const O& other, Cache cache = Cache::normal,
                   const std::source_location& loc = std::source_location::current()) {
  static_assert(std::is_same_v<M, i1>, "tilefuse: load's mask must be a comparison result (an i1 tile).");
  static_assert(detail::shapes_combine<Shape<N...>, Shape<K...>> && sizeof...(K) <= sizeof...(N),
                "tilefuse: load's mask must have the pointers' shape (or be a scalar).");
  if constexpr (TileValue<O>)
    static_assert(std::is_same_v<typename O::dtype, T> && sizeof...(N) >= O::rank,
                  "tilefuse: load's `other` must have the loaded dtype and shape (or be a scalar or a number).");
  auto m = detail::broadcast<Shape<N...>>(mask);
  auto o = detail::broadcast<Shape<N...>>(detail::as_tile<T>(other));
  const ir::ValueType type = Tile<T, N...>::type();
  return Tile<T, N...>(detail::emit(ir::Op::load, &type, {ptrs.id(), m.id(), o.id()}, ir::attr::Memory{cache},
                                    detail::site(loc)));
}

/// Loads where `mask` is true and 0 elsewhere.
template <class T, int... N, class M, int... K>
Tile<T, N...> load(const Tile<ptr<T>, N...>& ptrs, const Tile<M, K...>& mask, Cache cache = Cache::normal,
                   const std::source_location& loc = std::source_location::current()) {
  if constexpr (std::is_same_v<T, i1>) return load(ptrs, mask, false, cache, loc);
  else return load(ptrs, mask, 0, cache, loc);
}

/// Loads every element `ptrs` point to (no mask: each must be in bounds).
template <class T, int... N>
Tile<T, N...> load(const Tile<ptr<T>, N...>& ptrs, Cache cache = Cache::normal,
                   const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Tile<T, N...>::type();
  return Tile<T, N...>(detail::emit(ir::Op::load, &type, {ptrs.id()}, ir::attr::Memory{cache}, detail::site(loc)));
}

namespace detail {
template <class T, int... N, class V>
auto store_value(const V& value) {
  if constexpr (TileValue<V>) {
    static_assert(std::is_same_v<typename V::dtype, T>,
                  "tilefuse: store's value has a different dtype from the pointer's element type; convert it with "
                  "tl::cast<...>(value) first.");
    static_assert(V::rank <= sizeof...(N), "tilefuse: store writes a tile through a scalar pointer; give a pointer tile.");
    static_assert(shapes_combine<Shape<N...>, typename V::shape>, "tilefuse: store's value and pointers differ in shape.");
  }
  return broadcast<Shape<N...>>(as_tile<T>(value));
}
}  // namespace detail

/// Stores `value` where `mask` is true.
template <class T, int... N, Operand V, class M, int... K>
void store(const Tile<ptr<T>, N...>& ptrs, const V& value, const Tile<M, K...>& mask, Cache cache = Cache::normal,
           const std::source_location& loc = std::source_location::current()) {
  static_assert(std::is_same_v<M, i1>, "tilefuse: store's mask must be a comparison result (an i1 tile).");
  static_assert(detail::shapes_combine<Shape<N...>, Shape<K...>> && sizeof...(K) <= sizeof...(N),
                "tilefuse: store's mask must have the pointers' shape (or be a scalar).");
  auto v = detail::store_value<T, N...>(value);
  auto m = detail::broadcast<Shape<N...>>(mask);
  detail::emit(ir::Op::store, nullptr, {ptrs.id(), v.id(), m.id()}, ir::attr::Memory{cache}, detail::site(loc));
}

/// Stores `value` everywhere `ptrs` point (no mask).
template <class T, int... N, Operand V>
void store(const Tile<ptr<T>, N...>& ptrs, const V& value, Cache cache = Cache::normal,
           const std::source_location& loc = std::source_location::current()) {
  auto v = detail::store_value<T, N...>(value);
  detail::emit(ir::Op::store, nullptr, {ptrs.id(), v.id()}, ir::attr::Memory{cache}, detail::site(loc));
}

}  // namespace tilefuse::tl
