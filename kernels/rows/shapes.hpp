// Compile-time shapes for run-time widths: the sample kernels' tile programs take their tile sizes as
// template arguments, and these pick the instantiation a row of `cols` columns needs. Used by the
// launchers in the kernels library (users' files never instantiate them).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace tilefuse::kernels {

/// The smallest power of two >= n (n >= 1).
constexpr std::int64_t next_pow2(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/// Calls f.template operator()<BLOCK>() with BLOCK = next_pow2(cols), for BLOCK from MinBlock up to
/// MaxBlock (powers of two; smaller widths take MinBlock).
template <int MaxBlock, int MinBlock = 1, class F>
decltype(auto) with_block(std::int64_t cols, F&& f) {
  constexpr int first = std::countr_zero(static_cast<unsigned>(MinBlock));
  return [&]<int... Log>(std::integer_sequence<int, Log...>) -> decltype(auto) {
    const std::int64_t block = next_pow2(cols) < MinBlock ? MinBlock : next_pow2(cols);
    using R = decltype(f.template operator()<MinBlock>());
    if constexpr (std::is_void_v<R>) {
      (void)((block == (1 << (first + Log)) ? (f.template operator()<(1 << (first + Log))>(), true) : false) || ...);
    } else {
      R result{};
      (void)((block == (1 << (first + Log)) ? (result = f.template operator()<(1 << (first + Log))>(), true) : false) || ...);
      return result;
    }
  }(std::make_integer_sequence<int, std::countr_zero(static_cast<unsigned>(MaxBlock)) - first + 1>{});
}

/// How many tiles a row of `cols` (1 to the caller's MaxBlock) is held as in registers (with_pieces), the
/// fewest slots that hold it: 1, one tile of B = next_pow2(cols); 3, quarter-tiles of B (from B = 512
/// on); 5 or 7, eighth-tiles of B (from B = 2048 on, pieces of 256 columns or more). Every piece but the
/// last is whole, so at most an eighth of B (a quarter below 2048) is masked off, where one tile of B
/// masks off up to half of it.
/// `least` is the fewest columns every row holds from the tile's start: cols for a row read from its start,
/// the row's own width for one read through its aligned window (cols = the window, which holds from cols -
/// V + 1 to cols of the row's columns). Pieces are taken only where all but the last lie within `least`,
/// because they are read and written unmasked; else one tile.
constexpr int row_pieces(std::int64_t cols, std::int64_t least) {
  const std::int64_t block = next_pow2(cols);
  if (block >= 2048 && cols <= 5 * (block / 8) && 4 * (block / 8) <= least) return 5;
  if (block >= 512 && cols <= 3 * (block / 4) && 2 * (block / 4) <= least) return 3;
  if (block >= 2048 && cols <= 7 * (block / 8) && 6 * (block / 8) <= least) return 7;
  return 1;
}

/// Calls f.template operator()<PIECE, PIECES>() for a row of `cols` (1 to MaxBlock) held in registers as
/// row_pieces(cols, least) tiles of PIECE columns (next_pow2(cols) / 8 for 5 and 7, / 4 for 3).
template <int MaxBlock, class F>
void with_pieces(std::int64_t cols, std::int64_t least, F&& f) {
  const int pieces = row_pieces(cols, least);
  with_block<MaxBlock>(cols, [&]<int BLOCK>() {
    if constexpr (BLOCK >= 2048) {
      if (pieces == 5) return f.template operator()<BLOCK / 8, 5>();
      if (pieces == 7) return f.template operator()<BLOCK / 8, 7>();
    }
    if constexpr (BLOCK >= 512) {
      if (pieces == 3) return f.template operator()<BLOCK / 4, 3>();
    }
    f.template operator()<BLOCK, 1>();
  });
}

/// Columns each pass of a staged kernel moves at once (16 per thread of a 4-warp program).
inline constexpr int kStagePiece = 2048;
/// Stage sizes of the staged kernels are multiples of this many elements.
inline constexpr std::int64_t kStageGranule = 4096;
/// Widest row piece a staged program holds in shared memory.
inline constexpr std::int64_t kStageMaxCols = 32768;
/// Widest piece a program of a staged cluster of more than 8 programs holds (Tuning::staged_cluster): a
/// 16th of rows past 8 x kStageMaxCols (588615 columns: 36789) needs more than kStageMaxCols; 40960 halves
/// (80 KB) still leave an SM two programs.
inline constexpr std::int64_t kClusterStageMaxCols = 40960;

/// Columns of the stage that holds `cols` columns: cols rounded up to a multiple of kStageGranule (what
/// with_stage compiles).
constexpr std::int64_t stage_cols_for(std::int64_t cols) { return (cols + kStageGranule - 1) / kStageGranule * kStageGranule; }

/// Calls f.template operator()<STAGE>() with STAGE = cols rounded up to a multiple of kStageGranule, for
/// cols from 1 to Max: the stage fits the row with less than one granule to spare, so that a 12288-column
/// row takes 24 KB of shared memory in bf16 rather than the 32 KB of a power of two.
template <std::int64_t Max = kStageMaxCols, class F>
void with_stage(std::int64_t cols, F&& f) {
  static_assert(Max % kStageGranule == 0, "with_stage: Max must be a whole number of granules");
  [&]<int... K>(std::integer_sequence<int, K...>) {
    const std::int64_t granules = stage_cols_for(cols) / kStageGranule;
    (void)((granules == K + 1 ? (f.template operator()<static_cast<int>((K + 1) * kStageGranule)>(), true) : false) || ...);
  }(std::make_integer_sequence<int, static_cast<int>(Max / kStageGranule)>{});
}

}  // namespace tilefuse::kernels
