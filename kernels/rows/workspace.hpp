// The scratch of the automatic choice's split-row launches: f32 partials per (row, split), which the
// library keeps so that a call on the hot path never allocates. Callers who want to own the scratch call
// the split-row launchers (softmax_split, layernorm_split) with their own.
#pragma once

#include <cstdint>

#include "backend/runtime/args.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::kernels {

/// Most f32 partials one automatic split-row launch holds, per array, on a GPU of `sm_count` SMs: room
/// for 64 programs per SM (Tuning::split_programs_per_sm at its largest; the rule asks for 4), groups
/// shrink to fit past it (split_plan).
std::int64_t workspace_partials(int sm_count);

/// Two arrays of `count` f32 partials each (count <= workspace_partials of the target) for launches of
/// `opt`: device memory kept per stream for the GPU (allocated on the stream's first split-row call, then
/// reused: launches on one stream run in order), host memory kept per thread for the interpreter (it runs
/// on the calling thread). The device memory lives until the process ends.
struct Workspace {
  Arg first, second;
};
Workspace workspace(const RowOptions& opt, std::int64_t count);

/// `count` elements of `dtype` (256-byte aligned) for one call's working copies on opt's stream (the
/// LayerNorm's shifted copies of w and b): device memory kept per stream and grown as calls need it (a
/// larger request gets new memory; the old stays allocated until the process ends, since launches still
/// on the stream may read it), host memory per thread for the interpreter. Calls on one stream run in
/// order, so each may reuse what the call before it wrote.
Arg scratch_elements(const RowOptions& opt, ir::DType dtype, std::int64_t count);

}  // namespace tilefuse::kernels
