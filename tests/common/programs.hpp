// The sample kernels' programs exactly as a launch would run them (kernels::*_programs), for tests that
// read their IR, generated code or compile reports. Traced for the interpreter's target, so no GPU is
// needed.
#pragma once

#include "dsl/tl.hpp"
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

/// Each program's sum and max of its 32 elements of `in`, combined over its cluster or resident group,
/// written to out[2 pid] and out[2 pid + 1] (the cluster and resident-group tests).
inline void group_total_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out) {
  auto pid = tl::program_id(0);
  auto x = tl::load(in + pid * 32 + tl::arange<32>());
  auto total = tl::cluster_sum(tl::sum(x));
  auto top = tl::cluster_max(tl::max(x));
  tl::store(out + pid * 2, total);
  tl::store(out + pid * 2 + 1, top);
}

/// KernelOptions of group_total_program over resident groups: one warp per program.
inline KernelOptions resident_group_options() {
  KernelOptions o{1, {"in", "out"}};
  o.resident_groups = true;
  return o;
}

}  // namespace tilefuse::test
