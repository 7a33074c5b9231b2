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
  const std::int64_t piece = std::min<std::int64_t>(kStageMaxCols, call.opt.tuning.stage_bytes.value_or(kNormStageBytes) / bytes);
  const auto split = cluster_split(call.entry, "kernels::layernorm_looped", call.rows, call.cols,
                                   a.splits == 0 ? std::min<std::int64_t>(8, (call.cols + piece - 1) / piece) : a.splits, kStageMaxCols);
  if (split.splits > 1) {
    const Target target = call.target();
    if (!target.clusters)
      throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": " + std::to_string(call.cols) +
                                  " columns need a cluster of " + std::to_string(split.splits) +
                                  " programs, which needs sm_90; this GPU is " + target.arch + " (kernels::layernorm_looped runs anywhere)");
  }
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    // Rows that are not whole vectors (LayerNorm's rule, norm_peeled): each chunk copied from the vector
    // boundary before it, where the stage has room for the vector's worth of columns more.
    const std::int64_t window = window_cols(split.chunk, element_bytes_of<T>());
    const bool peel = norm_peeled(call.opt.tuning, call.cols, element_bytes_of<T>()) && window <= kStageMaxCols;
    with_stage(peel ? window : split.chunk, [&]<int STAGE>() {
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
