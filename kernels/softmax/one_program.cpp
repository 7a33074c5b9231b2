// The fused one-program-per-row softmax and the five-kernel baseline, for f32, f16 and bf16 and every row
// tile up to 16384 columns.
#include <array>

#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/programs.hpp"

namespace tilefuse::kernels::softmax_launch {

namespace {

// The row kernel of program Fn at row tile BLOCK of T, named name_BLOCK.
template <auto Fn, class T, int BLOCK>
Program& row_program(const RowCall& call, const char* name, std::span<const char* const> params) {
  return kernel_for<Fn>(row_shape(call.opt.tuning, element_bytes_of<T>(), BLOCK),
                        [&] { return std::string(name) + "_" + std::to_string(BLOCK); }, params);
}

void check_cols(const RowCall& call) {
  if (call.cols > kSoftmaxMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) +
                                " exceeds the one-program row limit of " + std::to_string(kSoftmaxMaxCols) +
                                " elements (kernels::softmax_auto and softmax_looped take rows of any width)");
}

constexpr const char* kParams[] = {"in", "out", "stride", "n_cols"};

}  // namespace

void one_program(const RowCall& call, const Args& a) {
  check_matrix(call, "in", a.in);
  check_matrix(call, "out", a.out);
  check_cols(call);
  const Arg n = i32(call.cols);
  with_float_dtype(a.in.dtype, [&]<class T>() {
    with_block<kSoftmaxMaxCols>(call.cols, [&]<int B>() {
      launch(call, row_program<&softmax_program<T, B>, T, B>(call, "softmax", kParams), Grid(call.rows), std::array{a.in, a.out, n, n});
    });
  });
}

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
