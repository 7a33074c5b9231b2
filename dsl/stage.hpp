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

 private:
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
