// The staged LayerNorm: a row (or, in a cluster of up to 8 programs on sm_90, a chunk of it) copied into
// shared memory once and read back by three passes (exactly two-pass statistics), for f32, f16 and bf16
// and every stage size; rows that are not whole vectors through their aligned windows.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

void staged(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const int bytes = ir::dtype_bytes(a.x.dtype);
  // Rows that are not whole vectors (LayerNorm's rule, norm_peeled): each chunk copied from the vector
  // boundary before it.
  const StagedPlan plan =
      staged_plan(call, a.splits, bytes, kNormStageBytes, norm_peeled(call.opt.tuning, call.cols, bytes), "kernels::layernorm_looped");
  const ClusterSplit& split = plan.split;
  const bool peel = plan.peel;
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_stage(plan.stage_cols, [&]<int STAGE>() {
      static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps"};
      KernelShape shape = staged_shape(call.opt.tuning, STAGE * element_bytes_of<T>(), 4);
      shape.cluster = static_cast<int>(split.splits);
      auto name = [&] {
        return "layernorm_staged" + std::to_string(split.splits) + "_" + std::to_string(STAGE) + (peel ? "_peeled" : "");
      };
      Program& p = peel ? kernel_for<&layernorm_staged_program<T, STAGE, kStagePiece, true>>(shape, name, params)
                        : kernel_for<&layernorm_staged_program<T, STAGE, kStagePiece>>(shape, name, params);
      launch(call, p, Grid(call.rows * split.splits),
             std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps)});
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
