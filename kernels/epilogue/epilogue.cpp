// The fused epilogue launcher and the public entry points, for f32, f16 and bf16 and every row tile up to
// 16384 columns; unfused.cpp holds the four-kernel baseline.
#include <array>

#include "kernels/epilogue/launchers.hpp"
#include "kernels/epilogue/programs.hpp"

namespace tilefuse::kernels::epilogue_launch {

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

}  // namespace tilefuse::kernels::epilogue_launch

namespace tilefuse::kernels {

void detail::epilogue(const EpilogueArgs& args, const RowOptions& opt) {
  validate(opt.tuning);
  epilogue_launch::fused(RowCall{"epilogue", args.rows, args.cols, opt}, args);
}

void detail::epilogue_unfused(const EpilogueArgs& args, const Arg& t1, const Arg& t2, const RowOptions& opt) {
  validate(opt.tuning);
  epilogue_launch::unfused(RowCall{"epilogue_unfused", args.rows, args.cols, opt}, args, t1, t2);
}

std::vector<const Program*> epilogue_programs(ir::DType dtype, std::int64_t cols, bool fused_kernel, const RowOptions& opt) {
  std::vector<const Program*> programs;
  const Arg matrix = Arg::host_memory_of(dtype, nullptr, static_cast<std::size_t>(cols));
  const detail::EpilogueArgs args{matrix, matrix, matrix, matrix, 1, cols, {}};
  if (fused_kernel) epilogue_launch::fused(RowCall{"epilogue", 1, cols, opt, &programs}, args);
  else epilogue_launch::unfused(RowCall{"epilogue_unfused", 1, cols, opt, &programs}, args, matrix, matrix);
  return programs;
}

}  // namespace tilefuse::kernels
