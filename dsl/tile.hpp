// Tile values of the DSL and their operators. A Tile carries its dtype and static shape in its C++ type
// and, at run time, only the id of the IR value it names: every operation appends one instruction to the
// function being traced, so expression templates stop here and everything after this works on plain IR.
// The functions on tiles are in ops.hpp, loads and stores in memory.hpp.
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

/// Static shape of a tile as a type: Shape<> for scalars, Shape<N> for 1D tiles, Shape<M, N> for 2D tiles.
template <int... N> struct Shape {};

/// Tag of tl::all in a tile's subscript: keep this dimension (Triton's `:`).
struct All {};
/// Tag of tl::none in a tile's subscript: a new dimension of 1 (Triton's `None`).
struct NewAxis {};
/// `x(tl::all, tl::none)` is Triton's x[:, None]: a 1D tile of n as a column [n, 1].
inline constexpr All all{};
/// `x(tl::none, tl::all)` is Triton's x[None, :]: a 1D tile of n as a row [1, n].
inline constexpr NewAxis none{};

template <class T, int... N> class Tile;

namespace detail {
template <int Axis, class T, int N>
Tile<T, (Axis == 1 ? N : 1), (Axis == 1 ? 1 : N)> expand(const Tile<T, N>& x);
}  // namespace detail

/// A tile of dtype T and static shape N... (no N: a scalar, uniform across the program; M, N: a 2D tile
/// of M rows and N columns).
template <class T, int... N>
class Tile {
  static_assert(sizeof...(N) <= 2, "tilefuse: tiles have at most two dimensions.");
  static_assert(((N > 0) && ...), "tilefuse: every tile dimension must be positive.");
  static_assert(sizeof...(N) < 2 || ((N > 0 && (N & (N - 1)) == 0) && ...),
                "tilefuse: 2D tile dimensions must be powers of two; round up and mask the edges.");

 public:
  using dtype = T;                ///< element tag (f32, i32, ptr<f16>, ...)
  using shape = Shape<N...>;      ///< static shape as a type
  static constexpr int rank = sizeof...(N);  ///< 0 for scalars, 1 for 1D tiles, 2 for 2D tiles

  /// Names an existing IR value; made by the DSL's operations, not by users.
  explicit Tile(ir::ValueId id) : id_(id) {}
  /// The IR value this tile names.
  ir::ValueId id() const { return id_; }

  /// A 1D tile as a column [n, 1]: `x(tl::all, tl::none)`, Triton's x[:, None]. It broadcasts along its
  /// dimension of 1 when combined with a 2D tile.
  auto operator()(All, NewAxis) const {
    static_assert(rank == 1, "tilefuse: x(tl::all, tl::none) makes a column of a 1D tile; this tile is not 1D.");
    if constexpr (rank == 1) return detail::expand<1>(*this);
  }
  /// A 1D tile as a row [1, n]: `x(tl::none, tl::all)`, Triton's x[None, :].
  auto operator()(NewAxis, All) const {
    static_assert(rank == 1, "tilefuse: x(tl::none, tl::all) makes a row of a 1D tile; this tile is not 1D.");
    if constexpr (rank == 1) return detail::expand<0>(*this);
  }

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

/// Whether two 2D shapes broadcast together: each dimension equal, or 1 in one of them.
template <class A, class B> struct broadcast_2d : std::false_type {};
template <int A0, int A1, int B0, int B1>
struct broadcast_2d<Shape<A0, A1>, Shape<B0, B1>>
    : std::bool_constant<(A0 == B0 || A0 == 1 || B0 == 1) && (A1 == B1 || A1 == 1 || B1 == 1)> {};
template <class A, class B> struct broadcast_shape { using type = A; };
template <int A0, int A1, int B0, int B1>
struct broadcast_shape<Shape<A0, A1>, Shape<B0, B1>> { using type = Shape<(A0 > B0 ? A0 : B0), (A1 > B1 ? A1 : B1)>; };

/// Whether shapes A and B combine: equal, one of them a scalar, or two 2D shapes that broadcast (a
/// dimension of 1 repeats along the other's).
template <class A, class B>
inline constexpr bool shapes_combine =
    std::is_same_v<A, B> || shape_rank<A>::value == 0 || shape_rank<B>::value == 0 || broadcast_2d<A, B>::value;
/// The combined shape of A and B (the non-scalar one; for 2D shapes, the larger of each dimension).
template <class A, class B>
using combined_shape = std::conditional_t<shape_rank<A>::value == 0, B,
                                          std::conditional_t<shape_rank<B>::value == 0, A, typename broadcast_shape<A, B>::type>>;

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

/// The value of x broadcast to shape S (a splat instruction for scalars, a broadcast instruction for a 2D
/// tile with a dimension of 1).
template <class S, class T, int... N>
tile_of_t<T, S> broadcast(const Tile<T, N...>& x) {
  using R = tile_of_t<T, S>;
  if constexpr (std::is_same_v<Shape<N...>, S>) {
    return x;
  } else if constexpr (sizeof...(N) == 0) {
    const ir::ValueType type = R::type();
    return R(emit(ir::Op::splat, &type, {x.id()}));
  } else {
    static_assert(sizeof...(N) == 2 && shape_rank<S>::value == 2 && broadcast_2d<Shape<N...>, S>::value,
                  "tilefuse: a 1D tile does not broadcast against a 2D tile; make it a column with "
                  "x(tl::all, tl::none) or a row with x(tl::none, tl::all) first.");
    const ir::ValueType type = R::type();
    return R(emit(ir::Op::broadcast, &type, {x.id()}));
  }
}

/// Triton's expand_dims: a 1D tile as a column (Axis 1: [n, 1]) or a row (Axis 0: [1, n]).
template <int Axis, class T, int N>
Tile<T, (Axis == 1 ? N : 1), (Axis == 1 ? 1 : N)> expand(const Tile<T, N>& x) {
  using R = Tile<T, (Axis == 1 ? N : 1), (Axis == 1 ? 1 : N)>;
  const ir::ValueType type = R::type();
  return R(emit(ir::Op::expand, &type, {x.id()}, ir::attr::Axis{Axis}));
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
  static_assert(shape_rank<SA>::value + shape_rank<SB>::value != 3,
                "tilefuse: a 1D tile does not combine with a 2D tile; make it a column with x(tl::all, tl::none) "
                "or a row with x(tl::none, tl::all) first.");
  static_assert(shapes_combine<SA, SB>,
                "tilefuse: the tile shapes differ; elementwise operations need equal shapes, a scalar operand, or "
                "2D shapes whose differing dimensions are 1.");
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
  static_assert(sizeof...(N) != 0, "tilefuse: max/min/sum reduce a 1D tile; this operand is already a scalar.");
  static_assert(sizeof...(N) != 2, "tilefuse: reduce a 2D tile along an axis: tl::max<1>(x) gives the 1D tile of "
                                   "its rows' maxima, tl::sum<0>(x) its columns' sums.");
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

}  // namespace tilefuse::tl
