// The looped softmax (one program per row looping over it, online max and sum; or a cluster of programs
// per row, looped_cluster) and the split-row pair (partials, then combine and normalize), for f32, f16
// and bf16.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

namespace {
// The looped softmax over clusters of programs (`c`, more than one program a row), or over resident
// groups of them (c.shape.groups: the same program, its cluster reductions through global memory).
void looped_cluster_launch(const RowCall& call, const Args& a, const LoopedCluster& c, bool peel) {
  const Arg n = i32(call.cols);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    static constexpr const char* params[] = {"in", "out", "stride", "n_cols", "chunk", "splits", "rows"};
    auto name = [&] {
      return (c.shape.groups ? std::string("softmax_looped_groups") : "softmax_looped_cluster" + std::to_string(c.splits)) +
             (peel ? "_peeled" : "");
    };
    Program& p = peel ? kernel_for<&softmax_looped_cluster_program<T, kLoopBlock, true>>(c.shape, name, params)
                      : kernel_for<&softmax_looped_cluster_program<T, kLoopBlock>>(c.shape, name, params);
    const auto args = std::array{a.in, a.out, n, n, i32(c.chunk), i32(c.splits), i32(call.rows)};
    launch(call, p, Grid(looped_cluster_programs(call, c, element_bytes_of<T>(), p, args)), args, c.shape.groups ? c.splits : 1);
  });
}
}  // namespace

void looped(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const int bytes = ir::dtype_bytes(a.in.dtype);
  const bool peel = peeled(call.opt.tuning, call.cols, bytes);
  if (const LoopedCluster c = looped_cluster(call, bytes, peel, kLoopBlock); c.splits > 1) return looped_cluster_launch(call, a, c, peel);
  const Arg n = i32(call.cols);
  const std::int64_t programs = strided_row_programs(call.rows, call.opt);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    static constexpr const char* params[] = {"in", "out", "stride", "n_cols", "rows"};
    const KernelShape shape = looped_shape(call.opt.tuning, kLoopBlock);
    Program& p = peel ? kernel_for<&softmax_looped_program<T, kLoopBlock, true>>(shape, [] { return std::string("softmax_looped_peeled"); }, params)
                      : kernel_for<&softmax_looped_program<T, kLoopBlock>>(shape, [] { return std::string("softmax_looped"); }, params);
    launch(call, p, Grid(programs), std::array{a.in, a.out, n, n, i32(call.rows)});
  });
}

void split(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const SplitPartials p = split_partials(call, a.splits, a.partial_max, a.partial_sum, "scratch.partial_max", "scratch.partial_sum",
                                        ir::dtype_bytes(a.in.dtype), kSoftmaxMaxSplits, kLoopBlock);
  const SplitPlan& plan = p.plan;
  const Arg n = i32(call.cols);
  const KernelShape shape = split_shape(call.opt.tuning, kLoopBlock);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    // Rows that are not whole vectors: the chunks split each row's aligned window.
    const bool peel = peeled(call.opt.tuning, call.cols, element_bytes_of<T>());
    const Arg c = i32(split_row_chunk(call.entry, peel ? window_cols(call.cols, element_bytes_of<T>()) : call.cols, plan.splits,
                                      kSoftmaxMaxSplits, kLoopBlock));
    static constexpr const char* partial_params[] = {"in", "partial_max", "partial_sum", "stride", "n_cols", "chunk", "first_row"};
    Program& partials = peel ? kernel_for<&softmax_partials_program<T, kLoopBlock, true>>(
                                   shape, [] { return std::string("softmax_partials_peeled"); }, partial_params)
                             : kernel_for<&softmax_partials_program<T, kLoopBlock>>(
                                   shape, [] { return std::string("softmax_partials"); }, partial_params);
    with_block<kSoftmaxMaxSplits>(plan.splits, [&]<int SB>() {
      static constexpr const char* combine_params[] = {"in", "out", "partial_max", "partial_sum", "stride", "n_cols", "chunk", "first_row"};
      Program& combine = peel ? kernel_for<&softmax_combine_program<T, kLoopBlock, SB, true>>(
                                    shape, [] { return "softmax_combine_peeled_" + std::to_string(SB); }, combine_params)
                              : kernel_for<&softmax_combine_program<T, kLoopBlock, SB>>(
                                    shape, [] { return "softmax_combine_" + std::to_string(SB); }, combine_params);
      LaunchChain chain(call);
      for_each_group(call, plan, [&](std::int64_t first, Grid grid) {
        chain(partials, grid, std::array{a.in, p.first, p.second, n, n, c, i32(first)});
        chain(combine, grid, std::array{a.in, a.out, p.first, p.second, n, n, c, i32(first)});
      });
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
