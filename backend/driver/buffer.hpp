// DeviceBuffer<T>: RAII typed device memory, the argument type GPU launches take for pointer parameters.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/driver/driver.hpp"

namespace tilefuse {

/// `count` elements of T in device memory, freed on destruction.
template <class T>
class DeviceBuffer {
 public:
  /// Allocates `count` elements (uninitialized).
  explicit DeviceBuffer(std::size_t count) : count_(count), address_(driver::allocate(count * sizeof(T))) {}
  /// Allocates and uploads `host`.
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { driver::release(address_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : count_(other.count_), address_(other.address_) {
    other.address_ = 0;
    other.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(count_, other.count_);
    std::swap(address_, other.address_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Number of elements.
  std::size_t size() const { return count_; }
  /// Size in bytes.
  std::size_t bytes() const { return count_ * sizeof(T); }
  /// Device address.
  std::uint64_t device_ptr() const { return address_; }

  /// Copies `host` (exactly size() elements) to the device.
  void upload(std::span<const T> host) {
    if (host.size() != count_)
      throw std::invalid_argument("tilefuse: DeviceBuffer::upload expected " + std::to_string(count_) +
                                  " elements, got " + std::to_string(host.size()));
    driver::copy_to_device(address_, host.data(), bytes());
  }
  /// Copies the device contents into `host` (exactly size() elements).
  void download(std::span<T> host) const {
    if (host.size() != count_)
      throw std::invalid_argument("tilefuse: DeviceBuffer::download expected " + std::to_string(count_) +
                                  " elements, got " + std::to_string(host.size()));
    driver::copy_to_host(host.data(), address_, bytes());
  }
  /// The device contents as a vector.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host);
    return host;
  }
  /// Sets every byte to `value` (0xff poisons floats with NaN).
  void fill_bytes(std::uint8_t value, void* stream = nullptr) { driver::fill_bytes(address_, value, bytes(), stream); }

 private:
  std::size_t count_;
  std::uint64_t address_;
};

}  // namespace tilefuse
