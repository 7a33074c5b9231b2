// The staged LayerNorm: a row (or, in a cluster of up to 8 programs on sm_90, a chunk of it) copied into
// shared memory once and read back by three passes (exactly two-pass statistics), for f32, f16 and bf16
// and every stage size; rows that are not whole vectors through their aligned windows (w and b from
// shifted copies where shifted_affine says); with Tuning::stride_stages, programs striding over rows
// through two stages. And the resident one: the same programs over groups of co-resident programs of any
// size (a launch per wave of rows, or with Tuning::stride_stages one launch whose groups stride over rows).
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

namespace {
constexpr const char* kStagedParams[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps", "first_row"};

constexpr const char* kStridedParams[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps", "n_rows"};

// The staged program for `plan` and `shape` (its cluster or resident groups set), named `stem`.
template <class T, int STAGE>
Program& staged_program(const char* stem, const StagedPlan& plan, const KernelShape& shape) {
  auto name = [&] { return stem + std::to_string(plan.split.splits) + "_" + std::to_string(STAGE) + (plan.peel ? "_peeled" : ""); };
  return plan.peel ? kernel_for<&layernorm_staged_program<T, STAGE, kStagePiece, true>>(shape, name, kStagedParams)
                   : kernel_for<&layernorm_staged_program<T, STAGE, kStagePiece>>(shape, name, kStagedParams);
}

// The strided staged program (Tuning::stride_stages) for `plan` and `shape`, named `stem`.
template <class T, int STAGE>
Program& strided_program(const char* stem, const StagedPlan& plan, const KernelShape& shape) {
  auto name = [&] { return stem + std::to_string(plan.split.splits) + "_" + std::to_string(STAGE) + (plan.peel ? "_peeled" : ""); };
  return plan.peel ? kernel_for<&layernorm_staged_strided_program<T, STAGE, kStagePiece, true>>(shape, name, kStridedParams)
                   : kernel_for<&layernorm_staged_strided_program<T, STAGE, kStagePiece>>(shape, name, kStridedParams);
}
}  // namespace

void staged(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const int bytes = ir::dtype_bytes(a.x.dtype);
  // Rows that are not whole vectors (LayerNorm's rule, norm_peeled): each chunk copied from the vector
  // boundary before it.
  const StagedPlan plan =
      staged_plan(call, a.splits, bytes, kNormStageBytes, norm_peeled(call.opt.tuning, call.cols, bytes), "kernels::layernorm_looped");
  const Arg n = i32(call.cols), chunk = i32(plan.split.chunk), splits = i32(plan.split.splits);
  const bool strided = call.opt.tuning.stride_stages.value_or(false);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    // Clusters past 8 programs (Tuning::staged_cluster) take stages of up to kClusterStageMaxCols.
    with_stage<kClusterStageMaxCols>(plan.stage_cols, [&]<int STAGE>() {
      // Strided programs hold two stages each: as many programs an SM as those leave room for.
      const std::int64_t program_bytes = (strided ? 2 : 1) * STAGE * element_bytes_of<T>();
      KernelShape shape = staged_shape(call.opt.tuning, program_bytes, staged_warps_rule(plan.peel));
      shape.cluster = static_cast<int>(plan.split.splits);
      if (strided) {  // (w and b as they are: the shifted copies' wait does not fit a loop over rows)
        Program& p = strided_program<T, STAGE>("layernorm_staged_strided", plan, shape);
        const auto args = std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps), i32(call.rows)};
        launch(call, p, Grid(strided_programs(call, shape, static_cast<int>(plan.split.splits), &p, args)), args);
        return;
      }
      const Grid grid(call.rows * plan.split.splits);
      // Rows through windows, enough of them: w and b from their shifted copies, written just before.
      if (plan.peel && shifted_affine(call.opt.tuning, call.rows, element_bytes_of<T>())) {
        static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps", "first_row", "copy_stride"};
        LaunchChain chain(call);
        const ShiftedAffine wb = launch_shifted_affine(call, a, chain);
        auto name = [&] { return "layernorm_staged_shifted" + std::to_string(plan.split.splits) + "_" + std::to_string(STAGE); };
        chain(kernel_for<&layernorm_staged_shifted_program<T, STAGE, kStagePiece>>(shape, name, params), grid,
              std::array{a.x, wb.w, wb.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps), i32(0), wb.copy_stride});
        return;
      }
      launch(call, staged_program<T, STAGE>("layernorm_staged", plan, shape), grid,
             std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps), i32(0)});
    });
  });
}

void resident(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const int bytes = ir::dtype_bytes(a.x.dtype);
  const StagedPlan plan = resident_plan(call, bytes, kNormStageBytes, norm_peeled(call.opt.tuning, call.cols, bytes));
  const Arg n = i32(call.cols), chunk = i32(plan.split.chunk), splits = i32(plan.split.splits);
  const bool strided = call.opt.tuning.stride_stages.value_or(false);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_stage(plan.stage_cols, [&]<int STAGE>() {
      // Strided programs hold two stages each.
      const std::int64_t program_bytes = (strided ? 2 : 1) * STAGE * element_bytes_of<T>();
      KernelShape shape = staged_shape(call.opt.tuning, program_bytes, 4);
      shape.groups = true;
      const std::int64_t wave = resident_wave_rows(call, shape, program_bytes, plan.split.splits, "kernels::layernorm_split");
      if (strided) {  // one launch: the groups resident at once stride over the rows
        const auto args = std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps), i32(call.rows)};
        launch(call, strided_program<T, STAGE>("layernorm_resident_strided", plan, shape),
               Grid(std::min(wave, call.rows) * plan.split.splits), args, plan.split.splits);
        return;
      }
      Program& p = staged_program<T, STAGE>("layernorm_resident", plan, shape);
      for (std::int64_t first = 0; first < call.rows; first += wave)
        launch(call, p, Grid(std::min(wave, call.rows - first) * plan.split.splits),
               std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps), i32(first)}, plan.split.splits);
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
