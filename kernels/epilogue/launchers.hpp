// The epilogue launchers: epilogue.cpp (fused, with the checks and the public entry points) and
// unfused.cpp (the four-kernel baseline), each compiled once for f32, f16 and bf16. Internal to the kernels
// library.
#pragma once

#include <initializer_list>
#include <utility>

#include "kernels/epilogue/epilogue.hpp"
#include "kernels/rows/launch.hpp"

namespace tilefuse::kernels::epilogue_launch {

using Args = detail::EpilogueArgs;

/// Throws unless the named matrices, the bias and the dropout probability fit the call.
void check(const RowCall& call, const Args& a, std::initializer_list<std::pair<const char*, const Arg*>> matrices);

void fused(const RowCall& call, const Args& a);
void unfused(const RowCall& call, const Args& a, const Arg& t1, const Arg& t2);

}  // namespace tilefuse::kernels::epilogue_launch
