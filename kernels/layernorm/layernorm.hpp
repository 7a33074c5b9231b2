// LayerNorm and RMSNorm forward over `rows` contiguous rows of `cols` elements in f32, f16 or bf16:
// y = (x - mean) * rstd * w + b per row (mean and rstd written per row, f32, for a backward pass) and
// y = x * rsqrt(mean(x^2) + eps) * w. The launchers are compiled once in the kernels library; these
// inline wrappers only check the element types at compile time and pass the buffers on. Tile programs:
// programs.hpp (rows in registers) and wide_programs.hpp. Variants: layernorm_variants().
//
// Buf is DeviceBuffer<H> or std::span<H> / std::vector<H> (H = float, half, bfloat16); F32Buf holds floats.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backend/runtime/program.hpp"
#include "kernels/rows/operands.hpp"
#include "kernels/rows/options.hpp"
#include "kernels/rows/shapes.hpp"
#include "kernels/tune/tuner.hpp"

namespace tilefuse::kernels {

/// Widest row one normalization program holds in registers.
inline constexpr std::int64_t kNormMaxCols = 32768;
/// Widest row RMSNorm takes: it holds the row as one tile, whose x and w spill past 16384 f32 columns.
inline constexpr std::int64_t kRmsNormMaxCols = 16384;
/// Widest row piece one program of the cluster LayerNorm holds in registers.
inline constexpr std::int64_t kNormClusterPieceCols = 16384;
/// Widest row the cluster LayerNorm takes: 8 programs of kNormClusterPieceCols columns.
inline constexpr std::int64_t kNormClusterMaxCols = 8 * kNormClusterPieceCols;
/// Widest row the staged LayerNorm takes: a cluster of 16 programs of kClusterStageMaxCols columns.
inline constexpr std::int64_t kNormStagedMaxCols = kMaxClusterSize * kClusterStageMaxCols;
/// Shared memory per program of the staged LayerNorm unless Tuning::stage_bytes says otherwise: 32 KB, as
/// the staged softmax (a row wider than that goes over a cluster).
inline constexpr std::int64_t kNormStageBytes = 32768;
/// Most splits of one row the split-row LayerNorm supports (the combine kernel holds them as one tile).
inline constexpr std::int64_t kNormMaxSplits = 1024;

/// The LayerNorm variants, in the automatic choice's order of preference.
std::span<const VariantInfo> layernorm_variants();
/// The variant layernorm_auto runs for `rows` rows of `cols` elements of `element_bytes` on `opt.backend`.
RowVariant layernorm_choice(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt = {});

/// Per-row statistics LayerNorm writes (f32, one per row), for a backward pass.
template <class F32Buf>
struct RowStats {
  F32Buf mean, rstd;
};

/// Scratch for the split-row LayerNorm: rows x splits partial sums of x - x[row, 0] and of its square.
template <class F32Buf>
struct NormSplitScratch {
  F32Buf partial_s1, partial_s2;
};

/// The LayerNorm configurations the tuner times for `rows` rows of `cols` elements of `element_bytes`: the
/// variant table's rules first, then the variants that take the row with their knobs' useful settings.
std::vector<RowConfig> layernorm_space(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt = {});

namespace detail {
/// A normalization call's operands, type-erased: what the compiled launchers take.
struct NormArgs {
  Arg x, w, b, y, mean, rstd;  ///< b, mean and rstd are unused by RMSNorm
  std::int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  std::int64_t splits = 0;       ///< split: programs per row; cluster and staged: 0 for the fewest
  Arg partial_s1, partial_s2;    ///< split: the scratch
  bool one_pass = false;         ///< one_program: the one-pass baseline instead of two-pass
};
/// Runs LayerNorm `variant` (automatic: layernorm_choice) on `args`.
void layernorm(RowVariant variant, const NormArgs& args, const RowOptions& opt);
/// Runs RMSNorm on `args`.
void rmsnorm(const NormArgs& args, const RowOptions& opt);
/// Tunes LayerNorm for `args`' shape on private copies of its input and outputs (kernels/tune/tuner.hpp).
TuneReport tune_layernorm(const NormArgs& args, const RowOptions& opt);
/// The configuration the automatic choice runs under opt.tune: tuned before, or (first_use) tuned now.
std::optional<RowConfig> layernorm_tuned(const NormArgs& args, const RowOptions& opt);

/// The operands of a LayerNorm call.
template <class Buf, class F32Buf>
NormArgs norm_args(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols, float eps) {
  return NormArgs{memory_arg(x), memory_arg(w), memory_arg(b), memory_arg(y), memory_arg(stats.mean), memory_arg(stats.rstd),
                  rows, cols, eps};
}
}  // namespace detail

/// The programs a launch of LayerNorm `variant` runs for rows of `cols` elements of `dtype` (traced on
/// first use): what inspection, the goldens and the compile tests look at.
std::vector<const Program*> layernorm_programs(RowVariant variant, ir::DType dtype, std::int64_t cols, const RowOptions& opt = {},
                                               std::int64_t splits = 0, bool one_pass = false);
/// The RMSNorm program for rows of `cols` elements of `dtype`.
std::vector<const Program*> rmsnorm_programs(ir::DType dtype, std::int64_t cols, const RowOptions& opt = {});

/// LayerNorm, one program per row with the row in registers (up to kNormMaxCols columns), two-pass; `one_pass`
/// runs the one-pass baseline (var = E[x^2] - E[x]^2, which loses every digit when |mean| >> std).
template <class Buf, class F32Buf>
void layernorm(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols, float eps = 1e-5f,
               const RowOptions& opt = {}, bool one_pass = false) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm: mean and rstd are float buffers.");
  auto args = detail::norm_args(x, w, b, y, stats, rows, cols, eps);
  args.one_pass = one_pass;
  detail::layernorm(RowVariant::one_program, args, opt);
}

/// LayerNorm of rows of any width, one program per row looping over it: reads each row twice.
template <class Buf, class F32Buf>
void layernorm_looped(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                      float eps = 1e-5f, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_looped: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_looped: mean and rstd are float buffers.");
  detail::layernorm(RowVariant::looped, detail::norm_args(x, w, b, y, stats, rows, cols, eps), opt);
}

/// LayerNorm with each row split over `splits` programs and two kernels (partial sums, then combine and
/// normalize): reads every element twice, but spreads a row over the GPU (for few, wide rows).
template <class Buf, class F32Buf>
void layernorm_split(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, NormSplitScratch<F32Buf>& scratch, std::int64_t rows,
                     std::int64_t cols, std::int64_t splits, float eps = 1e-5f, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_split: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_split: statistics and partials are float buffers.");
  auto args = detail::norm_args(x, w, b, y, stats, rows, cols, eps);
  args.splits = splits;
  args.partial_s1 = memory_arg(scratch.partial_s1);
  args.partial_s2 = memory_arg(scratch.partial_s2);
  detail::layernorm(RowVariant::split, args, opt);
}

/// LayerNorm of rows up to 131072 columns, each read once and normalized two-pass in registers: the row is
/// split over a thread-block cluster of `splits` programs (sm_90; 0: the fewest that hold it, at most
/// 16384 columns each), which combine their sums through distributed shared memory.
template <class Buf, class F32Buf>
void layernorm_cluster(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                       float eps = 1e-5f, const RowOptions& opt = {}, std::int64_t splits = 0) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_cluster: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_cluster: mean and rstd are float buffers.");
  auto args = detail::norm_args(x, w, b, y, stats, rows, cols, eps);
  args.splits = splits;
  detail::layernorm(RowVariant::cluster, args, opt);
}

/// LayerNorm of rows up to kNormStagedMaxCols columns, each read once and exactly two-pass: the row is
/// staged through shared memory, by one program or, past one stage (kNormStageBytes or
/// Tuning::stage_bytes), by a thread-block cluster of `splits` programs (sm_90; 0: Tuning::staged_cluster,
/// else the launch's plan, auto_stage_split: the fewest, up to 8, then 8 or 16; 9 to 16, Hopper's
/// non-portable clusters, take rows up to 16 x kClusterStageMaxCols columns) that combine their sums
/// through distributed shared memory.
template <class Buf, class F32Buf>
void layernorm_staged(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                      float eps = 1e-5f, const RowOptions& opt = {}, std::int64_t splits = 0) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_staged: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_staged: mean and rstd are float buffers.");
  auto args = detail::norm_args(x, w, b, y, stats, rows, cols, eps);
  args.splits = splits;
  detail::layernorm(RowVariant::staged, args, opt);
}

/// LayerNorm of rows of any width that the GPU holds at once (a row's stages of kNormStageBytes, or
/// Tuning::stage_bytes, on every SM), each read once and exactly two-pass: a row is staged over a group of
/// programs that are all resident together (a cooperative launch per wave of rows) and combine their sums
/// through global memory.
template <class Buf, class F32Buf>
void layernorm_resident(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                        float eps = 1e-5f, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_resident: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_resident: mean and rstd are float buffers.");
  detail::layernorm(RowVariant::resident, detail::norm_args(x, w, b, y, stats, rows, cols, eps), opt);
}

/// LayerNorm of rows of any width, with the variant chosen from the variant table (layernorm_choice; with
/// opt.tune, what was tuned for the shape) or the one asked for (the split-row variant takes its partials
/// from the library's workspace here; layernorm_split takes the caller's).
template <class Buf, class F32Buf>
void layernorm_auto(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                    float eps = 1e-5f, const RowOptions& opt = {}, RowVariant variant = RowVariant::automatic) {
  static_assert(holds_floats<Buf>, "tilefuse layernorm_auto: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse layernorm_auto: mean and rstd are float buffers.");
  detail::layernorm(variant, detail::norm_args(x, w, b, y, stats, rows, cols, eps), opt);
}

/// Tunes LayerNorm for rows x cols of x's dtype: times each configuration of layernorm_space on private
/// copies of x (x, w and b are only read), accepts those whose output matches the default's, and keeps the
/// fastest for the shape's bucket in memory and on disk; layernorm_auto then runs it under
/// TuneMode::cached or first_use. Returns every candidate's time and check.
template <class Buf>
TuneReport tune_layernorm(Buf& x, Buf& w, Buf& b, std::int64_t rows, std::int64_t cols, float eps = 1e-5f, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse tune_layernorm: elements must be float, half or bfloat16.");
  detail::NormArgs a;
  a.x = a.y = memory_arg(x);
  a.w = memory_arg(w);
  a.b = memory_arg(b);
  a.rows = rows;
  a.cols = cols;
  a.eps = eps;
  return detail::tune_layernorm(a, opt);
}

/// y = RMSNorm(x) * w over rows x cols, one program per row (up to kRmsNormMaxCols columns).
template <class Buf>
void rmsnorm(Buf& x, Buf& w, Buf& y, std::int64_t rows, std::int64_t cols, float eps = 1e-6f, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse rmsnorm: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  detail::rmsnorm(detail::NormArgs{memory_arg(x), memory_arg(w), {}, memory_arg(y), {}, {}, rows, cols, eps}, opt);
}

}  // namespace tilefuse::kernels
