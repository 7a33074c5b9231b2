// The matrix product with a fused epilogue, C = epilogue(A B + bias): A [M, K], B [K, N], C [M, N]
// row-major f16 or bf16, bias [N] of the same dtype, f32 accumulation on tensor cores, any M, N and K.
// The launchers are compiled once in the kernels library; these inline wrappers check element types at
// compile time and pass the buffers on. Tile program: programs.hpp.
#pragma once

#include <cstdint>

#include "backend/runtime/program.hpp"
#include "kernels/matrix_options.hpp"
#include "kernels/rows/operands.hpp"
#include "kernels/matmul/programs.hpp"

namespace tilefuse::kernels {

namespace detail {
/// A matmul call's operands, type-erased: what the compiled launcher takes.
struct MatmulArgs {
  Arg a, b, bias, c;
  std::int64_t m = 0, n = 0, k = 0;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
};
void matmul(const MatmulArgs& args, const MatrixOptions& opt);
}  // namespace detail

/// c = epilogue(a b + bias) for a [m, k], b [k, n], bias [n], c [m, n].
template <class Buf>
void matmul(Buf& a, Buf& b, Buf& bias, Buf& c, std::int64_t m, std::int64_t n, std::int64_t k,
            MatmulEpilogue epilogue = MatmulEpilogue::none, const MatrixOptions& opt = {}) {
  static_assert(holds_floats<Buf> && !holds_f32<Buf>, "tilefuse matmul: a, b, bias and c hold tilefuse::half or tilefuse::bfloat16.");
  detail::matmul({memory_arg(a), memory_arg(b), memory_arg(bias), memory_arg(c), m, n, k, epilogue}, opt);
}

/// Floating-point operations of one matmul: 2 m n k.
inline double matmul_flops(std::int64_t m, std::int64_t n, std::int64_t k) { return 2.0 * double(m) * double(n) * double(k); }

}  // namespace tilefuse::kernels
