// The looped LayerNorm (one program per row looping over it, or a cluster of programs per row,
// looped_cluster; shifted sums in one pass, then normalize) and the split-row pair (partial sums, then
// combine and normalize), for f32, f16 and bf16.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

namespace {
// The looped LayerNorm over clusters of programs (`c`, more than one program a row), w and b from
// shifted copies where the one-program-per-row kernel would take them; or over resident groups of them
// (c.shape.groups: the same program, its cluster reductions through global memory, a cooperative launch,
// which cannot overlap the copies' kernel).
void looped_cluster_launch(const RowCall& call, const Args& a, const LoopedCluster& c, bool peel) {
  const Arg n = i32(call.cols);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps", "chunk", "splits", "rows", "copy_stride"};
    const bool shifted = peel && !c.shape.groups && shifted_affine(call.opt.tuning, call.rows, element_bytes_of<T>());
    auto name = [&] {
      return (c.shape.groups ? std::string("layernorm_looped_groups") : "layernorm_looped_cluster" + std::to_string(c.splits)) +
             (shifted ? "_shifted" : peel ? "_peeled" : "");
    };
    Program& p = shifted ? kernel_for<&layernorm_looped_cluster_program<T, kLoopBlock, true, true>>(c.shape, name, params)
                 : peel  ? kernel_for<&layernorm_looped_cluster_program<T, kLoopBlock, true>>(c.shape, name, params)
                         : kernel_for<&layernorm_looped_cluster_program<T, kLoopBlock>>(c.shape, name, params);
    const Arg chunk = i32(c.chunk), splits = i32(c.splits), rows = i32(call.rows);
    if (shifted) {
      LaunchChain chain(call);
      const ShiftedAffine wb = launch_shifted_affine(call, a, chain);
      const auto args = std::array{a.x, wb.w, wb.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps), chunk, splits, rows, wb.copy_stride};
      chain(p, Grid(looped_cluster_programs(call, c, element_bytes_of<T>(), p, args)), args);
      return;
    }
    const auto args = std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps), chunk, splits, rows, i32(0)};
    launch(call, p, Grid(looped_cluster_programs(call, c, element_bytes_of<T>(), p, args)), args, c.shape.groups ? c.splits : 1);
  });
}
}  // namespace

void looped(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const int bytes = ir::dtype_bytes(a.x.dtype);
  const bool peel = norm_peeled(call.opt.tuning, call.cols, bytes);
  if (const LoopedCluster c = looped_cluster(call, bytes, peel, kLoopBlock); c.splits > 1) return looped_cluster_launch(call, a, c, peel);
  const Arg n = i32(call.cols);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    const KernelShape shape = looped_shape(call.opt.tuning, kLoopBlock);
    // Rows through windows, enough of them: w and b from their shifted copies, written just before.
    if (peel && shifted_affine(call.opt.tuning, call.rows, element_bytes_of<T>())) {
      static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps", "copy_stride"};
      LaunchChain chain(call);
      const ShiftedAffine wb = launch_shifted_affine(call, a, chain);
      chain(kernel_for<&layernorm_looped_shifted_program<T, kLoopBlock>>(shape, [] { return std::string("layernorm_looped_shifted"); }, params),
            Grid(call.rows), std::array{a.x, wb.w, wb.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps), wb.copy_stride});
      return;
    }
    Program& p = peel
                     ? kernel_for<&layernorm_looped_program<T, kLoopBlock, true>>(shape, [] { return std::string("layernorm_looped_peeled"); }, kParams)
                     : kernel_for<&layernorm_looped_program<T, kLoopBlock>>(shape, [] { return std::string("layernorm_looped"); }, kParams);
    launch(call, p, Grid(call.rows), std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps)});
  });
}

int split_combine_rows_run(const SplitPlan& plan, std::int64_t rows, std::int64_t cols, int element_bytes, const Tuning& tuning) {
  const int step = norm_peeled(tuning, cols, element_bytes) ? 16 / element_bytes : 1;
  const std::int64_t last_group = rows - (rows - 1) / plan.group * plan.group;  // the smallest
  return split_combine_rows(tuning, plan.group, last_group, step);
}

void split(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const SplitPartials p = split_partials(call, a.splits, a.partial_s1, a.partial_s2, "scratch.partial_s1", "scratch.partial_s2",
                                        ir::dtype_bytes(a.x.dtype), kNormMaxSplits, kLoopBlock);
  const SplitPlan& plan = p.plan;
  const Arg n = i32(call.cols);
  const KernelShape shape = split_shape(call.opt.tuning, kLoopBlock);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    // Rows that are not whole vectors: the chunks split each row's aligned window.
    const bool peel = norm_peeled(call.opt.tuning, call.cols, element_bytes_of<T>());
    const Arg c = i32(split_row_chunk(call.entry, peel ? window_cols(call.cols, element_bytes_of<T>()) : call.cols, plan.splits,
                                      kNormMaxSplits, kLoopBlock));
    static constexpr const char* partial_params[] = {"x", "partial_s1", "partial_s2", "stride", "n", "chunk", "first_row"};
    Program& partials = peel ? kernel_for<&layernorm_partials_program<T, kLoopBlock, true>>(
                                   shape, [] { return std::string("layernorm_partials_peeled"); }, partial_params)
                             : kernel_for<&layernorm_partials_program<T, kLoopBlock>>(
                                   shape, [] { return std::string("layernorm_partials"); }, partial_params);
    // Rows a combine program normalizes: those of a group whose windows share an offset share w and b.
    const int step = peel ? kVectorElements<T> : 1;
    const int rows = split_combine_rows_run(plan, call.rows, call.cols, element_bytes_of<T>(), call.opt.tuning);
    with_block<kNormMaxSplits>(plan.splits, [&]<int SB>() {
      LaunchChain chain(call);
      // Each group's partials, then its combine kernel: `combine(first, grid)` launches the latter.
      auto pairs = [&](auto&& combine) {
        for_each_group(call, plan, [&](std::int64_t first, Grid grid) {
          chain(partials, grid, std::array{a.x, p.first, p.second, n, n, c, i32(first)});
          combine(first, grid);
        });
      };
      if (rows == 1) {
        static constexpr const char* combine_params[] = {"x", "w", "b", "y", "mean", "rstd", "partial_s1", "partial_s2",
                                                         "stride", "n", "chunk", "eps", "first_row"};
        Program& combine = peel ? kernel_for<&layernorm_combine_program<T, kLoopBlock, SB, true>>(
                                      shape, [] { return "layernorm_combine_peeled_" + std::to_string(SB); }, combine_params)
                                : kernel_for<&layernorm_combine_program<T, kLoopBlock, SB>>(
                                      shape, [] { return "layernorm_combine_" + std::to_string(SB); }, combine_params);
        pairs([&](std::int64_t first, Grid grid) {
          chain(combine, grid, std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, p.first, p.second, n, n, c, Arg::of_f32(a.eps), i32(first)});
        });
        return;
      }
      // `rows` rows a program, each over 1/rows of the chunk the partials took, so that a program moves
      // about what one of a row did and the launch keeps about as many programs.
      const std::int64_t width = peel ? window_cols(call.cols, element_bytes_of<T>()) : call.cols;
      const std::int64_t combine_chunk = split_row_chunk(call.entry, width, plan.splits * rows, kNormMaxSplits * 4, kLoopBlock);
      const std::int64_t parts = (width + combine_chunk - 1) / combine_chunk;
      static constexpr const char* rows_params[] = {"x", "w", "b", "y", "mean", "rstd", "partial_s1", "partial_s2", "stride",
                                                    "n", "chunk", "eps", "first_row", "group_rows", "splits"};
      const Arg combine_c = i32(combine_chunk), splits = i32(plan.splits);
      auto launch_rows = [&]<int ROWS>() {
        Program& combine = peel ? kernel_for<&layernorm_combine_rows_program<T, kLoopBlock, SB, ROWS, true>>(
                                      shape, [] { return "layernorm_combine" + std::to_string(ROWS) + "_rows_peeled_" + std::to_string(SB); }, rows_params)
                                : kernel_for<&layernorm_combine_rows_program<T, kLoopBlock, SB, ROWS>>(
                                      shape, [] { return "layernorm_combine" + std::to_string(ROWS) + "_rows_" + std::to_string(SB); }, rows_params);
        pairs([&](std::int64_t first, Grid grid) {
          chain(combine, Grid(split_combine_programs(grid.x, step, ROWS), parts),
                std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, p.first, p.second, n, n, combine_c, Arg::of_f32(a.eps), i32(first),
                           i32(grid.x), splits});
        });
      };
      if (rows == 4) launch_rows.template operator()<4>();
      else launch_rows.template operator()<2>();
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
