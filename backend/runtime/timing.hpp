// Timing of launches as the tuner needs it, on either backend: CUDA events around each launch on the
// GPU, the host clock around each interpreted one; and device-to-device copies, for the tuner's private
// copies of a call's operands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "backend/runtime/args.hpp"

namespace tilefuse {

/// The median time in microseconds of `runs` calls of launch(i) (i = 0 .. runs-1) after `warmup` calls,
/// each call timed on its own: between events recorded on `stream` around it for Backend::gpu, by the
/// host clock for the interpreter (which runs on the calling thread).
double median_launch_us(Backend backend, void* stream, const std::function<void(int)>& launch, int warmup, int runs);

/// Copies `bytes` from device address `src` to `dst`, asynchronously on `stream`.
void copy_device_bytes(std::uint64_t dst, std::uint64_t src, std::size_t bytes, void* stream);
/// Copies `bytes` from device address `src` to host memory `dst`, after the work queued before it.
void copy_to_host_bytes(void* dst, std::uint64_t src, std::size_t bytes);

}  // namespace tilefuse
