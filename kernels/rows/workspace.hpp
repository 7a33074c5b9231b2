// The scratch the row kernels' launchers keep, so that a call on the hot path never allocates: f32
// partials per (row, split) for the automatic choice's split-row launches, and the shifted copies of
// LayerNorm's w and b that its kernel for rows read through aligned windows takes. Callers who want to
// own the split scratch call the split-row launchers (softmax_split, layernorm_split) with their own.
#pragma once

#include <cstdint>

#include "backend/runtime/args.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::kernels {

/// Most f32 partials one automatic split-row launch needs, per array, on a GPU of `sm_count` SMs: the
/// automatic choice splits rows only while rows x splits stays below 8 programs per SM (split_rows).
std::int64_t workspace_partials(int sm_count);

/// Most bytes of shifts_workspace per array: 16-byte-vector-many shifted copies of a row of up to 16384
/// columns (the one-program limit), each at most 16 elements longer than the row.
inline constexpr std::int64_t kShiftsBytes = 16 * (16384 + 16);

/// Two arrays of scratch for launches of `opt`: device memory kept per stream for the GPU (allocated on
/// the stream's first call that needs it, then reused: launches on one stream run in order), host memory
/// kept per thread for the interpreter (it runs on the calling thread). The device memory lives until
/// the process ends.
struct Workspace {
  Arg first, second;
};

/// `count` f32 partials per array (count <= workspace_partials of the target).
Workspace workspace(const RowOptions& opt, std::int64_t count);

/// `count` elements of `dtype` per array (at most kShiftsBytes), 16-byte aligned.
Workspace shifts_workspace(const RowOptions& opt, ir::DType dtype, std::int64_t count);

}  // namespace tilefuse::kernels
