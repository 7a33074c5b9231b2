// The scratch the row launchers keep (see workspace.hpp).
#include "kernels/rows/workspace.hpp"

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

namespace {

// Which scratch: each is kept apart, so that one launch may use both.
enum class Kind { partials, shifts };

// Two arrays of `count` elements of `dtype`, each of `capacity` bytes, of scratch `kind` for `opt`.
Workspace kept(Kind kind, const RowOptions& opt, ir::DType dtype, std::int64_t count, std::int64_t capacity, const char* what) {
  const std::int64_t bytes = count * ir::dtype_bytes(dtype);
  if (count < 0 || bytes > capacity)
    throw std::logic_error(std::string("tilefuse kernels: ") + what + " workspace of " + std::to_string(bytes) + " bytes asked, " +
                           std::to_string(capacity) + " kept");
  const auto n = static_cast<std::size_t>(count);
  if (!target(opt.backend).gpu) {
    thread_local std::map<Kind, std::vector<std::uint64_t>> host;  // 8-byte aligned
    auto& h = host[kind];
    const auto words = static_cast<std::size_t>((capacity + 7) / 8);
    if (h.size() < 2 * words) h.resize(2 * words);
    return {Arg::host_memory_of(dtype, h.data(), n), Arg::host_memory_of(dtype, h.data() + words, n)};
  }
  // Inspection records launches without running them: no memory is needed, only its alignment.
  const auto second = static_cast<std::uint64_t>((capacity + 255) / 256 * 256);
  if (InspectLaunches::active()) return {Arg::device_memory_of(dtype, 256, n), Arg::device_memory_of(dtype, 256 + second, n)};
  // Freed at exit only: a stream's launches may be pending at any time. (Made after the driver's state,
  // so destroyed before it.)
  static std::mutex mutex;
  static std::map<std::pair<Kind, void*>, DeviceBytes> per_stream;
  std::uint64_t address = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = per_stream.find({kind, opt.stream});
    if (it == per_stream.end()) it = per_stream.emplace(std::pair{kind, opt.stream}, DeviceBytes(static_cast<std::size_t>(2 * second))).first;
    address = it->second.address();
  }
  return {Arg::device_memory_of(dtype, address, n), Arg::device_memory_of(dtype, address + second, n)};
}

}  // namespace

std::int64_t workspace_partials(int sm_count) { return 8 * std::int64_t{sm_count} + 64; }

Workspace workspace(const RowOptions& opt, std::int64_t count) {
  const Target t = target(opt.backend);
  const std::int64_t capacity = t.gpu ? workspace_partials(t.sm_count) : count;
  return kept(Kind::partials, opt, ir::DType::f32, count, 4 * capacity, "split-row");
}

Workspace shifts_workspace(const RowOptions& opt, ir::DType dtype, std::int64_t count) {
  return kept(Kind::shifts, opt, dtype, count, kShiftsBytes, "shifted-copies");
}

}  // namespace tilefuse::kernels
