// The softmax launchers, one file per variant (one_program.cpp, unfused.cpp for the five-kernel baseline,
// looped.cpp with the split-row pair, cluster.cpp, staged.cpp), each compiled once for f32, f16 and bf16;
// variants.cpp holds the variant table and dispatches to them. Internal to the kernels library.
#pragma once

#include "kernels/rows/launch.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::kernels::softmax_launch {

using Args = detail::SoftmaxArgs;

/// Column piece of the looped and split-row kernels: 4096 elements (16 per thread at 8 warps).
inline constexpr int kLoopBlock = 4096;

/// Shared memory per program of the staged softmax unless Tuning::stage_bytes says otherwise: 32 KB (a
/// row wider than that goes over a cluster, staged_plan).
inline constexpr std::int64_t kStageBytes = 32768;

/// Threads per SM the one-program kernel asks room for when it reads rows through a window (unless
/// Tuning::resident_threads says otherwise): as many as leave each thread the registers of the kernel
/// for whole-vector rows, 64 for f16/bf16 (1024 threads) and 40 for f32 (1536). The window's masks held
/// as bits took 45 to 72 registers, which cost the 512-thread f32 programs one program of three per SM
/// and 0.07 x copy (H200, 2026-12-03, 616 x 7375). Only a wish: where ptxas would spill to meet it, the
/// kernel compiles without it (KernelOptions::min_programs_unless_spilling).
inline constexpr int kSoftmaxPeeledResidentHalf = 1024;
inline constexpr int kSoftmaxPeeledResidentF32 = 1536;

/// Throws unless rows fit one program (the one-program kernel and the unfused baseline).
void check_cols(const RowCall& call);

void one_program(const RowCall& call, const Args& a);
void unfused(const RowCall& call, const Args& a, const Arg (&scratch)[4]);
void looped(const RowCall& call, const Args& a);
void split(const RowCall& call, const Args& a);
void cluster(const RowCall& call, const Args& a);
void staged(const RowCall& call, const Args& a);
void resident(const RowCall& call, const Args& a);

}  // namespace tilefuse::kernels::softmax_launch
