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
  const std::int64_t piece = std::min<std::int64_t>(kStageMaxCols, call.opt.tuning.stage_bytes.value_or(32768) / bytes);
  const auto split = cluster_split(call.entry, "kernels::softmax_looped", call.rows, call.cols,
                                   a.splits == 0 ? std::min<std::int64_t>(8, (call.cols + piece - 1) / piece) : a.splits, kStageMaxCols);
  if (split.splits > 1) {
    const Target target = call.target();
    if (!target.clusters)
      throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": " + std::to_string(call.cols) +
                                  " columns need a cluster of " + std::to_string(split.splits) +
                                  " programs, which needs sm_90; this GPU is " + target.arch + " (kernels::softmax_looped runs anywhere)");
  }
  const Arg n = i32(call.cols), chunk = i32(split.chunk), splits = i32(split.splits);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    // Rows that are not whole vectors: each piece copied from the vector boundary before it, where the
    // stage has room for the vector's worth of columns more.
    const std::int64_t window = window_cols(split.chunk, element_bytes_of<T>());
    const bool peel = peeled(call.opt.tuning, call.cols, element_bytes_of<T>()) && window <= kStageMaxCols;
    with_stage(peel ? window : split.chunk, [&]<int STAGE>() {
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
