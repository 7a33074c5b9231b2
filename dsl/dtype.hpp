// DSL dtype tags and the compile-time dtype table (Boost.Hana): tag -> IR dtype, host type, name.
#pragma once

#include <boost/hana.hpp>
#include <cstdint>
#include <type_traits>

#include "backend/numerics/float16.hpp"
#include "backend/ir/ir.hpp"

namespace tilefuse::tl {

namespace hana = boost::hana;

/// 32-bit float elements.
struct f32 { static constexpr ir::DType id = ir::DType::f32; };
/// IEEE half elements, computed in f32 and rounded after each op.
struct f16 { static constexpr ir::DType id = ir::DType::f16; };
/// bfloat16 elements, computed in f32 and rounded after each op.
struct bf16 { static constexpr ir::DType id = ir::DType::bf16; };
/// 32-bit signed integers.
struct i32 { static constexpr ir::DType id = ir::DType::i32; };
/// 64-bit signed integers.
struct i64 { static constexpr ir::DType id = ir::DType::i64; };
/// Booleans: the masks that comparisons give.
struct i1 { static constexpr ir::DType id = ir::DType::i1; };
/// Pointer to elements of dtype T in device (or, for the interpreter, host) memory; ptr<const T> is
/// read-only: programs load through it and a store through it is a compile-time error.
template <class T> struct ptr { using pointee = T; static constexpr ir::DType id = T::id; };

/// The dtype table: each element tag with the host type that holds one element in memory.
inline constexpr auto host_types = hana::make_map(
    hana::make_pair(hana::type_c<f32>, hana::type_c<float>),
    hana::make_pair(hana::type_c<f16>, hana::type_c<tilefuse::half>),
    hana::make_pair(hana::type_c<bf16>, hana::type_c<tilefuse::bfloat16>),
    hana::make_pair(hana::type_c<i32>, hana::type_c<std::int32_t>),
    hana::make_pair(hana::type_c<i64>, hana::type_c<std::int64_t>));

/// True for the element tags above that may live in memory (everything but i1).
template <class T> inline constexpr bool is_storable = decltype(hana::contains(host_types, hana::type_c<T>))::value;

/// Host type of one element of a storable dtype T (float for f32, tilefuse::half for f16, ...).
template <class T> using host_type_t = typename decltype(+host_types[hana::type_c<T>])::type;

/// The reverse table: host type -> element tag.
inline constexpr auto dtype_of_host = hana::fold_left(host_types, hana::make_map(), [](auto map, auto pair) {
  return hana::insert(map, hana::make_pair(hana::second(pair), hana::first(pair)));
});

/// The element tag whose host type is H, or void when H is not an element type.
template <class H>
using dtype_of_host_t = typename decltype(+hana::find(dtype_of_host, hana::type_c<std::remove_cv_t<H>>)
                                               .value_or(hana::type_c<void>))::type;

template <class T> struct is_ptr_tag : std::false_type {};
template <class T> struct is_ptr_tag<ptr<T>> : std::true_type {};

/// True for the element tags f16, bf16 and f32.
template <class T> inline constexpr bool is_float_tag = std::is_same_v<T, f32> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
/// True for the element tags i32 and i64.
template <class T> inline constexpr bool is_int_tag = std::is_same_v<T, i32> || std::is_same_v<T, i64>;

}  // namespace tilefuse::tl
