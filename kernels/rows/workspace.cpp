// The split-row scratch the library keeps (see workspace.hpp).
#include "kernels/rows/workspace.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend/runtime/buffer.hpp"
#include "backend/runtime/program.hpp"
#include "backend/runtime/target.hpp"

namespace tilefuse::kernels {

std::int64_t workspace_partials(int sm_count) { return 64 * std::int64_t{sm_count} + 64; }

Workspace workspace(const RowOptions& opt, std::int64_t count) {
  const Target t = target(opt.backend);
  const std::int64_t capacity = t.gpu ? workspace_partials(t.sm_count) : count;
  if (count < 0 || count > capacity)
    throw std::logic_error("tilefuse kernels: split-row workspace of " + std::to_string(count) + " partials asked, " +
                           std::to_string(capacity) + " kept");
  if (!t.gpu) {
    thread_local std::vector<float> host;
    if (host.size() < static_cast<std::size_t>(2 * count)) host.resize(static_cast<std::size_t>(2 * count));
    return {Arg::host_memory_of(ir::DType::f32, host.data(), static_cast<std::size_t>(count)),
            Arg::host_memory_of(ir::DType::f32, host.data() + count, static_cast<std::size_t>(count))};
  }
  // Inspection records launches without running them: no memory is needed, only its alignment.
  if (InspectLaunches::active()) {
    return {Arg::device_memory_of(ir::DType::f32, 256, static_cast<std::size_t>(count)),
            Arg::device_memory_of(ir::DType::f32, 256 + 4 * static_cast<std::uint64_t>(capacity), static_cast<std::size_t>(count))};
  }
  // Freed at exit only: a stream's launches may be pending at any time. (Made after the driver's state,
  // so destroyed before it.)
  static std::mutex mutex;
  static std::map<void*, DeviceBytes> per_stream;
  std::uint64_t address = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = per_stream.find(opt.stream);
    if (it == per_stream.end())
      it = per_stream.emplace(opt.stream, DeviceBytes(static_cast<std::size_t>(2 * capacity) * sizeof(float))).first;
    address = it->second.address();
  }
  return {Arg::device_memory_of(ir::DType::f32, address, static_cast<std::size_t>(count)),
          Arg::device_memory_of(ir::DType::f32, address + 4 * static_cast<std::uint64_t>(capacity), static_cast<std::size_t>(count))};
}

Arg scratch_elements(const RowOptions& opt, ir::DType dtype, std::int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * static_cast<std::size_t>(ir::dtype_bytes(dtype));
  if (!target(opt.backend).gpu) {
    thread_local std::vector<std::uint64_t> host;  // 8-byte words: aligned for every dtype
    if (host.size() * 8 < bytes) host.resize((bytes + 7) / 8);
    return Arg::host_memory_of(dtype, host.data(), static_cast<std::size_t>(count));
  }
  if (InspectLaunches::active()) return Arg::device_memory_of(dtype, 256, static_cast<std::size_t>(count));
  static std::mutex mutex;
  static std::map<void*, std::vector<std::pair<std::size_t, DeviceBytes>>> per_stream;  // (bytes, memory), the largest last
  const std::lock_guard<std::mutex> lock(mutex);
  auto& held = per_stream[opt.stream];
  if (held.empty() || held.back().first < bytes) {
    const std::size_t size = std::max<std::size_t>(bytes, std::size_t{1} << 20);
    held.emplace_back(size, DeviceBytes(size));
  }
  return Arg::device_memory_of(dtype, held.back().second.address(), static_cast<std::size_t>(count));
}

}  // namespace tilefuse::kernels
