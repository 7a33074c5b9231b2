// The staged softmax: a row (or, in a cluster of up to 8 programs on sm_90, a piece of it) copied into
// shared memory once and read back by three passes, for f32, f16 and bf16 and every stage size.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

void staged(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const int bytes = ir::dtype_bytes(a.in.dtype);
  // Rows that are not whole vectors: each chunk copied from the vector boundary before it.
  const StagedPlan plan = staged_plan(call, a.splits, bytes, 32768, peeled(call.opt.tuning, call.cols, bytes), "kernels::softmax_looped");
  const ClusterSplit& split = plan.split;
  const bool peel = plan.peel;
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    with_stage(plan.stage_cols, [&]<int STAGE>() {
      static constexpr const char* params[] = {"in", "out", "stride", "n_cols", "chunk", "splits"};
      // Two warps per program (measured against one, four and eight: bench/NOTES.md, staged softmax).
      KernelShape shape = staged_shape(call.opt.tuning, STAGE * element_bytes_of<T>(), 2);
      shape.cluster = static_cast<int>(split.splits);
      auto name = [&] { return "softmax_staged" + std::to_string(split.splits) + "_" + std::to_string(STAGE) + (peel ? "_peeled" : ""); };
      Program& p = peel ? kernel_for<&softmax_staged_program<T, STAGE, kStagePiece, true>>(shape, name, params)
                        : kernel_for<&softmax_staged_program<T, STAGE, kStagePiece>>(shape, name, params);
      launch(call, p, Grid(call.rows * split.splits), std::array{a.in, a.out, n, n, chunk, splits});
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
