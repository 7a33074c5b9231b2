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
