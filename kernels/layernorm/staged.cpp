// The staged LayerNorm: one program per row with the row copied into shared memory once and read back by
// three passes (exactly two-pass statistics), for f32, f16 and bf16 and every stage size.
#include <array>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/wide_programs.hpp"

namespace tilefuse::kernels::layernorm_launch {

void staged(const RowCall& call, const Args& a) {
  check_layernorm(call, a);
  if (call.cols > kStageMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) +
                                " exceeds the staged limit of " + std::to_string(kStageMaxCols) +
                                " elements (kernels::layernorm_looped takes rows of any width)");
  const Arg n = i32(call.cols);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_stage(call.cols, [&]<int STAGE>() {
      Program& p = kernel_for<&layernorm_staged_program<T, STAGE, kStagePiece>>(
          staged_shape(call.opt.tuning, STAGE * element_bytes_of<T>(), 4), [] { return "layernorm_staged_" + std::to_string(STAGE); },
          kParams);
      launch(call, p, Grid(call.rows), std::array{a.x, a.w, a.b, a.y, a.mean, a.rstd, n, n, Arg::of_f32(a.eps)});
    });
  });
}

}  // namespace tilefuse::kernels::layernorm_launch
