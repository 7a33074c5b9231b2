// LayerNorm and RMSNorm forward, one program per row with the row in registers. LayerNorm is two-pass
// inside the program: the mean first, then the variance of the centered values it already holds (no
// second read of memory), which stays accurate when the mean is large against the spread.
#pragma once

#include <optional>

#include "kernels/common.hpp"
#include "kernels/softmax.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// Widest row one normalization program holds in registers.
inline constexpr std::int64_t kNormMaxCols = 16384;

/// y = (x - mean) * rstd * w + b per row; writes mean and rstd per row (f32) for a backward pass. The row
/// is held in registers as PIECES tiles of PIECE columns (a 12288-column row as 3 x 4096, where one tile
/// would be 16384 wide and a quarter of it masked off): every piece but the last is whole, and the last
/// holds `tail` = n - (PIECES - 1) * PIECE columns.
template <class T, int PIECE, int PIECES = 1>
void layernorm_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                       tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                       tl::Scalar<tl::i32> tail, tl::Scalar<tl::f32> eps) {
  static_assert(PIECES >= 1, "tilefuse layernorm_program: a row takes at least one piece.");
  // f32 rows are summed as x - x[0] (exact for values near each other), so that a mean of 1e4 against a
  // spread of 1 costs no digits of the centered values. Halves need no shift: at |mean| = 1e4 their own
  // spacing (8 for f16, 64 for bf16) is far above what the f32 sums lose, and the shift would cost a
  // load and a subtraction per element.
  constexpr bool shifted = std::is_same_v<T, tl::f32>;
  // w and b are loaded before the reductions for f32 rows, so that their round trip overlaps them (for
  // 2 x 16 more registers per thread): on the H200, 4096x4096 f32 took 36.96 us with them loaded first
  // and 38.50 loaded last, 16384x768 f32 28.74 and 29.54. Halves hold twice the elements per thread:
  // 8192x8192 bf16 took 90.6 us loading them first and 71.4 last, 4096x12288 bf16 59.9 and 55.4 (loaded
  // piece by piece as each is stored).
  constexpr bool affine_first = std::is_same_v<T, tl::f32>;
  // Half rows are read and written streaming (evicted first), which keeps w and b, loaded per row after
  // the reductions, cached: on the H200 8192x8192 bf16 took 70.24 us against 71.30-71.49 without hints,
  // 32768x1024 f16 36.74 against 37.47, 4096x12288 bf16 54.82 against 55.52-55.68 (streaming loads
  // alone were slower: 75.01 us at 8192x8192). f32 rows, whose w and b are loaded first, gained nothing
  // (4096x4096 37.18 both ways, 16384x768 29.15 against 28.77-28.86).
  constexpr tl::Cache row_cache = shifted ? tl::Cache::normal : tl::Cache::streaming;
  using F32Tile = tl::Tile<tl::f32, PIECE>;
  auto cols = tl::arange<PIECE>();
  auto last = cols < tail;
  // access() on piece k: with no mask but on the last piece, whose columns past the row it must not touch.
  auto masked = [&](int k, auto&& access) { return k + 1 < PIECES ? access() : access(last); };
  // Piece k with the last piece's columns past the row set to 0 (they must add nothing below).
  auto in_row = [&](int k, F32Tile t) { return k + 1 < PIECES ? t : tl::where(last, t, 0.0); };
  // w and b of piece k, widened.
  auto affine = [&](int k) {
    auto at = k * PIECE + cols;
    auto load = [&](tl::Ptr<T> p) { return tl::cast<tl::f32>(masked(k, [&](auto... m) { return tl::load(p + at, m...); })); };
    return std::pair{load(w), load(b)};
  };
  auto row = tl::program_id(0);
  auto base = row * stride;
  std::optional<tl::Scalar<tl::f32>> shift;  // x[0] where the row is shifted
  if constexpr (shifted) shift = tl::cast<tl::f32>(tl::load(x + base));
  std::vector<tl::Tile<T, PIECE>> raw;
  for (int k = 0; k < PIECES; ++k) {
    auto ptrs = x + (base + k * PIECE) + cols;
    raw.push_back(masked(k, [&](auto... m) { return tl::load(ptrs, m..., row_cache); }));
  }
  std::vector<std::pair<F32Tile, F32Tile>> wb;
  if constexpr (affine_first)
    for (int k = 0; k < PIECES; ++k) wb.push_back(affine(k));
  // Two passes over the registers: the mean, then the variance of the centered values.
  std::vector<F32Tile> xs;
  for (int k = 0; k < PIECES; ++k) {
    auto v = tl::cast<tl::f32>(raw[k]);
    xs.push_back(in_row(k, shift ? v - *shift : v));
  }
  auto count = tl::cast<tl::f32>(n);
  auto total = xs[0];
  for (int k = 1; k < PIECES; ++k) total = total + xs[k];
  auto mean_shifted = tl::sum(total) / count;
  std::vector<F32Tile> centered;
  for (int k = 0; k < PIECES; ++k) centered.push_back(in_row(k, xs[k] - mean_shifted));
  auto squares = centered[0] * centered[0];
  for (int k = 1; k < PIECES; ++k) squares = squares + centered[k] * centered[k];
  auto var = tl::sum(squares) / count;
  auto rstd = 1.0 / tl::sqrt(var + eps);
  for (int k = 0; k < PIECES; ++k) {
    auto [wv, bv] = affine_first ? wb[k] : affine(k);
    auto at = base + k * PIECE + cols;
    auto out = tl::cast<T>(centered[k] * rstd * wv + bv);
    masked(k, [&](auto... m) { tl::store(y + at, out, m..., row_cache); });
  }
  tl::store(mean_out + row, shift ? *shift + mean_shifted : mean_shifted);
  tl::store(rstd_out + row, rstd);
}

/// The one-pass variant, var = E[x^2] - E[x]^2 in f32: what the two-pass kernel is tested against (it
/// loses every digit when |mean| >> std). Kept as a baseline, not for use.
template <class T, int BLOCK>
void layernorm_one_pass_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                                tl::Scalar<tl::f32> eps) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto xv = tl::cast<tl::f32>(tl::load(x + row * stride + cols, mask));
  auto count = tl::cast<tl::f32>(n);
  auto mean = tl::sum(xv) / count;
  auto var = tl::maximum(tl::sum(xv * xv) / count - mean * mean, 0.0);
  auto rstd = 1.0 / tl::sqrt(var + eps);
  auto wv = tl::cast<tl::f32>(tl::load(w + cols, mask));
  auto bv = tl::cast<tl::f32>(tl::load(b + cols, mask));
  tl::store(y + row * stride + cols, tl::cast<T>((xv - mean) * rstd * wv + bv), mask);
  tl::store(mean_out + row, mean);
  tl::store(rstd_out + row, rstd);
}

/// y = x * rsqrt(mean(x^2) + eps) * w per row.
template <class T, int BLOCK>
void rmsnorm_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> y, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                     tl::Scalar<tl::f32> eps) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto xv = tl::cast<tl::f32>(tl::load(x + row * stride + cols, mask));
  auto rstd = 1.0 / tl::sqrt(tl::sum(xv * xv) / tl::cast<tl::f32>(n) + eps);
  auto wv = tl::cast<tl::f32>(tl::load(w + cols, mask));
  tl::store(y + row * stride + cols, tl::cast<T>(xv * rstd * wv), mask);
}

/// The LayerNorm kernel for dtype T and rows held as PIECES tiles of PIECE columns.
template <class T, int PIECE, int PIECES = 1>
auto& layernorm_kernel() {
  return pieces_kernel<&layernorm_program<T, PIECE, PIECES>, PIECE, PIECES>(
      "layernorm", {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "tail", "eps"});
}
/// The one-pass LayerNorm baseline kernel.
template <class T, int BLOCK>
auto& layernorm_one_pass_kernel() {
  return row_kernel<&layernorm_one_pass_program<T, BLOCK>, BLOCK>(
      "layernorm_one_pass", {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps"});
}
/// The RMSNorm kernel for dtype T and row tile BLOCK.
template <class T, int BLOCK>
auto& rmsnorm_kernel() {
  return row_kernel<&rmsnorm_program<T, BLOCK>, BLOCK>("rmsnorm",
                                                                                   {"x", "w", "y", "stride", "n", "eps"});
}

namespace detail {
inline void check_norm_cols(const char* kernel, std::int64_t cols) {
  if (cols > kNormMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the one-program row limit of " + std::to_string(kNormMaxCols) + " elements" +
                                (std::string(kernel) == "layernorm" ? " (kernels::layernorm_auto and layernorm_looped take rows of any width)" : ""));
}
}  // namespace detail

/// Per-row statistics LayerNorm writes (f32, one per row), for a backward pass.
template <class F32Buf>
struct RowStats {
  F32Buf mean, rstd;
};

namespace detail {
// The argument checks layernorm() and layernorm_looped() share.
template <class Buf, class F32Buf>
void check_layernorm_args(const char* kernel, const Buf& x, const Buf& w, const Buf& b, const Buf& y,
                          const RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols) {
  check_matrix(kernel, "x", x, rows, cols);
  check_matrix(kernel, "y", y, rows, cols);
  check_vector(kernel, "w", w, cols);
  check_vector(kernel, "b", b, cols);
  check_vector(kernel, "mean", stats.mean, rows);
  check_vector(kernel, "rstd", stats.rstd, rows);
}
}  // namespace detail

/// y = LayerNorm(x) * w + b over rows x cols (contiguous rows); stats receives mean and rstd per row.
/// Buf is DeviceBuffer<H> or std::span<H> / std::vector<H> (H = float, half, bfloat16); F32Buf holds floats.
template <class Buf, class F32Buf>
void layernorm(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
               float eps = 1e-5f, const RowOptions& opt = {}, bool one_pass = false) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse layernorm: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse layernorm: mean and rstd are float buffers.");
  detail::check_layernorm_args("layernorm", x, w, b, y, stats, rows, cols);
  detail::check_norm_cols("layernorm", cols);
  const LaunchConfig cfg({rows}, opt.backend, opt.stream);
  if (one_pass) {
    with_block<kNormMaxCols>(cols, [&]<int BLOCK>() {
      layernorm_one_pass_kernel<T, BLOCK>().launch(cfg, x, w, b, y, stats.mean, stats.rstd, cols, cols, eps);
    });
    return;
  }
  with_pieces<kNormMaxCols>(cols, [&]<int PIECE, int PIECES>() {
    layernorm_kernel<T, PIECE, PIECES>().launch(cfg, x, w, b, y, stats.mean, stats.rstd, cols, cols,
                                                cols - (PIECES - 1) * PIECE, eps);
  });
}

/// y = RMSNorm(x) * w over rows x cols (contiguous rows).
template <class Buf>
void rmsnorm(Buf& x, Buf& w, Buf& y, std::int64_t rows, std::int64_t cols, float eps = 1e-6f, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse rmsnorm: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  check_matrix("rmsnorm", "x", x, rows, cols);
  check_matrix("rmsnorm", "y", y, rows, cols);
  check_vector("rmsnorm", "w", w, cols);
  detail::check_norm_cols("rmsnorm", cols);
  with_block<kNormMaxCols>(cols, [&]<int BLOCK>() {
    rmsnorm_kernel<T, BLOCK>().launch(LaunchConfig({rows}, opt.backend, opt.stream), x, w, y, cols, cols, eps);
  });
}

namespace detail {

// Sums of x - shift and of its square over columns [start, end) of the row at `base`, in BLOCK-column
// pieces, per lane and then across lanes. The shift (the row's first element) cancels a large mean
// before anything is squared.
template <class T, int BLOCK>
std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> shifted_sums(tl::Ptr<T> x, tl::Scalar<tl::i32> base,
                                                                  tl::Scalar<tl::f32> shift, tl::Scalar<tl::i32> start,
                                                                  tl::Scalar<tl::i32> end) {
  auto cols = tl::arange<BLOCK>();
  auto init = std::tuple{tl::full<tl::f32, BLOCK>(0.0), tl::full<tl::f32, BLOCK>(0.0)};
  auto [s1, s2] = tl::for_range(start, end, BLOCK, init, [&](auto from, auto s1, auto s2) {
    auto idx = from + cols;
    auto mask = idx < end;
    auto d = tl::where(mask, tl::cast<tl::f32>(tl::load(x + base + idx, mask)) - shift, 0.0);
    return std::tuple{s1 + d, s2 + d * d};
  });
  return {tl::sum(s1), tl::sum(s2)};
}

// Mean (of the shifted values) and rstd of `count` elements from their shifted sums.
inline std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> shifted_moments(tl::Scalar<tl::f32> s1, tl::Scalar<tl::f32> s2,
                                                                           tl::Scalar<tl::f32> count, tl::Scalar<tl::f32> eps) {
  auto mean_shifted = s1 / count;
  auto var = tl::maximum(s2 / count - mean_shifted * mean_shifted, 0.0);
  return {mean_shifted, 1.0 / tl::sqrt(var + eps)};
}

// y = (x - shift - mean_shifted) * rstd * w + b over columns [start, end) of the row at `base`, last
// piece first (the pieces the sums read last are the likeliest still in L2).
template <class T, int BLOCK>
void normalize_affine_range(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Scalar<tl::i32> base,
                            tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end, tl::Scalar<tl::f32> shift,
                            tl::Scalar<tl::f32> mean_shifted, tl::Scalar<tl::f32> rstd) {
  auto cols = tl::arange<BLOCK>();
  auto turn = reversed_piece_turn<BLOCK>(start, end);
  tl::for_range(start, end, BLOCK, [&](auto from) {
    auto idx = (turn - from) + cols;
    auto mask = idx < end;
    auto centered = (tl::cast<tl::f32>(tl::load(x + base + idx, mask)) - shift) - mean_shifted;  // both small
    auto wv = tl::cast<tl::f32>(tl::load(w + idx, mask));
    auto bv = tl::cast<tl::f32>(tl::load(b + idx, mask));
    tl::store(y + base + idx, tl::cast<T>(centered * rstd * wv + bv), mask);
  });
}

}  // namespace detail

/// LayerNorm of one row of any width, looping over it in BLOCK-column pieces: the first pass sums
/// x - x[0] and its square per lane (shifted by the row's first element, so a large mean cancels before
/// it is squared), the second writes (x - mean) * rstd * w + b. Reads the row twice, writes it once.
template <class T, int BLOCK>
void layernorm_looped_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                              tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                              tl::Scalar<tl::f32> eps) {
  auto row = tl::program_id(0);
  auto base = row * stride;
  auto zero = tl::scalar<tl::i32>(0);
  auto shift = tl::cast<tl::f32>(tl::load(x + base));
  auto [s1, s2] = detail::shifted_sums<T, BLOCK>(x, base, shift, zero, n);
  auto [mean_shifted, rstd] = detail::shifted_moments(s1, s2, tl::cast<tl::f32>(n), eps);
  detail::normalize_affine_range<T, BLOCK>(x, w, b, y, base, zero, n, shift, mean_shifted, rstd);
  tl::store(mean_out + row, shift + mean_shifted);
  tl::store(rstd_out + row, rstd);
}

/// Split-row LayerNorm, kernel 1 of 2: program (row, split) writes the sums of x - x[row, 0] and of its
/// square over its `chunk` columns to partial_s1/partial_s2[row * splits + split].
template <class T, int BLOCK>
void layernorm_partials_program(tl::Ptr<T> x, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2,
                                tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk) {
  auto row = tl::program_id(0);
  auto split = tl::program_id(1);
  auto base = row * stride;
  auto start = split * chunk;
  auto shift = tl::cast<tl::f32>(tl::load(x + base));
  auto [s1, s2] = detail::shifted_sums<T, BLOCK>(x, base, shift, start, tl::minimum(start + chunk, n));
  tl::store(partial_s1 + row * tl::num_programs(1) + split, s1);
  tl::store(partial_s2 + row * tl::num_programs(1) + split, s2);
}

/// Split-row LayerNorm, kernel 2 of 2: program (row, split) adds the row's SPLITS_BLOCK-padded partial
/// sums into its mean and rstd, normalizes its own chunk, and (split 0) writes mean and rstd.
template <class T, int BLOCK, int SPLITS_BLOCK>
void layernorm_combine_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                               tl::Ptr<tl::f32> rstd_out, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2,
                               tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk,
                               tl::Scalar<tl::f32> eps) {
  auto row = tl::program_id(0);
  auto split = tl::program_id(1);
  auto splits = tl::num_programs(1);
  auto base = row * stride;
  auto k = tl::arange<SPLITS_BLOCK>();
  auto valid = k < splits;
  auto s1 = tl::sum(tl::load(partial_s1 + row * splits + k, valid));
  auto s2 = tl::sum(tl::load(partial_s2 + row * splits + k, valid));
  auto shift = tl::cast<tl::f32>(tl::load(x + base));
  auto [mean_shifted, rstd] = detail::shifted_moments(s1, s2, tl::cast<tl::f32>(n), eps);
  auto start = split * chunk;
  detail::normalize_affine_range<T, BLOCK>(x, w, b, y, base, start, tl::minimum(start + chunk, n), shift, mean_shifted, rstd);
  auto first = split == 0;
  tl::store(mean_out + row, shift + mean_shifted, first);
  tl::store(rstd_out + row, rstd, first);
}

/// Column piece of the looped LayerNorm.
inline constexpr int kLayerNormLoopBlock = 4096;

/// LayerNorm over rows of any width (one program per row, looping over the row); same arguments and
/// results as layernorm(); reads each row twice and writes it once.
template <class Buf, class F32Buf>
void layernorm_looped(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                      float eps = 1e-5f, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse layernorm_looped: elements must be float, half or bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse layernorm_looped: mean and rstd are float buffers.");
  detail::check_layernorm_args("layernorm_looped", x, w, b, y, stats, rows, cols);
  constexpr int B = kLayerNormLoopBlock;
  static Kernel<&layernorm_looped_program<T, B>> k(
      "layernorm_looped", looped_kernel_options(B, {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps"}));
  k.launch(LaunchConfig({rows}, opt.backend, opt.stream), x, w, b, y, stats.mean, stats.rstd, cols, cols, eps);
}

/// Scratch for the split-row LayerNorm: rows x splits partial sums of x - x[row, 0] and of its square.
template <class F32Buf>
struct NormSplitScratch {
  F32Buf partial_s1, partial_s2;
};

/// Most splits of one row the split-row LayerNorm supports (the combine kernel holds them as one tile).
inline constexpr std::int64_t kNormMaxSplits = 1024;

/// LayerNorm with each row split over `splits` programs and two kernels (partial sums, then combine and
/// normalize): the grid-wide reduction in two passes. Reads every element twice and writes it once, like
/// the looped kernel, but spreads a row over the GPU (for few, wide rows); same results as layernorm_looped.
template <class Buf, class F32Buf>
void layernorm_split(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, NormSplitScratch<F32Buf>& scratch,
                     std::int64_t rows, std::int64_t cols, std::int64_t splits, float eps = 1e-5f,
                     const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse layernorm_split: elements must be float, half or bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse layernorm_split: statistics and partials are float buffers.");
  detail::check_layernorm_args("layernorm_split", x, w, b, y, stats, rows, cols);
  constexpr int B = kLayerNormLoopBlock;
  const std::int64_t chunk = split_row_chunk("layernorm_split", cols, splits, kNormMaxSplits, B);
  check_vector("layernorm_split", "scratch.partial_s1", scratch.partial_s1, rows * splits);
  check_vector("layernorm_split", "scratch.partial_s2", scratch.partial_s2, rows * splits);
  const LaunchConfig cfg(Grid(rows, splits), opt.backend, opt.stream);
  static Kernel<&layernorm_partials_program<T, B>> partials(
      "layernorm_partials", looped_kernel_options(B, {"x", "partial_s1", "partial_s2", "stride", "n", "chunk"}));
  partials.launch(cfg, x, scratch.partial_s1, scratch.partial_s2, cols, cols, chunk);
  with_block<kNormMaxSplits>(splits, [&]<int SB>() {
    static Kernel<&layernorm_combine_program<T, B, SB>> combine(
        "layernorm_combine_" + std::to_string(SB),
        looped_kernel_options(B, {"x", "w", "b", "y", "mean", "rstd", "partial_s1", "partial_s2", "stride", "n", "chunk", "eps"}));
    combine.launch(cfg, x, w, b, y, stats.mean, stats.rstd, scratch.partial_s1, scratch.partial_s2, cols, cols, chunk, eps);
  });
}

/// LayerNorm of rows split over a thread-block cluster, read once and two-pass in registers: program pid
/// holds columns [start, start + chunk) of row pid / splits; the mean comes from tl::cluster_sum of the
/// shifted sums, then the variance from the cluster sum of the centered squares. Masked lanes load the
/// shift (so they add 0 to the first sum) and add mean^2 each to the second, which is taken back out:
/// no per-element mask beyond the loads and stores.
template <class T, int BLOCK>
void layernorm_cluster_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                               tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                               tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::f32> eps) {
  auto pid = tl::program_id(0);
  auto row = pid / splits;
  auto start = (pid % splits) * chunk;
  auto valid = tl::maximum(tl::minimum(chunk, n - start), 0);
  auto lane = tl::arange<BLOCK>();
  auto mask = lane < valid;  // one bound: a run is tested at its last lane
  auto base = row * stride + start;
  auto shift = tl::load(x + row * stride);
  auto xs = tl::cast<tl::f32>(tl::load(x + base + lane, mask, shift)) - tl::cast<tl::f32>(shift);
  auto count = tl::cast<tl::f32>(n);
  auto mean_shifted = tl::cluster_sum(tl::sum(xs)) / count;
  auto centered = xs - mean_shifted;
  auto idle = tl::cast<tl::f32>(BLOCK - valid);  // masked lanes, each holding -mean_shifted
  auto m2 = tl::cluster_sum(tl::sum(centered * centered) - idle * mean_shifted * mean_shifted);
  auto rstd = 1.0 / tl::sqrt(tl::maximum(m2, 0.0) / count + eps);
  auto wv = tl::cast<tl::f32>(tl::load(w + start + lane, mask));
  auto bv = tl::cast<tl::f32>(tl::load(b + start + lane, mask));
  tl::store(y + base + lane, tl::cast<T>(centered * rstd * wv + bv), mask);
  auto first = pid % splits == 0;
  tl::store(mean_out + row, tl::cast<tl::f32>(shift) + mean_shifted, first);
  tl::store(rstd_out + row, rstd, first);
}

/// Widest row the cluster LayerNorm takes: 8 programs of 16384 columns.
inline constexpr std::int64_t kNormClusterMaxCols = 8 * kNormMaxCols;

/// LayerNorm for rows up to 131072 columns, each read once and normalized two-pass in registers: the
/// row is split over a thread-block cluster of `splits` programs (sm_90; 0: the fewest that hold it, at
/// most 16384 columns each), which combine their sums through distributed shared memory. Same arguments
/// and results as layernorm().
template <class Buf, class F32Buf>
void layernorm_cluster(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                       float eps = 1e-5f, const RowOptions& opt = {}, std::int64_t splits = 0) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse layernorm_cluster: elements must be float, half or bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse layernorm_cluster: mean and rstd are float buffers.");
  detail::check_layernorm_args("layernorm_cluster", x, w, b, y, stats, rows, cols);
  const auto split = cluster_split("layernorm_cluster", "kernels::layernorm_looped", rows, cols, splits, kNormMaxCols);
  with_block<kNormMaxCols>(split.chunk, [&]<int BLOCK>() {
    cluster_kernel<&layernorm_cluster_program<T, BLOCK>, BLOCK>(
        "layernorm_cluster", element_bytes_of<T>(), static_cast<int>(split.splits),
        {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "chunk", "splits", "eps"})
        .launch(LaunchConfig({rows * split.splits}, opt.backend, opt.stream), x, w, b, y, stats.mean, stats.rstd, cols,
                cols, split.chunk, split.splits, eps);
  });
}

/// LayerNorm of one row staged through shared memory, read from global memory once and exactly two-pass:
/// the row is copied into a stage of STAGE elements of the input dtype (asynchronously: the whole row is
/// in flight at once, and takes no registers), then pass 1 sums x - x[0] from the stage, pass 2 the squares
/// of the centered values, and pass 3 normalizes and writes y. Only a PIECE-column piece is in registers
/// at a time, so a program needs few registers and the SM holds as many as its shared memory allows.
template <class T, int STAGE, int PIECE>
void layernorm_staged_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                              tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                              tl::Scalar<tl::f32> eps) {
  auto row = tl::program_id(0);
  auto base = row * stride;
  auto cols = tl::arange<PIECE>();
  auto zero = tl::scalar<tl::i32>(0);
  // n as the compiler can bound it (the launcher guarantees n <= STAGE): every piece is then inside the
  // stage, and where n is a multiple of PIECE the masks below fold away.
  auto valid = tl::minimum(n, STAGE);
  tl::Stage<T, STAGE> stage;
  tl::for_range(zero, valid, PIECE, [&](auto from) {
    auto idx = from + cols;
    stage.copy(from, x + base + idx, idx < valid);  // the masked tail gets 0: every element read below is written
  });
  auto shift = tl::cast<tl::f32>(tl::load(x + base));
  auto [s1] = tl::for_range(zero, valid, PIECE, std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, auto s1) {
    auto shifted = tl::cast<tl::f32>(stage.template load<PIECE>(from)) - shift;
    return std::tuple{s1 + tl::where(from + cols < valid, shifted, 0.0)};
  });
  auto count = tl::cast<tl::f32>(n);
  auto mean_shifted = tl::sum(s1) / count;
  // x - mean of the piece at `from`, as (x - shift) - mean_shifted: both differences are small.
  auto centered = [&](auto from) { return (tl::cast<tl::f32>(stage.template load<PIECE>(from)) - shift) - mean_shifted; };
  auto [s2] = tl::for_range(zero, valid, PIECE, std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, auto s2) {
    auto c = tl::where(from + cols < valid, centered(from), 0.0);
    return std::tuple{s2 + c * c};
  });
  auto rstd = 1.0 / tl::sqrt(tl::sum(s2) / count + eps);
  auto mean_rstd = mean_shifted * rstd;
  tl::for_range(zero, valid, PIECE, [&](auto from) {
    auto idx = from + cols;
    auto mask = idx < valid;
    // (x - shift - mean_shifted) * rstd as one multiply-add on the small x - shift.
    auto normalized = (tl::cast<tl::f32>(stage.template load<PIECE>(from)) - shift) * rstd - mean_rstd;
    auto wv = tl::cast<tl::f32>(tl::load(w + idx, mask));
    auto bv = tl::cast<tl::f32>(tl::load(b + idx, mask));
    tl::store(y + base + idx, tl::cast<T>(normalized * wv + bv), mask);
  });
  tl::store(mean_out + row, shift + mean_shifted);
  tl::store(rstd_out + row, rstd);
}

/// LayerNorm for rows up to kStageMaxCols (32768) columns, each read once: one program per row with the
/// row staged through shared memory (cols rounded up to 4096 elements of the input dtype per program),
/// exactly two-pass. Same arguments and results as layernorm().
template <class Buf, class F32Buf>
void layernorm_staged(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                      float eps = 1e-5f, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse layernorm_staged: elements must be float, half or bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse layernorm_staged: mean and rstd are float buffers.");
  detail::check_layernorm_args("layernorm_staged", x, w, b, y, stats, rows, cols);
  if (cols > kStageMaxCols)
    throw std::invalid_argument("tilefuse layernorm_staged: cols = " + std::to_string(cols) + " exceeds the staged limit of " +
                                std::to_string(kStageMaxCols) + " elements (kernels::layernorm_looped takes rows of any width)");
  with_stage(cols, [&]<int STAGE>() {
    static Kernel<&layernorm_staged_program<T, STAGE, kStagePiece>> k(
        "layernorm_staged_" + std::to_string(STAGE),
        staged_kernel_options(STAGE * element_bytes_of<T>(), {"x", "w", "b", "y", "mean", "rstd", "stride", "n", "eps"}));
    k.launch(LaunchConfig({rows}, opt.backend, opt.stream), x, w, b, y, stats.mean, stats.rstd, cols, cols, eps);
  });
}

/// LayerNorm for rows of any width, with the kernel chosen from the width (or by `variant`): layernorm()
/// where the row fits in registers (up to 16384 columns), layernorm_looped() above (on the H200 at
/// 4096x32768 bf16 it took 192.1 us against 222.1 for layernorm_staged(), which reads the row once but
/// issues more instructions per element; at 256x131072 bf16 looped and cluster were even, 74 and 73 us; the
/// looped one has no width limit and needs no sm_90). RowVariant::cluster and RowVariant::staged ask for
/// layernorm_cluster() and layernorm_staged().
template <class Buf, class F32Buf>
void layernorm_auto(Buf& x, Buf& w, Buf& b, Buf& y, RowStats<F32Buf>& stats, std::int64_t rows, std::int64_t cols,
                    float eps = 1e-5f, const RowOptions& opt = {}, RowVariant variant = RowVariant::automatic) {
  if (variant == RowVariant::automatic) variant = cols <= kNormMaxCols ? RowVariant::one_program : RowVariant::looped;
  switch (variant) {
    case RowVariant::one_program: return layernorm(x, w, b, y, stats, rows, cols, eps, opt);
    case RowVariant::cluster: return layernorm_cluster(x, w, b, y, stats, rows, cols, eps, opt);
    case RowVariant::staged: return layernorm_staged(x, w, b, y, stats, rows, cols, eps, opt);
    default: return layernorm_looped(x, w, b, y, stats, rows, cols, eps, opt);
  }
}

}  // namespace tilefuse::kernels
