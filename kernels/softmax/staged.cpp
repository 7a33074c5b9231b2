// The staged softmax: a row (or, in a cluster of up to 8 programs on sm_90, a piece of it) copied into
// shared memory once and read back by three passes, for f32, f16 and bf16 and every stage size, one row
// per program (or cluster) or, with Tuning::stride_stages, programs striding over rows through two stages;
// and the resident one, the same programs over groups of co-resident programs of any size (a launch per
// wave of rows, or with Tuning::stride_stages one launch whose groups stride over the rows).
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

namespace {
constexpr const char* kStagedParams[] = {"in", "out", "stride", "n_cols", "chunk", "splits", "first_row"};

constexpr const char* kStridedParams[] = {"in", "out", "stride", "n_cols", "chunk", "splits", "n_rows"};

// The staged program for `plan` and `shape` (its cluster or resident groups set), named `stem`.
template <class T, int STAGE>
Program& staged_program(const char* stem, const StagedPlan& plan, const KernelShape& shape) {
  auto name = [&] { return stem + std::to_string(plan.split.splits) + "_" + std::to_string(STAGE) + (plan.peel ? "_peeled" : ""); };
  return plan.peel ? kernel_for<&softmax_staged_program<T, STAGE, kStagePiece, true>>(shape, name, kStagedParams)
                   : kernel_for<&softmax_staged_program<T, STAGE, kStagePiece>>(shape, name, kStagedParams);
}

// The strided staged program (Tuning::stride_stages) for `plan` and `shape`, named `stem`.
template <class T, int STAGE>
Program& strided_program(const char* stem, const StagedPlan& plan, const KernelShape& shape) {
  auto name = [&] { return stem + std::to_string(plan.split.splits) + "_" + std::to_string(STAGE) + (plan.peel ? "_peeled" : ""); };
  return plan.peel ? kernel_for<&softmax_staged_strided_program<T, STAGE, kStagePiece, true>>(shape, name, kStridedParams)
                   : kernel_for<&softmax_staged_strided_program<T, STAGE, kStagePiece>>(shape, name, kStridedParams);
}
}  // namespace

void staged(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const int bytes = ir::dtype_bytes(a.in.dtype);
  // Rows that are not whole vectors: each chunk copied from the vector boundary before it.
  const StagedPlan plan = staged_plan(call, a.splits, bytes, kStageBytes, peeled(call.opt.tuning, call.cols, bytes), "kernels::softmax_looped");
  const Arg n = i32(call.cols), chunk = i32(plan.split.chunk), splits = i32(plan.split.splits);
  const bool strided = call.opt.tuning.stride_stages.value_or(false);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    // Clusters past 8 programs (Tuning::staged_cluster) take stages of up to kClusterStageMaxCols.
    with_stage<kClusterStageMaxCols>(plan.stage_cols, [&]<int STAGE>() {
      // Strided programs hold two stages each: as many programs an SM as those leave room for.
      const std::int64_t program_bytes = (strided ? 2 : 1) * STAGE * element_bytes_of<T>();
      KernelShape shape = staged_shape(call.opt.tuning, program_bytes, staged_warps_rule(plan.peel));
      shape.cluster = static_cast<int>(plan.split.splits);
      if (strided) {
        Program& p = strided_program<T, STAGE>("softmax_staged_strided", plan, shape);
        const auto args = std::array{a.in, a.out, n, n, chunk, splits, i32(call.rows)};
        launch(call, p, Grid(strided_programs(call, shape, static_cast<int>(plan.split.splits), &p, args)), args);
      } else {
        launch(call, staged_program<T, STAGE>("softmax_staged", plan, shape), Grid(call.rows * plan.split.splits),
               std::array{a.in, a.out, n, n, chunk, splits, i32(0)});
      }
    });
  });
}

void resident(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const int bytes = ir::dtype_bytes(a.in.dtype);
  const StagedPlan plan = resident_plan(call, bytes, kStageBytes, peeled(call.opt.tuning, call.cols, bytes));
  const Arg n = i32(call.cols), chunk = i32(plan.split.chunk), splits = i32(plan.split.splits);
  const bool strided = call.opt.tuning.stride_stages.value_or(false);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    with_stage(plan.stage_cols, [&]<int STAGE>() {
      // Strided programs hold two stages each.
      const std::int64_t program_bytes = (strided ? 2 : 1) * STAGE * element_bytes_of<T>();
      KernelShape shape = staged_shape(call.opt.tuning, program_bytes, 2);
      shape.groups = true;
      const std::int64_t wave = resident_wave_rows(call, shape, program_bytes, plan.split.splits, "kernels::softmax_split");
      if (strided) {  // one launch: the groups resident at once stride over the rows
        const auto args = std::array{a.in, a.out, n, n, chunk, splits, i32(call.rows)};
        launch(call, strided_program<T, STAGE>("softmax_resident_strided", plan, shape),
               Grid(std::min(wave, call.rows) * plan.split.splits), args, plan.split.splits);
        return;
      }
      Program& p = staged_program<T, STAGE>("softmax_resident", plan, shape);
      for (std::int64_t first = 0; first < call.rows; first += wave)
        launch(call, p, Grid(std::min(wave, call.rows - first) * plan.split.splits),
               std::array{a.in, a.out, n, n, chunk, splits, i32(first)}, plan.split.splits);
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
