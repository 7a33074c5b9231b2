// Row softmax: out = softmax(in) over each of `rows` contiguous rows of `cols` elements, in f32, f16 or
// bf16, by the variant that fits the row (softmax_auto) or the one asked for. The launchers are compiled
// once in the kernels library; these inline wrappers only check the element type at compile time and
// pass the buffers on. Tile programs: programs.hpp. Variants: softmax_variants().
//
// Buf is DeviceBuffer<H> (GPU or interpreter) or std::span<H> / std::vector<H> (interpreter), with
// H = float, tilefuse::half or tilefuse::bfloat16. In place (in and out the same buffer) is allowed.
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

/// Widest row one softmax program holds in registers.
inline constexpr std::int64_t kSoftmaxMaxCols = 32768;
/// Widest row piece one program of the cluster softmax holds in registers.
inline constexpr std::int64_t kSoftmaxClusterPieceCols = 16384;
/// Widest row the cluster softmax takes: 8 programs (the portable cluster size) of kSoftmaxClusterPieceCols
/// columns.
inline constexpr std::int64_t kSoftmaxClusterMaxCols = 8 * kSoftmaxClusterPieceCols;
/// Widest row the staged softmax takes: a cluster of 16 programs of kClusterStageMaxCols columns.
inline constexpr std::int64_t kSoftmaxStagedMaxCols = kMaxClusterSize * kClusterStageMaxCols;
/// Most splits of one row the split-row softmax supports (the combine kernel holds them as one tile).
inline constexpr std::int64_t kSoftmaxMaxSplits = 1024;

/// The softmax variants, in the automatic choice's order of preference.
std::span<const VariantInfo> softmax_variants();
/// The variant softmax_auto runs for `rows` rows of `cols` elements of `element_bytes` on `opt.backend`.
RowVariant softmax_choice(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt = {});
/// Whether softmax_auto can send `rows` rows of `cols` elements of `element_bytes` to the staged kernel:
/// one program, or a cluster of at most 8 whose stages leave three programs an SM (auto_stage_cols, or
/// Tuning::stage_bytes when that is larger); on a GPU with clusters also wider rows, on the staged launch's
/// own plan (auto_stage_split: 8 or 16 programs a row), where its stages leave two programs an SM and the
/// launch runs at least two waves of them (kStagedWidePrograms, kStagedWideMinWaves). It does when,
/// besides, the looped kernel's second pass would not find its rows in the L2 (looped_rereads_fit_l2 in
/// kernels/rows/rules.hpp).
bool softmax_staged_fits(std::int64_t rows, std::int64_t cols, int element_bytes, Backend backend, const Tuning& tuning = {});

/// Scratch for the split-row softmax: rows x splits partial maxima and sums (f32).
template <class F32Buf>
struct SplitScratch {
  F32Buf partial_max, partial_sum;
};

/// The five unfused kernels' scratch: m and s hold one value per row, z and e a whole matrix each.
template <class Buf>
struct UnfusedScratch {
  Buf m, z, e, s;
};

struct RowConfig;
struct TuneReport;

/// The softmax configurations the tuner times for `rows` rows of `cols` elements of `element_bytes`: the
/// variant table's rules first, then the variants that take the row with their knobs' useful settings.
std::vector<RowConfig> softmax_space(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt = {});

namespace detail {
/// A softmax call's operands, type-erased: what the compiled launchers take.
struct SoftmaxArgs {
  Arg in, out;
  std::int64_t rows = 0, cols = 0;
  std::int64_t splits = 0;       ///< split: programs per row; staged and cluster: 0 for the fewest
  Arg partial_max, partial_sum;  ///< split: the scratch
};
/// Runs `variant` (automatic: softmax_choice) on `args`.
void softmax(RowVariant variant, const SoftmaxArgs& args, const RowOptions& opt);
/// The five unfused kernels, with scratch m, z, e, s.
void softmax_unfused(const SoftmaxArgs& args, const Arg (&scratch)[4], const RowOptions& opt);
/// Tunes the softmax for `args`' shape on private copies of its input (kernels/tune/tuner.hpp).
TuneReport tune_softmax(const SoftmaxArgs& args, const RowOptions& opt);
/// The configuration the automatic choice runs under opt.tune: tuned before, or (first_use) tuned now.
std::optional<RowConfig> softmax_tuned(const SoftmaxArgs& args, const RowOptions& opt);
}  // namespace detail

/// The programs a launch of `variant` runs for rows of `cols` elements of `dtype` (traced on first use):
/// what inspection, the goldens and the compile tests look at. `unfused` gives the five-kernel baseline.
std::vector<const Program*> softmax_programs(RowVariant variant, ir::DType dtype, std::int64_t cols, const RowOptions& opt = {},
                                             std::int64_t splits = 0);
/// The five unfused kernels' programs for rows of `cols` elements of `dtype`.
std::vector<const Program*> softmax_unfused_programs(ir::DType dtype, std::int64_t cols, const RowOptions& opt = {});

/// The fused kernel, one program per row: reads once, rows up to kSoftmaxMaxCols columns (an error above).
template <class Buf>
void softmax(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  detail::softmax(RowVariant::one_program, {memory_arg(in), memory_arg(out), rows, cols}, opt);
}

/// Rows of any width, one program per row looping over it: reads each row twice and writes it once.
template <class Buf>
void softmax_looped(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_looped: elements must be float, half or bfloat16.");
  detail::softmax(RowVariant::looped, {memory_arg(in), memory_arg(out), rows, cols}, opt);
}

/// Rows up to 131072 columns, each read once: a row wider than 16384 is split over a thread-block cluster
/// of ceil(cols / 16384) programs (sm_90) that combine their max and sum through distributed shared
/// memory; narrower rows take the one-program kernel.
template <class Buf>
void softmax_cluster(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_cluster: elements must be float, half or bfloat16.");
  detail::softmax(RowVariant::cluster, {memory_arg(in), memory_arg(out), rows, cols}, opt);
}

/// Rows up to kSoftmaxStagedMaxCols (655360) columns, each read once and staged through shared memory: a
/// row is split over `splits` programs (0: Tuning::staged_cluster, else the launch's plan,
/// auto_stage_split: the fewest, up to 8, whose piece fits Tuning::stage_bytes, 32 KB by default, then 8
/// or 16; above 1 a thread-block cluster, sm_90; 9 to 16, Hopper's non-portable clusters, take rows up to
/// 16 x kClusterStageMaxCols columns).
template <class Buf>
void softmax_staged(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}, std::int64_t splits = 0) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_staged: elements must be float, half or bfloat16.");
  detail::softmax(RowVariant::staged, {memory_arg(in), memory_arg(out), rows, cols, splits}, opt);
}

/// Rows of any width that the GPU holds at once (a row's stages of 32 KB, or Tuning::stage_bytes, on
/// every SM), each read once: a row is staged over a group of programs that are all resident together
/// (a cooperative launch per wave of rows) and combine their max and sum through global memory.
template <class Buf>
void softmax_resident(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_resident: elements must be float, half or bfloat16.");
  detail::softmax(RowVariant::resident, {memory_arg(in), memory_arg(out), rows, cols}, opt);
}

/// Rows of any width, with the variant chosen from the variant table (softmax_choice; with opt.tune, what
/// was tuned for the shape) or the one asked for (the split-row variant takes its partials from the
/// library's workspace here; softmax_split takes the caller's).
template <class Buf>
void softmax_auto(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {},
                  RowVariant variant = RowVariant::automatic) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_auto: elements must be float, half or bfloat16.");
  detail::softmax(variant, {memory_arg(in), memory_arg(out), rows, cols}, opt);
}

/// Tunes the softmax for rows x cols of `in`'s dtype: times each configuration of softmax_space on private
/// copies of `in` (only read), accepts those whose output matches the default's, and keeps the fastest
/// for the shape's bucket in memory and on disk; softmax_auto then runs it under TuneMode::cached or
/// first_use. Returns every candidate's time and check.
template <class Buf>
TuneReport tune_softmax(Buf& in, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse tune_softmax: elements must be float, half or bfloat16.");
  return detail::tune_softmax({memory_arg(in), memory_arg(in), rows, cols}, opt);
}

/// Each row split over `splits` programs and two kernels (partials, then combine and normalize): reads
/// every element twice and writes it once, like the looped kernel, but spreads a row over the GPU (for
/// few, wide rows). The scratch holds rows x splits f32 partials each.
template <class Buf, class F32Buf>
void softmax_split(Buf& in, Buf& out, SplitScratch<F32Buf>& scratch, std::int64_t rows, std::int64_t cols, std::int64_t splits,
                   const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_split: elements must be float, half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse softmax_split: partials are float buffers.");
  detail::softmax(RowVariant::split,
                  {memory_arg(in), memory_arg(out), rows, cols, splits, memory_arg(scratch.partial_max), memory_arg(scratch.partial_sum)},
                  opt);
}

/// Softmax as five kernels (max, subtract, exp, sum, divide), each a round trip through memory: the
/// unfused baseline, rows up to kSoftmaxMaxCols columns.
template <class Buf>
void softmax_unfused(Buf& in, Buf& out, UnfusedScratch<Buf>& scratch, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  static_assert(holds_floats<Buf>, "tilefuse softmax_unfused: elements must be float, half or bfloat16.");
  const Arg parts[4] = {memory_arg(scratch.m), memory_arg(scratch.z), memory_arg(scratch.e), memory_arg(scratch.s)};
  detail::softmax_unfused({memory_arg(in), memory_arg(out), rows, cols}, parts, opt);
}

}  // namespace tilefuse::kernels
