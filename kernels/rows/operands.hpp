// The buffers the sample kernels take, as runtime arguments: DeviceBuffer<H> (or any device memory with
// device_ptr(), size() and value_type) for the GPU or the interpreter, std::span<H> or std::vector<H>
// of host memory for the interpreter. The launchers are compiled once in the kernels library and take
// these type-erased operands; the inline wrappers users call only convert.
#pragma once

#include <span>
#include <type_traits>
#include <vector>

#include "backend/runtime/args.hpp"
#include "backend/runtime/buffer.hpp"
#include "dsl/dtype.hpp"

namespace tilefuse::kernels {

template <class Buf> struct element_of { using type = void; };
template <class H> struct element_of<std::span<H>> { using type = H; };
template <class H> struct element_of<std::vector<H>> { using type = H; };
template <class Buf> requires requires(const Buf& b) { b.device_ptr(); b.size(); typename Buf::value_type; }
struct element_of<Buf> { using type = typename Buf::value_type; };
/// Element type of a buffer argument (DeviceBuffer<H>, std::span<H>, std::vector<H>); void for others.
template <class Buf> using element_of_t = typename element_of<std::remove_cvref_t<Buf>>::type;

/// True when the buffer's elements are float, tilefuse::half or tilefuse::bfloat16.
template <class Buf>
inline constexpr bool holds_floats = !std::is_void_v<element_of_t<Buf>> && tl::is_float_tag<tl::dtype_of_host_t<element_of_t<Buf>>>;
/// True when the buffer's elements are float.
template <class Buf>
inline constexpr bool holds_f32 = std::is_same_v<element_of_t<Buf>, float>;

/// A buffer as a runtime argument: its memory, element dtype and element count.
template <class Buf>
Arg memory_arg(Buf& buf) {
  using H = element_of_t<Buf>;
  const ir::DType dtype = tl::dtype_of_host_t<H>::id;
  if constexpr (requires { buf.device_ptr(); }) {
    return Arg::device_memory_of(dtype, buf.device_ptr(), buf.size());
  } else {
    return Arg::host_memory_of(dtype, const_cast<std::remove_const_t<H>*>(buf.data()), buf.size());
  }
}

}  // namespace tilefuse::kernels
