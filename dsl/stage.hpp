// Shared-memory stages: a tile that lives in on-chip shared memory for the whole program, written in one
// pass over a row and read back in later ones, so a row wider than the registers allow is still read
// from global memory once (staged LayerNorm and softmax).
#pragma once

#include <source_location>

#include "dsl/tile.hpp"

namespace tilefuse::tl {

namespace detail {
template <class V> struct tile_length : std::integral_constant<int, 0> {};
template <class T, int P> struct tile_length<Tile<T, P>> : std::integral_constant<int, P> {};

template <class O>
Scalar<i32> stage_offset(const O& offset) {
  if constexpr (TileValue<O>) {
    static_assert(std::is_same_v<O, Scalar<i32>>, "tilefuse: a stage offset is an i32 scalar (or an integer).");
    return offset;
  } else {
    static_assert(std::is_integral_v<O>, "tilefuse: a stage offset is an i32 scalar (or an integer).");
    return constant<i32>(offset);
  }
}
}  // namespace detail

/// N elements of dtype T in shared memory, private to one program and alive for all of it. Tiles of P
/// elements are stored to and loaded from element offsets; elements outside [0, N) are not written and
/// read as `other` (0), as if masked off. When every access of a stage moves tiles of one size P at
/// offsets that are multiples of P, each thread reads back only what it wrote and no barrier is needed;
/// otherwise the generated code puts a barrier before each access. Declare stages at the top level of the
/// program (a stage made in a loop body would be a new stage each time the body is traced, which is once).
template <class T, int N>
class Stage {
  static_assert(is_float_tag<T> || is_int_tag<T>, "tilefuse: a Stage holds f32, f16, bf16, i32 or i64 elements.");
  static_assert(N > 0 && N <= (1 << 20), "tilefuse: a Stage holds 1 to 2^20 elements.");

 public:
  /// Declares the stage in the program being traced.
  Stage() {
    ir::Function& fn = detail::traced();
    index_ = static_cast<int>(fn.stages.size());
    fn.stages.push_back(ir::Stage{T::id, N});
  }

  /// Elements of the stage.
  static constexpr int size = N;

  /// Writes value[i] to element offset + i where `mask` is true.
  template <class O, int P, class M>
  void store(const O& offset, const Tile<T, P>& value, const Tile<M, P>& mask,
             const std::source_location& loc = std::source_location::current()) const {
    static_assert(P <= N, "tilefuse: a stage access cannot move more elements than the stage holds.");
    static_assert(std::is_same_v<M, i1>, "tilefuse: a stage store's mask must be a comparison result (an i1 tile).");
    detail::emit(ir::Op::stage_store, nullptr, {detail::stage_offset(offset).id(), value.id(), mask.id()}, ir::attr::StageRef{index_},
                 detail::site(loc));
  }
  /// Writes value[i] to element offset + i.
  template <class O, class V>
  void store(const O& offset, const V& value, const std::source_location& loc = std::source_location::current()) const {
    static_assert(TileValue<V>, "tilefuse: a stage stores tiles; make one with tl::full<T, P>(value) first.");
    if constexpr (TileValue<V>) {
      static_assert(std::is_same_v<typename V::dtype, T> && V::rank == 1,
                    "tilefuse: a stage stores 1D tiles of its own dtype; convert the value with tl::cast<...> first.");
      static_assert(detail::tile_length<V>::value <= N,
                    "tilefuse: a stage access cannot move more elements than the stage holds.");
    }
    detail::emit(ir::Op::stage_store, nullptr, {detail::stage_offset(offset).id(), value.id()}, ir::attr::StageRef{index_}, detail::site(loc));
  }

  /// Copies the elements `ptrs` point to into elements offset + i, 0 where `mask` is false. The copy is
  /// asynchronous where the GPU allows (cp.async, sm_80 and later): it overlaps what the program does
  /// next and completes before the stage is next accessed, so a program can put a whole row in flight.
  template <class O, class Ptrs, class M>
  void copy(const O& offset, const Ptrs& ptrs, const Tile<M, detail::tile_length<Ptrs>::value>& mask,
            const std::source_location& loc = std::source_location::current()) const {
    check_copy<Ptrs>();
    static_assert(std::is_same_v<M, i1>, "tilefuse: a stage copy's mask must be a comparison result (an i1 tile).");
    detail::emit(ir::Op::stage_copy, nullptr, {detail::stage_offset(offset).id(), ptrs.id(), mask.id()}, ir::attr::StageRef{index_},
                 detail::site(loc));
  }
  /// Copies every element `ptrs` point to into elements offset + i (see the masked copy).
  template <class O, class Ptrs>
  void copy(const O& offset, const Ptrs& ptrs, const std::source_location& loc = std::source_location::current()) const {
    check_copy<Ptrs>();
    detail::emit(ir::Op::stage_copy, nullptr, {detail::stage_offset(offset).id(), ptrs.id()}, ir::attr::StageRef{index_}, detail::site(loc));
  }

  /// Tile of P elements: element offset + i where `mask` is true, `other` elsewhere.
  template <int P, class O, class M, Operand Other>
  Tile<T, P> load(const O& offset, const Tile<M, P>& mask, const Other& other,
                  const std::source_location& loc = std::source_location::current()) const {
    static_assert(P <= N, "tilefuse: a stage access cannot move more elements than the stage holds.");
    static_assert(std::is_same_v<M, i1>, "tilefuse: a stage load's mask must be a comparison result (an i1 tile).");
    auto o = detail::broadcast<Shape<P>>(detail::as_tile<T>(other));
    const ir::ValueType type = Tile<T, P>::type();
    return Tile<T, P>(detail::emit(ir::Op::stage_load, &type, {detail::stage_offset(offset).id(), mask.id(), o.id()}, ir::attr::StageRef{index_},
                                   detail::site(loc)));
  }
  /// Tile of P elements: element offset + i.
  template <int P, class O>
  Tile<T, P> load(const O& offset, const std::source_location& loc = std::source_location::current()) const {
    static_assert(P > 0 && (P & (P - 1)) == 0, "tilefuse: a stage loads tiles of a power-of-two size, like arange.");
    static_assert(P <= N, "tilefuse: a stage access cannot move more elements than the stage holds.");
    const ir::ValueType type = Tile<T, P>::type();
    return Tile<T, P>(detail::emit(ir::Op::stage_load, &type, {detail::stage_offset(offset).id()}, ir::attr::StageRef{index_}, detail::site(loc)));
  }

  /// Tile of the elements at `offsets` (an i32 tile, 1D or 2D, whose shape the result takes): element
  /// offsets[i] where `mask` is true and the offset lies in [0, N), `other` elsewhere. Lanes read elements
  /// other threads wrote, so the generated code puts a barrier before a gather that follows a write.
  template <int... D, class M, int... K, Operand Other>
  Tile<T, D...> gather(const Tile<i32, D...>& offsets, const Tile<M, K...>& mask, const Other& other,
                       const std::source_location& loc = std::source_location::current()) const {
    check_indexed<D...>();
    static_assert(std::is_same_v<M, i1>, "tilefuse: a stage gather's mask must be a comparison result (an i1 tile).");
    static_assert(detail::shapes_combine<Shape<D...>, Shape<K...>> && sizeof...(K) <= sizeof...(D),
                  "tilefuse: a stage gather's mask must have the offsets' shape (or be a scalar).");
    auto m = detail::broadcast<Shape<D...>>(mask);
    auto o = detail::broadcast<Shape<D...>>(detail::as_tile<T>(other));
    const ir::ValueType type = Tile<T, D...>::type();
    return Tile<T, D...>(detail::emit(ir::Op::stage_gather, &type, {offsets.id(), m.id(), o.id()}, ir::attr::StageRef{index_}, detail::site(loc)));
  }
  /// Tile of the elements at `offsets`, 0 where an offset lies outside [0, N).
  template <int... D>
  Tile<T, D...> gather(const Tile<i32, D...>& offsets, const std::source_location& loc = std::source_location::current()) const {
    check_indexed<D...>();
    const ir::ValueType type = Tile<T, D...>::type();
    return Tile<T, D...>(detail::emit(ir::Op::stage_gather, &type, {offsets.id()}, ir::attr::StageRef{index_}, detail::site(loc)));
  }

  /// Writes value[i] to element offsets[i] (an i32 tile, 1D or 2D, of the value's shape) where `mask` is
  /// true and the offset lies in [0, N). Two lanes that name one element leave either value there. The
  /// generated code puts a barrier before a scatter that follows any access of the stage.
  template <int... D, Operand V, class M, int... K>
  void scatter(const Tile<i32, D...>& offsets, const V& value, const Tile<M, K...>& mask,
               const std::source_location& loc = std::source_location::current()) const {
    static_assert(std::is_same_v<M, i1>, "tilefuse: a stage scatter's mask must be a comparison result (an i1 tile).");
    static_assert(detail::shapes_combine<Shape<D...>, Shape<K...>> && sizeof...(K) <= sizeof...(D),
                  "tilefuse: a stage scatter's mask must have the offsets' shape (or be a scalar).");
    auto v = scatter_value<D...>(value);
    auto m = detail::broadcast<Shape<D...>>(mask);
    detail::emit(ir::Op::stage_scatter, nullptr, {offsets.id(), v.id(), m.id()}, ir::attr::StageRef{index_}, detail::site(loc));
  }
  /// Writes value[i] to element offsets[i] wherever the offset lies in [0, N).
  template <int... D, Operand V>
  void scatter(const Tile<i32, D...>& offsets, const V& value, const std::source_location& loc = std::source_location::current()) const {
    auto v = scatter_value<D...>(value);
    detail::emit(ir::Op::stage_scatter, nullptr, {offsets.id(), v.id()}, ir::attr::StageRef{index_}, detail::site(loc));
  }

 private:
  template <int... D>
  static constexpr void check_indexed() {
    static_assert(sizeof...(D) == 1 || sizeof...(D) == 2, "tilefuse: a stage gathers and scatters through a 1D or 2D tile of i32 offsets.");
  }
  template <int... D, class V>
  static auto scatter_value(const V& value) {
    check_indexed<D...>();
    if constexpr (TileValue<V>) {
      static_assert(std::is_same_v<typename V::dtype, T>,
                    "tilefuse: a stage scatters tiles of its own dtype; convert the value with tl::cast<...> first.");
      static_assert(detail::shapes_combine<Shape<D...>, typename V::shape> && V::rank <= sizeof...(D),
                    "tilefuse: a stage scatter's value must have the offsets' shape (or be a scalar).");
    }
    return detail::broadcast<Shape<D...>>(detail::as_tile<T>(value));
  }

  template <class Ptrs>
  static constexpr void check_copy() {
    static_assert(TileValue<Ptrs> && Ptrs::rank == 1 && (std::is_same_v<typename Ptrs::dtype, ptr<T>> || std::is_same_v<typename Ptrs::dtype, ptr<const T>>),
                  "tilefuse: a stage copies through a 1D tile of pointers to its own dtype (ptr + offsets).");
    static_assert(detail::tile_length<Ptrs>::value <= N,
                  "tilefuse: a stage access cannot move more elements than the stage holds.");
  }

  int index_ = 0;
};

}  // namespace tilefuse::tl
