// Loops with carried state: tl::for_range runs a body over a range of i32 values, threading tiles and
// scalars from one iteration to the next (online softmax, looped reductions over column blocks).
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "dsl/tile.hpp"

namespace tilefuse::tl {

namespace detail {

template <class X> struct is_tuple_of_tiles : std::false_type {};
template <class... C> struct is_tuple_of_tiles<std::tuple<C...>> : std::bool_constant<(TileValue<C> && ...)> {};

template <class B>
Scalar<i32> loop_bound(const B& b) {
  if constexpr (TileValue<B>) {
    static_assert(std::is_same_v<B, Scalar<i32>>, "tilefuse: for_range bounds and step are i32 scalars or integers.");
    return b;
  } else {
    static_assert(std::is_integral_v<B>, "tilefuse: for_range bounds and step are i32 scalars or integers.");
    return constant<i32>(b);
  }
}

// Restores the tracing block when the body returns or throws.
struct BlockScope {
  std::vector<ir::Instr>* previous;
  explicit BlockScope(std::vector<ir::Instr>* block) : previous(tracing_block) { tracing_block = block; }
  ~BlockScope() { tracing_block = previous; }
};

}  // namespace detail

/// Runs body(i, c...) for i = lo, lo + step, ... while i < hi (step > 0), where c... are the carried
/// values: `init` on the first iteration, then what the body returned (a std::tuple of the same tile
/// types). Returns the carried values after the last iteration (`init` when the range is empty).
template <class Lo, class Hi, class St, class... C, class F>
std::tuple<C...> for_range(const Lo& lo, const Hi& hi, const St& step, const std::tuple<C...>& init, F&& body) {
  static_assert((TileValue<C> && ...), "tilefuse: for_range carries tiles and scalars (a std::tuple of them).");
  static_assert((!is_ptr_tag<typename C::dtype>::value && ...),
                "tilefuse: for_range cannot carry pointers; carry an integer offset and add it to the pointer.");
  using Returned = std::remove_cvref_t<decltype(body(std::declval<Scalar<i32>>(), std::declval<C>()...))>;
  static_assert(std::is_same_v<Returned, std::tuple<C...>>,
                "tilefuse: a for_range body must return std::tuple of the next carried values, with the dtypes "
                "and shapes of `init`.");
  ir::Function& fn = detail::traced();
  ir::Instr loop;
  loop.op = ir::Op::loop;
  loop.args = {detail::loop_bound(lo).id(), detail::loop_bound(hi).id(), detail::loop_bound(step).id()};
  std::apply([&](const auto&... c) { (loop.args.push_back(c.id()), ...); }, init);
  const ir::ValueId iv = fn.add_value(Scalar<i32>::type());
  loop.block_args = {iv, fn.add_value(C::type())...};
  Returned next = [&] {
    detail::BlockScope scope(&loop.body);
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return body(Scalar<i32>(iv), C(loop.block_args[K + 1])...);
    }(std::index_sequence_for<C...>{});
  }();
  std::apply([&](const auto&... n) { (loop.yields.push_back(n.id()), ...); }, next);
  loop.results = {fn.add_value(C::type())...};
  const std::vector<ir::ValueId> results = loop.results;
  (detail::tracing_block ? *detail::tracing_block : fn.body).push_back(std::move(loop));
  return [&]<std::size_t... K>(std::index_sequence<K...>) {
    return std::tuple<C...>(C(results[K])...);
  }(std::index_sequence_for<C...>{});
}

/// Runs body(i) for i = lo, lo + step, ... while i < hi, for its stores (nothing is carried).
template <class Lo, class Hi, class St, class F>
void for_range(const Lo& lo, const Hi& hi, const St& step, F&& body) {
  for_range(lo, hi, step, std::tuple<>{}, [&](Scalar<i32> i) {
    body(i);
    return std::tuple<>{};
  });
}

}  // namespace tilefuse::tl
