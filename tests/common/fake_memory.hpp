// Device addresses for inspected launches (InspectLaunches records a launch and never touches memory):
// each buffer 256-byte aligned and past the one before, as the driver's allocations would be.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/runtime/args.hpp"
#include "backend/ir/ir.hpp"

namespace tilefuse::test {

/// Hands out fake device buffers: `memory(dtype, count)` is an Arg for `count` elements of `dtype`.
struct FakeDeviceMemory {
  std::uint64_t next = std::uint64_t{1} << 40;
  Arg operator()(ir::DType d, std::int64_t count) {
    const Arg a = Arg::device_memory_of(d, next, static_cast<std::size_t>(count));
    next += (static_cast<std::uint64_t>(count) * ir::dtype_bytes(d) + 255) / 256 * 256 + 256;
    return a;
  }
};

}  // namespace tilefuse::test
