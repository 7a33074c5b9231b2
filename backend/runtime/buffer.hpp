// DeviceBuffer<T>: RAII typed device memory, the argument type GPU launches take for pointer parameters
// (DeviceView, view.hpp, is the same for memory the caller owns).
// The allocation itself (DeviceBytes) is out of line in buffer.cpp, so that including this header does
// not include the driver layer.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/runtime/view.hpp"

namespace tilefuse {

/// Untyped device memory, freed on destruction; DeviceBuffer<T> gives it a type.
class DeviceBytes {
 public:
  /// Allocates `bytes` (uninitialized); throws driver::DeviceUnavailable without a GPU.
  explicit DeviceBytes(std::size_t bytes);
  ~DeviceBytes();
  DeviceBytes(DeviceBytes&& other) noexcept;
  DeviceBytes& operator=(DeviceBytes&& other) noexcept;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  /// Device address.
  std::uint64_t address() const { return address_; }
  /// Copies `bytes` from the host to the start of this memory (synchronously).
  void upload(const void* host, std::size_t bytes);
  /// Copies `bytes` from the start of this memory to the host (synchronously).
  void download(void* host, std::size_t bytes) const;
  /// Sets the first `bytes` bytes to `value`, asynchronously on `stream`.
  void fill(std::uint8_t value, std::size_t bytes, void* stream);

 private:
  std::uint64_t address_ = 0;
};

/// `count` elements of T in device memory, freed on destruction.
template <class T>
class DeviceBuffer {
 public:
  /// The element type.
  using value_type = T;
  /// Allocates `count` elements (uninitialized).
  explicit DeviceBuffer(std::size_t count) : count_(count), memory_(count * sizeof(T)) {}
  /// Allocates and uploads `host`.
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : count_(std::exchange(other.count_, 0)), memory_(std::move(other.memory_)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(count_, other.count_);
    memory_ = std::move(other.memory_);
    return *this;
  }

  /// Number of elements.
  std::size_t size() const { return count_; }
  /// Size in bytes.
  std::size_t bytes() const { return count_ * sizeof(T); }
  /// Device address.
  std::uint64_t device_ptr() const { return memory_.address(); }
  /// A non-owning view of the whole buffer.
  DeviceView<T> view() { return DeviceView<T>(device_ptr(), count_); }
  /// A read-only view of the whole buffer.
  DeviceView<const T> view() const { return DeviceView<const T>(device_ptr(), count_); }

  /// Copies `host` (exactly size() elements) to the device.
  void upload(std::span<const T> host) {
    if (host.size() != count_)
      throw std::invalid_argument("tilefuse: DeviceBuffer::upload expected " + std::to_string(count_) + " elements, got " +
                                  std::to_string(host.size()));
    memory_.upload(host.data(), bytes());
  }
  /// Copies the device contents into `host` (exactly size() elements).
  void download(std::span<T> host) const {
    if (host.size() != count_)
      throw std::invalid_argument("tilefuse: DeviceBuffer::download expected " + std::to_string(count_) + " elements, got " +
                                  std::to_string(host.size()));
    memory_.download(host.data(), bytes());
  }
  /// The device contents as a vector.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host);
    return host;
  }
  /// Sets every byte to `value` (0xff poisons floats with NaN), asynchronously on `stream`.
  void fill_bytes(std::uint8_t value, void* stream = nullptr) { memory_.fill(value, bytes(), stream); }

 private:
  std::size_t count_;
  DeviceBytes memory_;
};

}  // namespace tilefuse
