// The LayerNorm tile programs for rows wider than one program holds in registers: looped (one program
// per row looping over it), split-row (partial sums, then combine and normalize), cluster (a row over a
// thread-block cluster in registers) and staged (a row through shared memory). Launchers: layernorm.hpp.
#pragma once

#include <array>
#include <optional>
#include <tuple>
#include <utility>

#include "kernels/rows/programs.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

namespace detail {

// Sums of x - shift and of its square over columns [start, end) of the row at `base`, in BLOCK-column
// pieces, per lane and then across lanes. The shift (the row's first element) cancels a large mean
// before anything is squared. With FIRST, columns below `first` are not the row's (an aligned window's
// head, row_window). Only the end pieces are masked (for_row_pieces_ahead). The row is read evict-last
// where the kernel's shape keeps the hint (Tuning::keep_rows_in_l2): the second pass
// (normalize_affine_range, streaming) or kernel rereads it.
template <class T, int BLOCK, bool FIRST = false>
std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> shifted_sums(tl::Ptr<T> x, tl::Scalar<tl::i32> base,
                                                                  tl::Scalar<tl::f32> shift, tl::Scalar<tl::i32> start,
                                                                  tl::Scalar<tl::i32> end,
                                                                  tl::Scalar<tl::i32> first = tl::scalar<tl::i32>(0)) {
  auto cols = tl::arange<BLOCK>();
  auto init = std::tuple{tl::full<tl::f32, BLOCK>(0.0), tl::full<tl::f32, BLOCK>(0.0)};
  auto load = [&](tl::Scalar<tl::i32> from, const auto& mask) { return tl::load(x + base + from + cols, mask, tl::Cache::evict_last); };
  auto [s1, s2] = for_row_pieces_ahead<BLOCK, FIRST>(start, first, end, load, init,
                                                     [&](auto, auto piece, const PieceMask<BLOCK>& in_row, auto s1, auto s2) {
                                                       auto d = in_row.in_row(tl::cast<tl::f32>(piece) - shift, 0.0);
                                                       return std::tuple{s1 + d, s2 + d * d};
                                                     });
  return {tl::sum(s1), tl::sum(s2)};
}

// Mean (of the shifted values) and rstd of `count` elements from their shifted sums.
inline std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> shifted_moments(tl::Scalar<tl::f32> s1, tl::Scalar<tl::f32> s2,
                                                                           tl::Scalar<tl::f32> count, tl::Scalar<tl::f32> eps) {
  auto mean_shifted = s1 / count;
  // Rounding can leave a tiny negative variance: clamp it to 0 (a NaN, from an infinite or NaN element, stays).
  auto raw = s2 / count - mean_shifted * mean_shifted;
  auto var = tl::where(raw < 0.0, 0.0, raw);
  return {mean_shifted, tl::rsqrt(var + eps)};
}

// y = (x - shift - mean_shifted) * rstd * w + b over columns [start, end) of the row at `base`, last
// piece first (the pieces the sums read last are the likeliest still in L2). With FIRST, the row's
// columns start at window index `first` (row_window), and so do w and b's. x is read for the last time
// and y written streaming (evicted first), so that y does not push the rest of x out of L2 first.
template <class T, int BLOCK, bool FIRST = false, bool SHIFTED = false>
void normalize_affine_range(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Scalar<tl::i32> base,
                            tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end, tl::Scalar<tl::f32> shift,
                            tl::Scalar<tl::f32> mean_shifted, tl::Scalar<tl::f32> rstd,
                            tl::Scalar<tl::i32> first = tl::scalar<tl::i32>(0)) {
  auto cols = tl::arange<BLOCK>();
  auto load = [&](tl::Scalar<tl::i32> from, const auto& mask) { return tl::load(x + base + from + cols, mask, tl::Cache::streaming); };
  for_row_pieces_ahead<BLOCK, FIRST, true>(start, first, end, load, std::tuple<>{}, [&](auto from, auto piece, const PieceMask<BLOCK>& in_row) {
    auto idx = from + cols;
    auto centered = (tl::cast<tl::f32>(piece) - shift) - mean_shifted;  // both small
    auto column = [&] {
      if constexpr (FIRST && !SHIFTED) return idx - first;  // (SHIFTED: w and b point at the row's shifted copy)
      else return idx;
    }();
    in_row.access([&](const auto&... mask) {
      auto wv = tl::cast<tl::f32>(tl::load(w + column, mask...));
      auto bv = tl::cast<tl::f32>(tl::load(b + column, mask...));
      tl::store(y + base + idx, tl::cast<T>(centered * rstd * wv + bv), mask..., tl::Cache::streaming);
    });
    return std::tuple<>{};
  });
}

// A program's columns of a row shared by a thread-block cluster (Tuning::looped_cluster): [start, start +
// chunk) of the row (of its aligned window with PEEL).
struct ClusterPart {
  tl::Scalar<tl::i32> start, chunk;
};

// The looped LayerNorm of row `row` (layernorm_looped_program and, with `copy_stride`,
// layernorm_looped_shifted_program; with `part`, the cluster programs' share of it): the sums' pass (with
// `part`, added over the cluster: tl::cluster_sum), then, with `copy_stride` (PEEL only), a wait for the
// launch before that wrote w and b's shifted copies and the normalizing pass reading the copy of the
// row's head at its window's indices; without it, w and b at the row's columns. The program at the row's
// start writes its mean and rstd.
template <class T, int BLOCK, bool PEEL>
void looped_row(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out, tl::Ptr<tl::f32> rstd_out,
                tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::f32> eps,
                std::optional<tl::Scalar<tl::i32>> copy_stride, tl::Scalar<tl::i32> row, std::optional<ClusterPart> part) {
  auto zero = tl::scalar<tl::i32>(0);
  auto shift = tl::cast<tl::f32>(tl::load(x + row * stride));
  auto start = part ? part->start : zero;
  auto ends = [&](tl::Scalar<tl::i32> whole) { return part ? tl::Scalar<tl::i32>(tl::minimum(start + part->chunk, whole)) : whole; };
  auto moments_of = [&](std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> sums) {
    auto [s1, s2] = sums;
    if (part) return shifted_moments(tl::cluster_sum(s1), tl::cluster_sum(s2), tl::cast<tl::f32>(n), eps);
    return shifted_moments(s1, s2, tl::cast<tl::f32>(n), eps);
  };
  auto [mean_shifted, rstd] = [&] {
    if constexpr (PEEL) {
      auto [base, head] = row_window<T>(row * stride);
      auto end = ends(head + n);
      auto moments = moments_of(shifted_sums<T, BLOCK, true>(x, base, shift, start, end, head));
      if (copy_stride) {
        tl::gdc_wait();
        auto copy = head * *copy_stride;
        normalize_affine_range<T, BLOCK, true, true>(x, w + copy, b + copy, y, base, start, end, shift, std::get<0>(moments),
                                                     std::get<1>(moments), head);
      } else {
        normalize_affine_range<T, BLOCK, true>(x, w, b, y, base, start, end, shift, std::get<0>(moments), std::get<1>(moments), head);
      }
      return moments;
    } else {
      auto base = row * stride;
      auto end = ends(n);
      auto moments = moments_of(shifted_sums<T, BLOCK>(x, base, shift, start, end));
      normalize_affine_range<T, BLOCK>(x, w, b, y, base, start, end, shift, std::get<0>(moments), std::get<1>(moments));
      return moments;
    }
  }();
  if (part) {
    auto first = start == 0;
    tl::store(mean_out + row, shift + mean_shifted, first);
    tl::store(rstd_out + row, rstd, first);
  } else {
    tl::store(mean_out + row, shift + mean_shifted);
    tl::store(rstd_out + row, rstd);
  }
}


// A split row's shift (its first element, x[start]), mean of the shifted values and rstd from its
// `splits` partial sums at partial_s1/partial_s2[r * splits + k] (k = tl::arange, valid = k < splits):
// what both combine kernels start from.
template <class T, int SPLITS_BLOCK>
std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> split_moments(
    tl::Ptr<T> x, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2, tl::Scalar<tl::i32> r, tl::Scalar<tl::i32> splits,
    const tl::Tile<tl::i32, SPLITS_BLOCK>& k, const tl::Tile<tl::i1, SPLITS_BLOCK>& valid, tl::Scalar<tl::i32> start,
    tl::Scalar<tl::i32> n, tl::Scalar<tl::f32> eps) {
  auto s1 = tl::sum(tl::load(partial_s1 + r * splits + k, valid));
  auto s2 = tl::sum(tl::load(partial_s2 + r * splits + k, valid));
  auto shift = tl::cast<tl::f32>(tl::load(x + start));
  auto [mean_shifted, rstd] = shifted_moments(s1, s2, tl::cast<tl::f32>(n), eps);
  return {shift, mean_shifted, rstd};
}

}  // namespace detail

/// LayerNorm of one row of any width, looping over it in BLOCK-column pieces: the first pass sums
/// x - x[0] and its square per lane (shifted by the row's first element, so a large mean cancels before
/// it is squared), the second writes (x - mean) * rstd * w + b. Reads the row twice, writes it once.
/// With PEEL, each row is read through its aligned window (row_window), for widths that are not a
/// multiple of 16 bytes.
template <class T, int BLOCK, bool PEEL = false>
void layernorm_looped_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                              tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                              tl::Scalar<tl::f32> eps) {
  detail::looped_row<T, BLOCK, PEEL>(x, w, b, y, mean_out, rstd_out, stride, n, eps, std::nullopt, tl::program_id(0), std::nullopt);
}

/// layernorm_looped_program through windows with w and b from their shifted copies
/// (layernorm_shifted_affine_program, launched just before, `w` and `b` at copy 0's w and b, `copy_stride`
/// = 2S): the sums' pass over x overlaps the copies; the normalizing pass waits for them (tl::gdc_wait)
/// and reads w and b 16 bytes at a time from the copy of the row's head.
template <class T, int BLOCK>
void layernorm_looped_shifted_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                      tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                                      tl::Scalar<tl::f32> eps, tl::Scalar<tl::i32> copy_stride) {
  detail::looped_row<T, BLOCK, true>(x, w, b, y, mean_out, rstd_out, stride, n, eps, copy_stride, tl::program_id(0), std::nullopt);
}

/// The looped LayerNorm with each row shared by a thread-block cluster of `splits` programs
/// (Tuning::looped_cluster): program pid loops over columns [start, start + chunk) of its cluster's rows
/// (start = (pid % splits) * chunk, a whole number of BLOCK pieces; of the row's aligned window with PEEL),
/// the shifted sums add over the cluster (tl::cluster_sum), and the clusters stride over rows, so that the
/// rows in flight are a cluster's fraction of one-program-per-row's and the normalizing pass finds its row
/// in the L2. With SHIFTED (PEEL only), w and b come from their shifted copies as in
/// layernorm_looped_shifted_program (`copy_stride`; unused without).
template <class T, int BLOCK, bool PEEL = false, bool SHIFTED = false>
void layernorm_looped_cluster_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                      tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                                      tl::Scalar<tl::f32> eps, tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits,
                                      tl::Scalar<tl::i32> rows, tl::Scalar<tl::i32> copy_stride) {
  static_assert(PEEL || !SHIFTED, "tilefuse: shifted copies of w and b serve rows read through windows only");
  auto pid = tl::program_id(0);
  const detail::ClusterPart part{(pid % splits) * chunk, chunk};
  // Every program of a cluster takes the same rows, so all of them reach each cluster reduction.
  tl::for_range(pid / splits, rows, tl::num_programs(0) / splits, [&](auto row) {
    detail::looped_row<T, BLOCK, PEEL>(x, w, b, y, mean_out, rstd_out, stride, n, eps,
                                       SHIFTED ? std::optional<tl::Scalar<tl::i32>>(copy_stride) : std::nullopt, row, part);
  });
}

/// Split-row LayerNorm, kernel 1 of 2: program (r, split) of a launch over rows first_row + r writes the
/// sums of x - x[row, 0] and of its square over its `chunk` columns to partial_s1/partial_s2[r * splits +
/// split]. (A launch covers a group of rows, as for the split-row softmax.)
/// With PEEL, the row is read through its aligned window (row_window) and the chunks split the window.
template <class T, int BLOCK, bool PEEL = false>
void layernorm_partials_program(tl::Ptr<T> x, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2,
                                tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk,
                                tl::Scalar<tl::i32> first_row) {
  tl::gdc_launch_dependents();  // the combine kernel's programs may take the SMs this launch's last ones leave
  auto r = tl::program_id(0);
  auto row = first_row + r;
  auto split = tl::program_id(1);
  auto start = split * chunk;
  auto shift = tl::cast<tl::f32>(tl::load(x + row * stride));
  auto [s1, s2] = [&] {
    if constexpr (PEEL) {
      auto [base, head] = row_window<T>(row * stride);
      return detail::shifted_sums<T, BLOCK, true>(x, base, shift, start, tl::minimum(start + chunk, head + n), head);
    } else {
      return detail::shifted_sums<T, BLOCK>(x, row * stride, shift, start, tl::minimum(start + chunk, n));
    }
  }();
  // The reads above overlap the previous group's combine kernel (launched with pdl); the partials it
  // reads are overwritten only once it has ended.
  tl::gdc_wait();
  tl::store(partial_s1 + r * tl::num_programs(1) + split, s1);
  tl::store(partial_s2 + r * tl::num_programs(1) + split, s2);
}

/// Split-row LayerNorm, kernel 2 of 2: program (r, split) adds row first_row + r's SPLITS_BLOCK-padded
/// partial sums into its mean and rstd, normalizes its own chunk, and (split 0) writes mean and rstd.
template <class T, int BLOCK, int SPLITS_BLOCK, bool PEEL = false>
void layernorm_combine_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                               tl::Ptr<tl::f32> rstd_out, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2,
                               tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk,
                               tl::Scalar<tl::f32> eps, tl::Scalar<tl::i32> first_row) {
  tl::gdc_launch_dependents();  // the next group's partials may start reading its rows
  tl::gdc_wait();               // for this group's partials (launched with pdl)
  auto r = tl::program_id(0);
  auto row = first_row + r;
  auto split = tl::program_id(1);
  auto splits = tl::num_programs(1);
  auto base = row * stride;
  auto k = tl::arange<SPLITS_BLOCK>();
  auto valid = k < splits;
  auto [shift, mean_shifted, rstd] = detail::split_moments<T>(x, partial_s1, partial_s2, r, splits, k, valid, base, n, eps);
  auto start = split * chunk;
  if constexpr (PEEL) {
    auto [window, head] = row_window<T>(base);
    detail::normalize_affine_range<T, BLOCK, true>(x, w, b, y, window, start, tl::minimum(start + chunk, head + n), shift,
                                                   mean_shifted, rstd, head);
  } else {
    detail::normalize_affine_range<T, BLOCK>(x, w, b, y, base, start, tl::minimum(start + chunk, n), shift, mean_shifted, rstd);
  }
  auto first = split == 0;
  tl::store(mean_out + row, shift + mean_shifted, first);
  tl::store(rstd_out + row, rstd, first);
}

/// Split-row LayerNorm, kernel 2 of 2 with ROWS rows a program (Tuning::split_combine_rows): the rows
/// of a group whose windows start at the same offset into a vector (rows STEP apart, STEP =
/// kVectorElements<T> with PEEL, else 1) share their w and b, so a program reads its `chunk` columns of w
/// and b once, piece by piece, and normalizes that chunk of each of its rows with them. (With PEEL, w and
/// b go element by element at the window's offset: ROWS rows cut those loads ROWS-fold; without, their
/// traffic through the L2.) Program q of a launch over `group_rows` rows from first_row takes rows c +
/// (j * ROWS + i) * STEP of the group (c = q % STEP, j = q / STEP, i < ROWS; the launch's first dimension
/// is split_combine_programs, so every program has row c + j * ROWS * STEP); a slot past the group takes
/// that first row again (the same thread writes the same values twice). `splits` is the partials' count a
/// row; the second dimension cuts the row's window into `chunk`-column chunks of its own.
template <class T, int BLOCK, int SPLITS_BLOCK, int ROWS, bool PEEL = false>
void layernorm_combine_rows_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                    tl::Ptr<tl::f32> rstd_out, tl::Ptr<tl::f32> partial_s1, tl::Ptr<tl::f32> partial_s2,
                                    tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk,
                                    tl::Scalar<tl::f32> eps, tl::Scalar<tl::i32> first_row, tl::Scalar<tl::i32> group_rows,
                                    tl::Scalar<tl::i32> splits) {
  constexpr int STEP = PEEL ? kVectorElements<T> : 1;
  tl::gdc_launch_dependents();  // the next group's partials may start reading its rows
  tl::gdc_wait();               // for this group's partials (launched with pdl)
  auto q = tl::program_id(0);
  auto r0 = q % STEP + (q / STEP) * (ROWS * STEP);
  auto k = tl::arange<SPLITS_BLOCK>();
  auto valid = k < splits;
  struct Row {
    tl::Scalar<tl::i32> row, base;
    tl::Scalar<tl::f32> shift, mean_shifted, rstd;
  };
  auto row_of = [&](int i) {
    tl::Scalar<tl::i32> r = r0;
    if (i > 0) r = tl::where(r0 + i * STEP < group_rows, r0 + i * STEP, r0);
    auto row = first_row + r;
    tl::Scalar<tl::i32> base = row * stride;
    auto [shift, mean_shifted, rstd] = detail::split_moments<T>(x, partial_s1, partial_s2, r, splits, k, valid, base, n, eps);
    if constexpr (PEEL) base = row_window<T>(base).base;
    return Row{row, base, shift, mean_shifted, rstd};
  };
  auto rows = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::array<Row, ROWS>{row_of(static_cast<int>(I))...}; }(
      std::make_index_sequence<ROWS>{});
  // Every row of the program starts at the same offset into its window (0 without PEEL).
  tl::Scalar<tl::i32> head = tl::scalar<tl::i32>(0);
  if constexpr (PEEL) head = rows[0].row * stride - rows[0].base;
  auto start = tl::program_id(1) * chunk;
  auto end = tl::minimum(start + chunk, head + n);
  auto cols = tl::arange<BLOCK>();
  auto load_w = [&](tl::Scalar<tl::i32> from, const auto& mask) { return tl::load(w + (from + cols - head), mask); };
  // Last piece first, as normalize_affine_range: the pieces the partials read last are the likeliest in L2.
  for_row_pieces_ahead<BLOCK, PEEL, true>(start, head, end, load_w, std::tuple<>{}, [&](auto from, auto w_piece, const PieceMask<BLOCK>& in_row) {
    auto idx = from + cols;
    auto wv = tl::cast<tl::f32>(w_piece);
    auto bv = tl::cast<tl::f32>(in_row.access([&](const auto&... mask) { return tl::load(b + (idx - head), mask...); }));
    for (const Row& r : rows)
      in_row.access([&](const auto&... mask) {
        auto xv = tl::load(x + r.base + idx, mask..., tl::Cache::streaming);
        auto centered = (tl::cast<tl::f32>(xv) - r.shift) - r.mean_shifted;  // both small
        tl::store(y + r.base + idx, tl::cast<T>(centered * r.rstd * wv + bv), mask..., tl::Cache::streaming);
      });
    return std::tuple<>{};
  });
  auto first = tl::program_id(1) == 0;
  for (const Row& r : rows) {
    tl::store(mean_out + r.row, r.shift + r.mean_shifted, first);
    tl::store(rstd_out + r.row, r.rstd, first);
  }
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
  auto rstd = tl::rsqrt(tl::where(m2 < 0.0, 0.0, m2) / count + eps);  // (a NaN stays NaN)
  auto wv = tl::cast<tl::f32>(tl::load(w + start + lane, mask));
  auto bv = tl::cast<tl::f32>(tl::load(b + start + lane, mask));
  tl::store(y + base + lane, tl::cast<T>(centered * rstd * wv + bv), mask);
  auto first = pid % splits == 0;
  tl::store(mean_out + row, tl::cast<tl::f32>(shift) + mean_shifted, first);
  tl::store(rstd_out + row, rstd, first);
}

namespace detail {

// The staged LayerNorm of the chunk `part` whose elements `stage` holds (with `n_rows`, a row past the
// matrix's n_rows has an empty chunk and writes nothing): three passes; with `copy_stride`, a wait for
// the launch before (the shifted copies of w and b) before the third pass, which then reads w and b from
// the copy of the chunk's head at its stage indices.
template <class T, int STAGE, int PIECE, bool PEEL>
void staged_rows_chunk(const StagedChunk<T, STAGE, PIECE, PEEL>& part, const tl::Stage<T, STAGE>& stage, tl::Ptr<T> x, tl::Ptr<T> w,
                       tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out, tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride,
                       tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> splits, tl::Scalar<tl::f32> eps,
                       std::optional<tl::Scalar<tl::i32>> n_rows, std::optional<tl::Scalar<tl::i32>> copy_stride) {
  // The row's first element, in every program of it (a row past the matrix reads the last row's).
  auto shift = tl::cast<tl::f32>(tl::load(x + (n_rows ? tl::minimum(part.row, *n_rows - 1) : part.row) * stride));
  auto shifted = [&](auto from) { return tl::cast<tl::f32>(stage.template load<PIECE>(from)) - shift; };
  auto [s1] = part.pieces(std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, const PieceMask<PIECE>& in_row, auto s1) {
    return std::tuple{s1 + in_row.in_row(shifted(from), 0.0)};
  });
  auto count = tl::cast<tl::f32>(n);
  auto mean_shifted = tl::cluster_sum(tl::sum(s1)) / count;
  // x - mean of the piece at `from`, as (x - shift) - mean_shifted: both differences are small.
  auto [s2] = part.pieces(std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, const PieceMask<PIECE>& in_row, auto s2) {
    auto c = in_row.in_row(shifted(from) - mean_shifted, 0.0);
    return std::tuple{s2 + c * c};
  });
  auto rstd = tl::rsqrt(tl::cluster_sum(tl::sum(s2)) / count + eps);
  auto mean_rstd = mean_shifted * rstd;
  // Pass 3 with w and b at `wr` and `br`, stage element i of the piece at `from` at index col(from)[i].
  auto normalize = [&](tl::Ptr<T> wr, tl::Ptr<T> br, auto col) {
    part.pieces(std::tuple<>{}, [&](auto from, const PieceMask<PIECE>& in_row) {
      in_row.access([&](const auto&... mask) {
        // (x - shift - mean_shifted) * rstd as one multiply-add on the small x - shift.
        auto normalized = shifted(from) * rstd - mean_rstd;
        auto wv = tl::cast<tl::f32>(tl::load(wr + col(from), mask...));
        auto bv = tl::cast<tl::f32>(tl::load(br + col(from), mask...));
        tl::store(y + part.base + from + part.cols, tl::cast<T>(normalized * wv + bv), mask...);
      });
      return std::tuple<>{};
    });
  };
  if (copy_stride) {
    // Copy h of w and b holds column c at index c + h: the chunk's head's copy at stage indices.
    tl::gdc_wait();
    auto copy = part.head * *copy_stride;
    normalize(w + copy, b + copy, [&](auto from) { return part.start + from + part.cols; });
  } else {
    normalize(w, b, [&](auto from) {  // the row's column of each stage element
      if constexpr (PEEL) return part.start + from + part.cols - part.head;
      else return part.start + from + part.cols;
    });
  }
  auto first = part.pid % splits == 0;
  if (n_rows) first = first & (part.row < *n_rows);
  tl::store(mean_out + part.row, shift + mean_shifted, first);
  tl::store(rstd_out + part.row, rstd, first);
}

// The staged LayerNorm of program_id(0)'s chunk (layernorm_staged_program and, with `copy_stride`, PEEL
// only, layernorm_staged_shifted_program): the copy, then staged_rows_chunk.
template <class T, int STAGE, int PIECE, bool PEEL>
void staged_chunk(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out, tl::Ptr<tl::f32> rstd_out,
                  tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits,
                  tl::Scalar<tl::f32> eps, tl::Scalar<tl::i32> first_row, std::optional<tl::Scalar<tl::i32>> copy_stride) {
  const auto part = StagedChunk<T, STAGE, PIECE, PEEL>::of(stride, n, chunk, splits, first_row);
  tl::Stage<T, STAGE> stage;
  part.copy(stage, x);
  staged_rows_chunk(part, stage, x, w, b, y, mean_out, rstd_out, stride, n, splits, eps, std::nullopt, copy_stride);
}

}  // namespace detail

/// LayerNorm of rows staged through shared memory, read from global memory once and exactly two-pass: each
/// program's chunk of a row (StagedChunk: one program per row, or a thread-block cluster or resident group
/// per row that combines its sums through tl::cluster_sum; rows from first_row) is copied into a stage of
/// STAGE elements of the input dtype, then pass 1 sums x - x[0] from the stage, pass 2 the squares of the
/// centered values, and pass 3 normalizes and writes y. Only a PIECE-column piece is in registers at a
/// time, so a program needs few registers and the SM holds as many as its shared memory allows; only the
/// pieces that hold the chunk's ends are masked. With PEEL the chunk is copied from the vector boundary
/// before it (row_window), for rows that are not whole vectors.
template <class T, int STAGE, int PIECE, bool PEEL = false>
void layernorm_staged_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                              tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                              tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::f32> eps,
                              tl::Scalar<tl::i32> first_row) {
  detail::staged_chunk<T, STAGE, PIECE, PEEL>(x, w, b, y, mean_out, rstd_out, stride, n, chunk, splits, eps, first_row, std::nullopt);
}

/// layernorm_staged_program with programs (or clusters of `splits` programs) striding over rows through
/// two stages in turn (for_rows_in_turn), each row's chunk copied while the row before is read.
template <class T, int STAGE, int PIECE, bool PEEL = false>
void layernorm_staged_strided_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                      tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                                      tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::f32> eps,
                                      tl::Scalar<tl::i32> n_rows) {
  using Chunk = StagedChunk<T, STAGE, PIECE, PEEL>;
  for_rows_in_turn<T, STAGE>(
      x, splits, n_rows, [&](tl::Scalar<tl::i32> row) { return Chunk::at(row, stride, n, chunk, splits, n_rows); },
      [&](const Chunk& part, const tl::Stage<T, STAGE>& stage) {
        detail::staged_rows_chunk(part, stage, x, w, b, y, mean_out, rstd_out, stride, n, splits, eps, n_rows, std::nullopt);
      });
}

/// layernorm_staged_program through windows (PEEL) with w and b from their shifted copies
/// (layernorm_shifted_affine_program, launched just before, `w` and `b` at copy 0's w and b,
/// `copy_stride` = 2S): the copy and the two statistics passes overlap the copies; the third pass waits
/// for them (tl::gdc_wait) and reads w and b 16 bytes at a time. Chunks start on whole vectors.
template <class T, int STAGE, int PIECE>
void layernorm_staged_shifted_program(tl::Ptr<T> x, tl::Ptr<T> w, tl::Ptr<T> b, tl::Ptr<T> y, tl::Ptr<tl::f32> mean_out,
                                      tl::Ptr<tl::f32> rstd_out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n,
                                      tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::f32> eps,
                                      tl::Scalar<tl::i32> first_row, tl::Scalar<tl::i32> copy_stride) {
  detail::staged_chunk<T, STAGE, PIECE, true>(x, w, b, y, mean_out, rstd_out, stride, n, chunk, splits, eps, first_row, copy_stride);
}

}  // namespace tilefuse::kernels
