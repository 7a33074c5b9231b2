// The looped LayerNorm (one program per row looping over it, shifted sums in one pass, then normalize)
// and the split-row pair (partial sums, then combine and normalize), for f32, f16 and bf16.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"
#include "kernels/rows/workspace.hpp"

namespace tilefuse::kernels::layernorm_launch {

void looped(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const Arg n = i32(call.cols);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    const KernelShape shape = looped_shape(call.opt.tuning, kLoopBlock);
    Program& p = peeled(call.opt.tuning, call.cols, element_bytes_of<T>(), kNormPeelRule)
                     ? kernel_for<&layernorm_looped_program<T, kLoopBlock, true>>(shape, [] { return std::string("layernorm_looped_peeled"); }, kParams)
                     : kernel_for<&layernorm_looped_program<T, kLoopBlock>>(shape, [] { return std::string("layernorm_looped"); }, kParams);
    launch(call, p, Grid(call.rows), std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps)});
  });
}

void split(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  // splits = 0: the automatic choice's plan, with the library's workspace; else the caller's splits and
  // scratch, in one launch pair.
  SplitPlan plan{a.splits, call.rows};
  Arg partial_s1 = a.partial_s1, partial_s2 = a.partial_s2;
  if (a.splits == 0) {
    plan = split_plan(call.target(), call.rows, call.cols, ir::dtype_bytes(a.x.dtype), kLoopBlock, kNormMaxSplits);
    const Workspace ws = workspace(call.opt, plan.group * plan.splits);
    partial_s1 = ws.first;
    partial_s2 = ws.second;
  } else {
    split_row_chunk(call.entry, call.cols, a.splits, kNormMaxSplits, kLoopBlock);  // checks splits
    check_vector(call, "scratch.partial_s1", a.partial_s1, call.rows * a.splits);
    check_vector(call, "scratch.partial_s2", a.partial_s2, call.rows * a.splits);
  }
  const Arg n = i32(call.cols);
  const KernelShape shape = looped_shape(call.opt.tuning, kLoopBlock);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    // Rows that are not whole vectors: the chunks split each row's aligned window.
    const bool peel = peeled(call.opt.tuning, call.cols, element_bytes_of<T>(), kNormPeelRule);
    const Arg c = i32(split_row_chunk(call.entry, peel ? window_cols(call.cols, element_bytes_of<T>()) : call.cols, plan.splits,
                                      kNormMaxSplits, kLoopBlock));
    static constexpr const char* partial_params[] = {"x", "partial_s1", "partial_s2", "stride", "n", "chunk", "first_row"};
    Program& partials = peel ? kernel_for<&layernorm_partials_program<T, kLoopBlock, true>>(
                                   shape, [] { return std::string("layernorm_partials_peeled"); }, partial_params)
                             : kernel_for<&layernorm_partials_program<T, kLoopBlock>>(
                                   shape, [] { return std::string("layernorm_partials"); }, partial_params);
    with_block<kNormMaxSplits>(plan.splits, [&]<int SB>() {
      static constexpr const char* combine_params[] = {"x", "w", "b", "y", "mean", "rstd", "partial_s1", "partial_s2",
                                                       "stride", "n", "chunk", "eps", "first_row"};
      Program& combine = peel ? kernel_for<&layernorm_combine_program<T, kLoopBlock, SB, true>>(
                                    shape, [] { return "layernorm_combine_peeled_" + std::to_string(SB); }, combine_params)
                              : kernel_for<&layernorm_combine_program<T, kLoopBlock, SB>>(
                                    shape, [] { return "layernorm_combine_" + std::to_string(SB); }, combine_params);
      for (std::int64_t first = 0; first < call.rows; first += plan.group) {
        const Grid grid(std::min(plan.group, call.rows - first), plan.splits);
        launch(call, partials, grid, std::array{a.x, partial_s1, partial_s2, n, n, c, i32(first)});
        launch(call, combine, grid,
               std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, partial_s1, partial_s2, n, n, c, Arg::of_f32(a.eps), i32(first)});
      }
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
