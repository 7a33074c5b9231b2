// The device helpers generated kernels start with, as text: embedded by the build from the .cuh files in
// backend/codegen/prelude/ (real CUDA sources an editor highlights), emitted by the generator as needed.
#pragma once

namespace tilefuse::codegen::prelude {

/// Every kernel: f16/bf16 conversions, fast exp and division, vector loads and stores with cache hints.
extern const char* const core;
/// Kernels that draw random numbers: Philox4x32-10.
extern const char* const rand;
/// Kernels with cluster reductions: cluster barriers and distributed shared memory reads.
extern const char* const cluster;
/// Kernels whose cluster reductions go through resident groups: the global-memory barrier and combine.
extern const char* const group;
/// Kernels that copy into stages: cp.async and its wait.
extern const char* const copy;
/// Kernels with dot: ldmatrix, mma.sync and 16-byte asynchronous copies in commit groups.
extern const char* const mma;
/// Kernels whose dots run on sm_90's warpgroup MMA: descriptors, fences, commit and wait.
extern const char* const wgmma;
/// Kernels whose pipelined loads are TMA copies (sm_90): the tensor map type, mbarriers, the bulk copy.
extern const char* const tma;
/// Kernels that order themselves against their stream's neighbours: griddepcontrol wait and launch.
extern const char* const grid;
/// Kernels compiled with bounds checks (TILEFUSE_DEBUG_BOUNDS=1): the check and its fault record.
extern const char* const bounds;

}  // namespace tilefuse::codegen::prelude
