// DLPack interop: a DeviceView over a DLTensor that another framework exported (PyTorch's to_dlpack, CuPy,
// JAX), or a std::span over a CPU one for the interpreter, without a copy. Every way a tensor can fail to
// be usable (not on the GPU, another dtype, strided, a byte offset that breaks the element alignment)
// throws a DLPackError naming what was expected and what came. Needs dlpack/dlpack.h (Debian/Ubuntu:
// libdlpack-dev); header-only, so the tilefuse library itself does not depend on it.
#pragma once

#ifndef DLPACK_DLPACK_H_  // a framework's own copy of the header (PyTorch's ATen/dlpack.h) serves as well
#include <dlpack/dlpack.h>
#endif

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backend/numerics/float16.hpp"
#include "backend/runtime/view.hpp"

namespace tilefuse {

/// A DLTensor that cannot be viewed as asked; reason() says which check failed.
class DLPackError : public std::invalid_argument {
 public:
  /// The check that failed.
  enum class Reason {
    null_tensor,     ///< no tensor (a null DLTensor or DLManagedTensor pointer)
    null_data,       ///< elements but a null data pointer
    device,          ///< not in memory of the kind asked for (CUDA for a DeviceView, CPU for a span)
    dtype,           ///< another element type (code, bits or lanes)
    shape,           ///< a negative dimension or rank
    not_contiguous,  ///< strides other than the compact row-major ones
    byte_offset,     ///< data + byte_offset not aligned to the element size
  };
  DLPackError(Reason reason, const std::string& what) : std::invalid_argument("tilefuse: DLPack tensor: " + what), reason_(reason) {}
  /// Which check failed.
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

namespace dlpack_detail {

template <class H> constexpr DLDataType dtype_of() {
  using E = std::remove_const_t<H>;
  if constexpr (std::is_same_v<E, float>) return {kDLFloat, 32, 1};
  else if constexpr (std::is_same_v<E, half>) return {kDLFloat, 16, 1};
  else if constexpr (std::is_same_v<E, bfloat16>) return {kDLBfloat, 16, 1};
  else if constexpr (std::is_same_v<E, std::int32_t>) return {kDLInt, 32, 1};
  else if constexpr (std::is_same_v<E, std::int64_t>) return {kDLInt, 64, 1};
  else static_assert(sizeof(E) == 0, "tilefuse: DLPack views hold float, half, bfloat16, int32_t or int64_t elements.");
}

inline std::string dtype_text(DLDataType t) {
  const char* code = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float" : t.code == kDLBfloat ? "bfloat" : "code ";
  std::string s = code;
  if (t.code > kDLBfloat) s += std::to_string(t.code) + " ";
  s += std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

inline std::string device_text(DLDeviceType d) {
  switch (d) {
    case kDLCPU: return "CPU (kDLCPU)";
    case kDLCUDA: return "CUDA (kDLCUDA)";
    case kDLCUDAHost: return "CUDA pinned host (kDLCUDAHost)";
    case kDLCUDAManaged: return "CUDA managed (kDLCUDAManaged)";
    default: return "device type " + std::to_string(static_cast<int>(d));
  }
}

// Checks dtype, shape, contiguity, data and byte offset; returns the element count.
template <class H>
std::size_t checked_count(const DLTensor& t) {
  constexpr DLDataType want = dtype_of<H>();
  if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes)
    throw DLPackError(DLPackError::Reason::dtype, "expected elements of " + dtype_text(want) + ", got " + dtype_text(t.dtype));
  if (t.ndim < 0) throw DLPackError(DLPackError::Reason::shape, "expected a rank of 0 or more, got " + std::to_string(t.ndim));
  std::size_t count = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      throw DLPackError(DLPackError::Reason::shape, "dimension " + std::to_string(i) + " is " + std::to_string(t.shape[i]));
    count *= static_cast<std::size_t>(t.shape[i]);
  }
  if (t.strides && count > 1) {  // null strides: compact row-major; dimensions of extent 1 may have any stride
    std::int64_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected)
        throw DLPackError(DLPackError::Reason::not_contiguous,
                          "expected contiguous row-major elements, but dimension " + std::to_string(i) + " has stride " +
                              std::to_string(t.strides[i]) + " (contiguous: " + std::to_string(expected) + ")");
      expected *= t.shape[i];
    }
  }
  if (count > 0 && !t.data) throw DLPackError(DLPackError::Reason::null_data, "expected data for " + std::to_string(count) + " elements, got a null pointer");
  const std::uint64_t address = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  if (address % sizeof(H) != 0)
    throw DLPackError(DLPackError::Reason::byte_offset, "data + byte_offset (" + std::to_string(t.byte_offset) +
                                                            ") is not aligned to the " + std::to_string(sizeof(H)) + "-byte elements");
  return count;
}

}  // namespace dlpack_detail

/// The CUDA memory of DLTensor `t` as a DeviceView<H> (H = float, half, bfloat16, int32_t or int64_t, const
/// for a read-only view), after checking that it lives on the GPU tilefuse launches on (kDLCUDA or
/// kDLCUDAManaged, device 0), holds H and is contiguous. The view does not own the memory: keep the tensor
/// alive while launches use it.
template <class H>
DeviceView<H> dlpack_view(const DLTensor& t) {
  if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged)
    throw DLPackError(DLPackError::Reason::device, "expected CUDA memory (kDLCUDA or kDLCUDAManaged), got " +
                                                       dlpack_detail::device_text(t.device.device_type));
  if (t.device.device_id != 0)
    throw DLPackError(DLPackError::Reason::device, "expected memory of CUDA device 0, which tilefuse launches on, got device " +
                                                       std::to_string(t.device.device_id));
  const std::size_t count = dlpack_detail::checked_count<H>(t);
  return DeviceView<H>(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset), count);
}

/// dlpack_view of a DLManagedTensor's tensor (ownership stays with the caller, who calls its deleter).
template <class H>
DeviceView<H> dlpack_view(const DLManagedTensor* t) {
  if (!t) throw DLPackError(DLPackError::Reason::null_tensor, "expected a DLManagedTensor, got a null pointer");
  return dlpack_view<H>(t->dl_tensor);
}

/// The host memory of CPU DLTensor `t` (kDLCPU or kDLCUDAHost) as a std::span<H>, for the interpreter.
template <class H>
std::span<H> dlpack_span(const DLTensor& t) {
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost)
    throw DLPackError(DLPackError::Reason::device, "expected host memory (kDLCPU or kDLCUDAHost), got " +
                                                       dlpack_detail::device_text(t.device.device_type));
  const std::size_t count = dlpack_detail::checked_count<H>(t);
  auto* data = reinterpret_cast<H*>(reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset);
  return std::span<H>(count ? data : nullptr, count);
}

}  // namespace tilefuse
