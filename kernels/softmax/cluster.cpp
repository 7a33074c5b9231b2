// The cluster softmax: a row wider than one program split over a thread-block cluster of up to 8
// programs (sm_90) that combine their max and sum through distributed shared memory, for f32, f16 and
// bf16.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

void cluster(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  const auto split = cluster_split(call.entry, "kernels::softmax_looped", call.rows, call.cols, 0, kSoftmaxClusterPieceCols);
  if (split.splits == 1) return one_program(call, a);
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    // Clusters of two or more programs hold more than 8192 columns each: only the 16384 tile is ever chosen.
    with_block<kSoftmaxClusterPieceCols, kSoftmaxClusterPieceCols>(split.chunk, [&]<int B>() {
      static constexpr const char* params[] = {"in", "out", "stride", "n_cols", "chunk", "splits"};
      // Room for three 512-thread programs per SM, at the price of a few bytes of spill (measured against two:
      // bench/NOTES.md, cluster kernels).
      KernelShape shape = row_shape(call.opt.tuning, element_bytes_of<T>(), B, 1536);
      shape.cluster = static_cast<int>(split.splits);
      Program& p = kernel_for<&softmax_cluster_program<T, B>>(
          shape, [&] { return "softmax_cluster" + std::to_string(split.splits) + "_" + std::to_string(B); }, params);
      launch(call, p, Grid(call.rows * split.splits), std::array{a.in, a.out, n, n, chunk, splits});
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
