// The epilogue launchers, fused and as four kernels, for f32, f16 and bf16 and every row tile up to 16384
// columns.
#include <array>

#include "kernels/epilogue/epilogue.hpp"
#include "kernels/epilogue/programs.hpp"
#include "kernels/rows/launch.hpp"

namespace tilefuse::kernels {

namespace {

using Args = detail::EpilogueArgs;

void check(const RowCall& call, const Args& a, std::initializer_list<std::pair<const char*, const Arg*>> matrices) {
  for (const auto& [name, arg] : matrices) check_matrix(call, name, *arg);
  check_vector(call, "bias", a.bias, call.cols);
  if (call.cols > kEpilogueMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) +
                                " exceeds the one-program row limit of " + std::to_string(kEpilogueMaxCols));
  if (!(a.dropout.p >= 0.f && a.dropout.p < 1.f))
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": argument p: expected a dropout probability in [0, 1), got " +
                                std::to_string(a.dropout.p));
}

// The row kernel of program Fn at row tile BLOCK of T, named name_BLOCK.
template <auto Fn, class T, int BLOCK>
Program& row_program(const RowCall& call, const char* name, std::span<const char* const> params) {
  return kernel_for<Fn>(row_shape(call.opt.tuning, element_bytes_of<T>(), BLOCK),
                        [&] { return std::string(name) + "_" + std::to_string(BLOCK); }, params);
}

void fused(const RowCall& call, const Args& a) {
  check(call, a, {{"x", &a.x}, {"residual", &a.residual}, {"y", &a.y}});
  const Arg n = i32(call.cols), p = Arg::of_f32(a.dropout.p), seed = Arg::of_i64(a.dropout.seed), offset = Arg::of_i64(a.dropout.offset);
  with_float_dtype(a.x.dtype, [&]<class T>() {
    with_block<kEpilogueMaxCols>(call.cols, [&]<int B>() {
      static constexpr const char* params[] = {"x", "bias", "residual", "y", "n", "p", "seed", "offset"};
      launch(call, row_program<&epilogue_program<T, B>, T, B>(call, "epilogue", params), Grid(call.rows),
             std::array{a.x, a.bias, a.residual, a.y, n, p, seed, offset});
    });
  });
}

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

}  // namespace

void detail::epilogue(const EpilogueArgs& args, const RowOptions& opt) {
  validate(opt.tuning);
  fused(RowCall{"epilogue", args.rows, args.cols, opt}, args);
}

void detail::epilogue_unfused(const EpilogueArgs& args, const Arg& t1, const Arg& t2, const RowOptions& opt) {
  validate(opt.tuning);
  unfused(RowCall{"epilogue_unfused", args.rows, args.cols, opt}, args, t1, t2);
}

std::vector<const Program*> epilogue_programs(ir::DType dtype, std::int64_t cols, bool fused_kernel, const RowOptions& opt) {
  std::vector<const Program*> programs;
  const Arg matrix = Arg::host_memory_of(dtype, nullptr, static_cast<std::size_t>(cols));
  const Args args{matrix, matrix, matrix, matrix, 1, cols, {}};
  if (fused_kernel) fused(RowCall{"epilogue", 1, cols, opt, &programs}, args);
  else unfused(RowCall{"epilogue_unfused", 1, cols, opt, &programs}, args, matrix, matrix);
  return programs;
}

}  // namespace tilefuse::kernels
