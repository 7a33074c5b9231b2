// DeviceBytes: device memory through the driver layer (see buffer.hpp).
#include "backend/runtime/buffer.hpp"

#include <utility>

#include "backend/driver/driver.hpp"

namespace tilefuse {

DeviceBytes::DeviceBytes(std::size_t bytes) : address_(driver::allocate(bytes)) {}

DeviceBytes::~DeviceBytes() { driver::release(address_); }

DeviceBytes::DeviceBytes(DeviceBytes&& other) noexcept : address_(std::exchange(other.address_, 0)) {}

DeviceBytes& DeviceBytes::operator=(DeviceBytes&& other) noexcept {
  std::swap(address_, other.address_);
  return *this;
}

void DeviceBytes::upload(const void* host, std::size_t bytes) { driver::copy_to_device(address_, host, bytes); }

void DeviceBytes::download(void* host, std::size_t bytes) const { driver::copy_to_host(host, address_, bytes); }

void DeviceBytes::fill(std::uint8_t value, std::size_t bytes, void* stream) { driver::fill_bytes(address_, value, bytes, stream); }

}  // namespace tilefuse
