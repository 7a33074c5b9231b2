// The DSL's global memory accesses: masked and unmasked loads and stores through pointer tiles, with cache
// hints (tl::Cache, Triton's cache_modifier).
#pragma once

#include <source_location>

#include "dsl/tile.hpp"

namespace tilefuse::tl {

// ---- memory ----

/// How a load or store asks the caches to treat its lines, as Triton's cache_modifier and
/// eviction_policy: Cache::streaming for data touched once (a row streamed through a kernel), so that what
/// is reused (a weight vector) stays cached; Cache::l2_only to skip L1; Cache::evict_last for data that a
/// later pass or kernel reads again (a row's first pass, whose second pass rereads it from the L2), kept
/// in the L2 ahead of other lines until an access with another hint (a streaming reread) releases it;
/// Cache::normal otherwise. The interpreter ignores it.
using Cache = ir::CacheHint;

/// Loads the elements `ptrs` point to where `mask` is true and `other` elsewhere (0 when not given).
/// Pointers may be read-only (tl::Ptr<const T>); the loaded tile's dtype is T either way.
template <class C, int... N, class M, int... K, Operand O, class T = std::remove_const_t<C>>
Tile<T, N...> load(const Tile<ptr<C>, N...>& ptrs, const Tile<M, K...>& mask, const O& other, Cache cache = Cache::normal,
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
template <class C, int... N, class M, int... K, class T = std::remove_const_t<C>>
Tile<T, N...> load(const Tile<ptr<C>, N...>& ptrs, const Tile<M, K...>& mask, Cache cache = Cache::normal,
                   const std::source_location& loc = std::source_location::current()) {
  if constexpr (std::is_same_v<T, i1>) return load(ptrs, mask, false, cache, loc);
  else return load(ptrs, mask, 0, cache, loc);
}

/// Loads every element `ptrs` point to (no mask: each must be in bounds).
template <class C, int... N, class T = std::remove_const_t<C>>
Tile<T, N...> load(const Tile<ptr<C>, N...>& ptrs, Cache cache = Cache::normal,
                   const std::source_location& loc = std::source_location::current()) {
  const ir::ValueType type = Tile<T, N...>::type();
  return Tile<T, N...>(detail::emit(ir::Op::load, &type, {ptrs.id()}, ir::attr::Memory{cache}, detail::site(loc)));
}

namespace detail {
template <class T, int... N, class V>
auto store_value(const V& value) {
  static_assert(!std::is_const_v<T>,
                "tilefuse: store through a read-only pointer: this kernel parameter is tl::Ptr<const T>, which a "
                "program only loads from; declare it tl::Ptr<T> to store through it.");
  if constexpr (TileValue<V>) {
    static_assert(std::is_same_v<typename V::dtype, std::remove_const_t<T>>,
                  "tilefuse: store's value has a different dtype from the pointer's element type; convert it with "
                  "tl::cast<...>(value) first.");
    static_assert(V::rank <= sizeof...(N), "tilefuse: store writes a tile through a scalar pointer; give a pointer tile.");
    static_assert(shapes_combine<Shape<N...>, typename V::shape>, "tilefuse: store's value and pointers differ in shape.");
  }
  return broadcast<Shape<N...>>(as_tile<std::remove_const_t<T>>(value));
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
