// The normalization launchers, one file per variant (one_program.cpp with the one-pass baseline and
// RMSNorm, looped.cpp with the split-row pair, cluster.cpp, staged.cpp), each compiled once for f32, f16
// and bf16; variants.cpp holds the variant table and dispatches to them. Internal to the kernels library.
#pragma once

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/rows/launch.hpp"

namespace tilefuse::kernels::layernorm_launch {

using Args = detail::NormArgs;

/// Column piece of the looped and split-row kernels.
inline constexpr int kLoopBlock = 4096;

/// Whether LayerNorm reads rows that are not whole vectors through aligned windows unless Tuning::peel says
/// otherwise: no. Through a window, x and y move 16 bytes at a time but w and b, off the window's boundary,
/// go element by element with each thread's elements 16 bytes apart (measured on the H200, 2026-12-01,
/// 1803645 x 47 bf16: 320 us through windows, 251 us element by element with neighbouring threads on
/// neighbouring elements).
inline constexpr bool kNormPeelRule = false;

/// Whether LayerNorm holds narrow rows several per program unless Tuning::pack_rows says otherwise: no.
/// One row per one-warp program (8 to a thread block) measured faster (H200, 2026-12-01: 78091 x 136 f16
/// 23.5 us against 28.1 us packed; the sweep's aligned narrow rows 0.70 x copy unpacked, 0.56 packed).
inline constexpr bool kNormPackRule = false;

/// Parameter names of the kernels that take (x, w, b, y, mean, rstd, stride, n, eps).
inline constexpr const char* kParams[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps"};

/// Checks the operands every LayerNorm variant takes.
void check_layernorm(const RowCall& call, const Args& a);

void one_program(const RowCall& call, const Args& a);
void rmsnorm(const RowCall& call, const Args& a);
void looped(const RowCall& call, const Args& a);
void split(const RowCall& call, const Args& a);
void cluster(const RowCall& call, const Args& a);
void staged(const RowCall& call, const Args& a);

}  // namespace tilefuse::kernels::layernorm_launch
