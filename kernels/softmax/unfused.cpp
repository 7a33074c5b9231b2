// The five-kernel softmax baseline (max, subtract, exp, sum, divide), for f32, f16 and bf16 and every row
// tile up to 16384 columns.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

void unfused(const RowCall& call, const Args& a, const Arg (&scratch)[4]) {
  const Arg &m = scratch[0], &z = scratch[1], &e = scratch[2], &s = scratch[3];
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  check_matrix(call, "scratch.z", z);
  check_matrix(call, "scratch.e", e);
  check_vector(call, "scratch.m", m, call.rows);
  check_vector(call, "scratch.s", s, call.rows);
  check_cols(call);
  const Arg n = i32(call.cols);
  const Grid grid(call.rows);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    with_block<kSoftmaxMaxCols>(call.cols, [&]<int B>() {
      static constexpr const char* max_params[] = {"x", "m", "stride", "n_cols"};
      static constexpr const char* sub_params[] = {"x", "m", "z", "stride", "n_cols"};
      static constexpr const char* exp_params[] = {"z", "e", "stride", "n_cols"};
      static constexpr const char* sum_params[] = {"e", "s", "stride", "n_cols"};
      static constexpr const char* div_params[] = {"e", "s", "y", "stride", "n_cols"};
      launch(call, row_program<&row_max_program<T, B>, T, B>(call, "row_max", max_params), grid, std::array{a.in, m, n, n});
      launch(call, row_program<&subtract_row_program<T, B>, T, B>(call, "subtract_row", sub_params), grid, std::array{a.in, m, z, n, n});
      launch(call, row_program<&exp_program<T, B>, T, B>(call, "exp", exp_params), grid, std::array{z, e, n, n});
      launch(call, row_program<&row_sum_program<T, B>, T, B>(call, "row_sum", sum_params), grid, std::array{e, s, n, n});
      launch(call, row_program<&divide_row_program<T, B>, T, B>(call, "divide_row", div_params), grid, std::array{e, s, a.out, n, n});
    });
  });
}

}  // namespace tilefuse::kernels::softmax_launch
