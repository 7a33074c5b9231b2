// The cluster LayerNorm: a row split over a thread-block cluster of up to 8 programs (sm_90), read once
// and two-pass in registers, the sums combined through distributed shared memory; f32, f16 and bf16.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

void cluster(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  const auto split = cluster_split(call.entry, "kernels::layernorm_looped", call.rows, call.cols, a.splits, kNormClusterPieceCols);
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    // Chunks are whole multiples of 8 columns (cluster_split): tiles below 8 are never chosen.
    with_block<kNormClusterPieceCols, 8>(split.chunk, [&]<int B>() {
      static constexpr const char* params[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps"};
      KernelShape shape = row_shape(call.opt.tuning, element_bytes_of<T>(), B);
      shape.cluster = static_cast<int>(split.splits);
      Program& p = kernel_for<&layernorm_cluster_program<T, B>>(
          shape, [&] { return "layernorm_cluster" + std::to_string(split.splits) + "_" + std::to_string(B); }, params);
      launch(call, p, Grid(call.rows * split.splits),
             std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, chunk, splits, Arg::of_f32(a.eps)});
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
