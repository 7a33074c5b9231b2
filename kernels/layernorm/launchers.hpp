// The normalization launchers, one file per variant (one_program.cpp with the one-pass baseline and
// RMSNorm, looped.cpp with the split-row pair, cluster.cpp, staged.cpp), each compiled once for f32, f16
// and bf16; variants.cpp holds the variant table and dispatches to them. Internal to the kernels library.
#pragma once

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/rows/launch.hpp"

namespace tilefuse::kernels::layernorm_launch {

using Args = detail::NormArgs;

/// Column piece of the looped and split-row kernels.
inline constexpr int kLoopBlock = 4096;

/// Whether LayerNorm reads rows of `cols` elements of `element_bytes` that are not whole vectors through
/// aligned windows unless Tuning::peel says otherwise: rows of at least 2 KB (one pass of a 128-thread
/// program's 16-byte vectors), of every dtype. Element by element, half rows move 2 bytes per lane and
/// f32 rows 4; through a window x and y move 16 (w and b, off the window's boundary, go element by
/// element either way); narrower rows are too short for the window's wide body to pay for its two
/// masked end runs. f32 rows on one program were left element by element while the peeled kernel held a
/// row as one tile (512-thread programs, one to an SM by registers); held as pieces they gain through
/// windows too (H200, bench/NOTES.md "Shapes outside the suite" and "A run of rows reduced by segment;
/// LayerNorm's f32 rows through windows").
inline bool norm_peels(std::int64_t cols, int element_bytes) { return cols * element_bytes >= 2048; }

/// Whether a LayerNorm call on rows of `cols` elements of `element_bytes` reads them through windows:
/// peeled() with LayerNorm's rule.
inline bool norm_peeled(const Tuning& tuning, std::int64_t cols, int element_bytes) {
  return peeled(tuning, cols, element_bytes, norm_peels(cols, element_bytes));
}

/// Threads per SM that LayerNorm's one-program kernel for f16/bf16 rows read through windows keeps
/// resident unless Tuning::resident_threads says otherwise: 1024. Left to itself, ptxas gives it 80 to
/// 103 registers (the window's masks, w and b element by element), which leaves 512 to 768 threads of its
/// 256-thread programs on an SM: half the bytes in flight of the kernel for whole-vector rows (64
/// registers, 1024 threads). Asked for 1024 it fits in 64 registers without spilling (a test compiles
/// every tile).
inline constexpr int kNormPeeledResident = 1024;
/// Threads per SM that the same kernel asks for where its rows are f16 and it reads w and b from their
/// shifted copies (layernorm_shifted_program, a window of one tile): 768. ptxas keeps each widened f16
/// element (a cvt of one half of the loaded word) in a register of its own through the reductions, where
/// it takes bf16's (a shift or a mask of the word) again from the word, and at 1024 threads (64
/// registers) spilled 324 bytes of it (bf16: 140); at 768 it takes 80. Measured (H100, bench/NOTES.md,
/// "Windows of one tile"): 11259x7375 f16 0.52 -> 0.73 x copy, 1958x15405 f16 0.53 -> 0.63.
inline constexpr int kNormShiftedF16Resident = 768;

/// Threads per SM that LayerNorm's packed rows read row by row element by element (halves that are not
/// whole vectors, neither staged nor through windows) keep resident unless Tuning::resident_threads says
/// otherwise: 768. Left to itself, ptxas gives their 128-thread programs 93 to 96 registers (five
/// programs an SM); asked for 768 threads, 72 without spilling (seven), which hides more of the latency of
/// their 2-byte accesses. Measured (H200, bench/NOTES.md): +0.01 to +0.05 x copy on the sweep's six such
/// shapes; whole-vector and f32 rows lost up to 0.08 with it, so they keep ptxas's choice.
inline constexpr int kNormRowByRowResident = 768;

/// Widest window (columns) of half rows that LayerNorm's one-program kernel strides over rows for
/// (Tuning::stride_rows): w and b of such a window take 2 x 16 KB of shared memory per program. A window of
/// one tile strides only where its rows are copied ahead (rows_ahead_pays, strided_window): measured
/// (H100, bench/NOTES.md, "Windows of one tile"), 3602x3977 f16 0.59 -> 0.84 x copy and 3597-3813 bf16
/// -0.01 to +0.03 there, while tiles of 8192 and 16384 bf16 lost 0.15-0.22 strided.
inline constexpr std::int64_t kNormStridedMaxCols = 8192;
/// Widest window (bytes) whose strided programs copy each next row into shared memory while the row
/// before is normalized (Tuning::rows_ahead) unless the knob says otherwise: 8 KB. The copy issued ahead
/// hides the wait for a row's first bytes, which weighs most against a short row's work; a longer row
/// pays more for it in instructions than it gains (a window of three 2048-column pieces: 1400 -> 1952
/// instructions a program). Measured twice on an H100 (bench/NOTES.md, "Looped rows over clusters; rows
/// copied ahead"): +0.04 to +0.07 x copy at windows of 4.4 to 7 KB, -0.06 at 11 KB.
inline constexpr std::int64_t kNormAheadMaxBytes = 8192;

/// Whether the strided programs of windows of `window` columns of `element_bytes` copy rows ahead unless
/// Tuning::rows_ahead says otherwise.
inline bool rows_ahead_pays(std::int64_t window, int element_bytes) { return window * element_bytes <= kNormAheadMaxBytes; }

/// Whether LayerNorm's half rows through windows of `window` columns, held as `pieces` pieces, go to
/// programs striding over rows unless Tuning::stride_rows says otherwise: windows up to
/// kNormStridedMaxCols of several pieces, or of one tile whose rows are copied ahead.
inline bool strided_window(std::int64_t window, int pieces, int element_bytes) {
  return window <= kNormStridedMaxCols && (pieces > 1 || rows_ahead_pays(window, element_bytes));
}

/// Threads per SM the strided kernel keeps resident, and launches (Tuning::resident_threads): 640, which
/// leaves it 96 registers. The one-row kernel it replaces takes 72 to 96; 768 threads capped the strided
/// one at 80 and spilled (bench/NOTES.md).
inline constexpr int kNormStridedResident = 640;

/// Whether rows of LayerNorm read through windows take w and b from shifted copies unless
/// Tuning::shift_affine says otherwise: rows of halves (8 element loads per 16 bytes of w or b otherwise;
/// f32 rows take 4, and measured 0.02-0.03 x copy slower with the copies), at least 32 copies' worth of
/// them (256), so that writing the copies (16 rows of w and b) costs at most 1/16 of what the rows move.
/// H200, bench/NOTES.md "Shifted copies of w and b".
inline bool shift_affine_pays(std::int64_t rows, int element_bytes) { return element_bytes < 4 && rows >= 32 * (16 / element_bytes); }

/// Whether a LayerNorm call of `rows` rows of `element_bytes` read through windows takes w and b from
/// shifted copies: Tuning::shift_affine, else shift_affine_pays.
inline bool shifted_affine(const Tuning& tuning, std::int64_t rows, int element_bytes) {
  return tuning.shift_affine.value_or(shift_affine_pays(rows, element_bytes));
}

/// w and b of a call as the shifted-affine programs take them: copy 0's w and b, and the elements between
/// two copies.
struct ShiftedAffine {
  Arg w, b, copy_stride;
};
/// Writes the shifted copies of a.w and a.b (layernorm_shifted_affine_program) as `chain`'s next launch;
/// the row kernel that reads them must be the chain's next launch after it.
ShiftedAffine launch_shifted_affine(const RowCall& call, const Args& a, LaunchChain& chain);

/// Rows of a group that the split LayerNorm's second kernel normalizes a program under `plan`, for a call
/// of `rows` rows of `cols` elements of `element_bytes`: split_combine_rows over the plan's largest and
/// last groups, rows through windows taken a vector apart. What split() runs, and what the tuner's space
/// offers only where it is the count asked (a count halved back would time a kernel the space holds).
int split_combine_rows_run(const SplitPlan& plan, std::int64_t rows, std::int64_t cols, int element_bytes, const Tuning& tuning);

/// Parameter names of the kernels that take (x, w, b, y, mean, rstd, stride, n, eps).
inline constexpr const char* kParams[] = {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps"};

/// Checks the operands every LayerNorm variant takes.
void check_layernorm(const RowCall& call, const Args& a);

void one_program(const RowCall& call, const Args& a);
void rmsnorm(const RowCall& call, const Args& a);
void looped(const RowCall& call, const Args& a);
void split(const RowCall& call, const Args& a);
void cluster(const RowCall& call, const Args& a);
void staged(const RowCall& call, const Args& a);
void resident(const RowCall& call, const Args& a);

}  // namespace tilefuse::kernels::layernorm_launch
