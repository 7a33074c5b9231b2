// The four-kernel epilogue baseline (bias add, GELU, dropout, residual add), for f32, f16 and bf16 and
// every row tile up to 16384 columns.
#include <array>

#include "kernels/epilogue/launchers.hpp"
#include "kernels/epilogue/programs.hpp"

namespace tilefuse::kernels::epilogue_launch {

void unfused(const RowCall& call, const Args& a, const Arg& t1, const Arg& t2) {
  check(call, a, {{"x", &a.x}, {"residual", &a.residual}, {"y", &a.y}, {"t1", &t1}, {"t2", &t2}});
  const Arg n = i32(call.cols), p = Arg::of_f32(a.dropout.p), seed = Arg::of_i64(a.dropout.seed), offset = Arg::of_i64(a.dropout.offset);
  const Grid grid(call.rows);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_block<kEpilogueMaxCols>(call.cols, [&]<int B>() {
      static constexpr const char* bias_params[] = {"x", "bias", "t", "n"};
      static constexpr const char* gelu_params[] = {"in", "out", "n"};
      static constexpr const char* dropout_params[] = {"in", "out", "n", "p", "seed", "offset"};
      static constexpr const char* residual_params[] = {"in", "residual", "y", "n"};
      launch(call, row_program<&bias_add_program<T, B>, T, B>(call, "bias_add", bias_params), grid, std::array{a.x, a.bias, t1, n});
      launch(call, row_program<&gelu_program<T, B>, T, B>(call, "gelu", gelu_params), grid, std::array{t1, t2, n});
      launch(call, row_program<&dropout_program<T, B>, T, B>(call, "dropout", dropout_params), grid, std::array{t2, t1, n, p, seed, offset});
      launch(call, row_program<&residual_add_program<T, B>, T, B>(call, "residual_add", residual_params), grid,
             std::array{t1, a.residual, a.y, n});
    });
  });
}

}  // namespace tilefuse::kernels::epilogue_launch
