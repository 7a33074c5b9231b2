// The sample kernels' programs exactly as a launch would run them (kernels::*_programs), for tests that
// read their IR, generated code or compile reports. Traced for the interpreter's target, so no GPU is
// needed.
#pragma once

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::test {

inline const kernels::RowOptions kInterpreter{Backend::interpreter};

/// The one-program softmax for rows of `cols` elements of `dtype`.
inline const Program& softmax_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::softmax_programs(kernels::RowVariant::one_program, dtype, cols, kInterpreter).at(0);
}

/// The one-program LayerNorm for rows of `cols` elements of `dtype`.
inline const Program& layernorm_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::layernorm_programs(kernels::RowVariant::one_program, dtype, cols, kInterpreter).at(0);
}

}  // namespace tilefuse::test
