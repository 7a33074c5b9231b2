// The fused epilogue that sits between two GEMMs: y = dropout(gelu(x + bias), p) + residual over `rows`
// contiguous rows of `cols` elements (f32, f16 or bf16), as one kernel and as four. The launchers are
// compiled once in the kernels library; these inline wrappers only check the element type at compile
// time and pass the buffers on. Tile programs: programs.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/runtime/program.hpp"
#include "kernels/rows/operands.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::kernels {

/// Widest row one epilogue program holds.
inline constexpr std::int64_t kEpilogueMaxCols = 16384;

/// Dropout probability, seed and offset of one epilogue call.
struct DropoutParams {
  float p = 0.1f;            ///< probability of dropping an element, in [0, 1)
  std::int64_t seed = 0;     ///< Philox key
  std::int64_t offset = 0;   ///< counter base: advance it by rows x cols between calls that need fresh numbers
};

namespace detail {
/// An epilogue call's operands, type-erased: what the compiled launchers take.
struct EpilogueArgs {
  Arg x, bias, residual, y;
  std::int64_t rows = 0, cols = 0;
  DropoutParams dropout;
};
/// The fused kernel.
void epilogue(const EpilogueArgs& args, const RowOptions& opt);
/// The four kernels, with intermediates t1 and t2.
void epilogue_unfused(const EpilogueArgs& args, const Arg& t1, const Arg& t2, const RowOptions& opt);
}  // namespace detail

/// The programs of the fused epilogue (`fused`) or of its four kernels for rows of `cols` elements of
/// `dtype` (traced on first use).
std::vector<const Program*> epilogue_programs(ir::DType dtype, std::int64_t cols, bool fused = true, const RowOptions& opt = {});

/// y = dropout(gelu(x + bias), p) + residual in one kernel (rows up to 16384 columns).
template <class Buf>
void epilogue(Buf& x, Buf& bias, Buf& residual, Buf& y, std::int64_t rows, std::int64_t cols, const DropoutParams& d,
              const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse epilogue: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  detail::epilogue({memory_arg(x), memory_arg(bias), memory_arg(residual), memory_arg(y), rows, cols, d}, opt);
}

/// The same chain as four kernels, with `t1` and `t2` (rows x cols each) holding the intermediates.
template <class Buf>
void epilogue_unfused(Buf& x, Buf& bias, Buf& residual, Buf& y, Buf& t1, Buf& t2, std::int64_t rows, std::int64_t cols,
                      const DropoutParams& d, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse epilogue_unfused: elements must be float, half or bfloat16.");
  detail::epilogue_unfused({memory_arg(x), memory_arg(bias), memory_arg(residual), memory_arg(y), rows, cols, d}, memory_arg(t1),
                           memory_arg(t2), opt);
}

}  // namespace tilefuse::kernels
