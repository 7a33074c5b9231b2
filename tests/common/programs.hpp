// The sample kernels' programs exactly as a launch would run them (kernels::*_programs), for tests that
// read their IR, generated code or compile reports. Traced for the interpreter's target, so no GPU is
// needed.
#pragma once

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::test {

inline const kernels::RowOptions kInterpreter{Backend::interpreter};

/// kInterpreter with one row per program at every width (narrow rows are otherwise packed several to a
/// program as a 2D tile).
inline kernels::RowOptions one_row_per_program() {
  kernels::RowOptions opt = kInterpreter;
  opt.tuning.pack_rows = false;
  return opt;
}

/// The one-program softmax for rows of `cols` elements of `dtype`, one row per program.
inline const Program& softmax_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::softmax_programs(kernels::RowVariant::one_program, dtype, cols, one_row_per_program()).at(0);
}

/// The one-program LayerNorm for rows of `cols` elements of `dtype`, one row per program.
inline const Program& layernorm_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::layernorm_programs(kernels::RowVariant::one_program, dtype, cols, one_row_per_program()).at(0);
}

/// Whether LayerNorm `variant` (automatic: layernorm_auto's choice for `rows` rows of `cols` elements of
/// `element_bytes` on `backend`) reads each row twice: the looped and split kernels, whose one-pass
/// shifted variance allows 1e-4 on rstd where the two-pass kernels give 1e-5.
inline bool layernorm_reads_twice(kernels::RowVariant variant, std::int64_t rows, std::int64_t cols, int element_bytes, Backend backend) {
  if (variant == kernels::RowVariant::automatic) variant = kernels::layernorm_choice(rows, cols, element_bytes, {backend});
  return kernels::find_variant(kernels::layernorm_variants(), variant, "layernorm").reads == 2;
}

}  // namespace tilefuse::test
