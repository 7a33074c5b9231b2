// DeviceView<T>: device memory the caller owns (a cudaMalloc'ed pointer, a PyTorch or CuPy tensor, an
// allocator's pool), as a non-owning pointer and element count. Accepted wherever DeviceBuffer is; a
// DeviceView<const T> is read-only and binds only to kernel parameters declared tl::Ptr<const T>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tilefuse {

/// `size()` elements of T at a device address the caller keeps alive for as long as launches use it.
template <class T>
class DeviceView {
 public:
  /// The element type without const.
  using value_type = std::remove_const_t<T>;
  /// The element type as viewed (const for read-only views).
  using element_type = T;

  /// An empty view.
  DeviceView() = default;
  /// `count` elements at device pointer `data` (null only when count is 0).
  DeviceView(T* data, std::size_t count) : DeviceView(reinterpret_cast<std::uintptr_t>(data), count) {}
  /// `count` elements at device address `address` (a CUdeviceptr; 0 only when count is 0).
  DeviceView(std::uint64_t address, std::size_t count) : address_(address), count_(count) {
    if (address == 0 && count != 0)
      throw std::invalid_argument("tilefuse: DeviceView of " + std::to_string(count) + " elements at a null device address");
    if (address % alignof(value_type) != 0)
      throw std::invalid_argument("tilefuse: DeviceView at device address " + std::to_string(address) +
                                  ", which is not aligned to its " + std::to_string(alignof(value_type)) + "-byte elements");
  }
  /// `count` elements at `data`, `byte_stride` bytes apart as the caller's tensor says: tilefuse kernels
  /// index contiguous elements, so any stride other than sizeof(T) is refused with an error naming it.
  DeviceView(T* data, std::size_t count, std::size_t byte_stride) : DeviceView(data, count) {
    if (byte_stride != sizeof(T) && count > 1)
      throw std::invalid_argument("tilefuse: DeviceView over elements " + std::to_string(byte_stride) + " bytes apart; tilefuse "
                                  "needs contiguous elements (" + std::to_string(sizeof(T)) + " bytes apart)");
  }
  /// A writable view is also a read-only one.
  template <class U>
    requires(std::is_const_v<T> && std::is_same_v<U, value_type>)
  DeviceView(const DeviceView<U>& other) : address_(other.device_ptr()), count_(other.size()) {}  // NOLINT

  /// Number of elements.
  std::size_t size() const { return count_; }
  /// Size in bytes.
  std::size_t bytes() const { return count_ * sizeof(T); }
  /// Device address.
  std::uint64_t device_ptr() const { return address_; }
  /// The device pointer (not dereferenceable on the host).
  T* data() const { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address_)); }
  /// Elements [offset, offset + count) of this view; throws when they are not all inside it.
  DeviceView subview(std::size_t offset, std::size_t count) const {
    if (offset > count_ || count > count_ - offset)
      throw std::out_of_range("tilefuse: DeviceView::subview of elements [" + std::to_string(offset) + ", " +
                              std::to_string(offset + count) + ") of a view of " + std::to_string(count_));
    return DeviceView(address_ + offset * sizeof(T), count);
  }

 private:
  std::uint64_t address_ = 0;
  std::size_t count_ = 0;
};

}  // namespace tilefuse
