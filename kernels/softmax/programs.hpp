// The softmax tile programs: the fused one-program-per-row softmax and its five-kernel baseline (max,
// subtract, exp, sum, divide), the looped (online) softmax for rows of any width, the split-row pair
// (partials, then combine and normalize), the cluster softmax (a row over a thread-block cluster in
// registers) and the staged softmax (a row through shared memory). Launchers: softmax.hpp.
#pragma once

#include <tuple>
#include <vector>

#include "kernels/rows/programs.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// Fused softmax of one row: load (masked tail = -inf), max, exp, sum, divide, store; computed in f32.
template <class T, int BLOCK>
void softmax_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto x = tl::cast<tl::f32>(tl::load(in + row * stride + cols, mask, -tl::inf));
  auto z = x - tl::max(x);
  auto num = tl::exp(z);
  tl::store(out + row * stride + cols, tl::cast<T>(num / tl::sum(num)), mask);
}

/// The fused softmax of one row read through its aligned window (row_window): for rows whose width is not
/// a multiple of 16 bytes, so that all but the runs at the row's two ends move 16 bytes at once. BLOCK
/// holds the row and up to a vector's worth of columns before it.
template <class T, int BLOCK>
void softmax_peeled_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto [base, head] = row_window<T>(tl::program_id(0) * stride);
  auto idx = tl::arange<BLOCK>();
  auto mask = (idx >= head) & (idx < head + n_cols);
  auto x = tl::cast<tl::f32>(tl::load(in + base + idx, mask, -tl::inf));
  auto num = tl::exp(x - tl::max(x));
  tl::store(out + base + idx, tl::cast<T>(num / tl::sum(num)), mask);
}

/// The fused softmax of one row held as PIECES tiles of PIECE columns (RowPieces), with PEEL through its
/// aligned window: a row a little wider than a power of two (4105 columns: five pieces of 1024) fills
/// 80% or more of its slots instead of half of one 8192-column tile. The pieces' maxima and sums are
/// combined element by element before one reduction each; `tail` is the last piece's columns (without
/// PEEL).
template <class T, int PIECE, int PIECES, bool PEEL>
void softmax_pieces_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                            tl::Scalar<tl::i32> tail) {
  const RowPieces<T, PIECE, PIECES, PEEL> pieces(tl::program_id(0) * stride, n_cols, tail);
  std::vector<tl::Tile<tl::f32, PIECE>> x;
  for (int k = 0; k < PIECES; ++k)
    x.push_back(tl::cast<tl::f32>(pieces.masked(k, [&](auto... m) {
      if constexpr (sizeof...(m) == 0) return tl::load(in + pieces.at(k));
      else return tl::load(in + pieces.at(k), m..., -tl::inf);  // off the row: adds nothing to max or sum
    })));
  auto most = x[0];
  for (int k = 1; k < PIECES; ++k) most = tl::maximum(most, x[k]);
  auto row_max = tl::max(most);
  std::vector<tl::Tile<tl::f32, PIECE>> num;
  for (int k = 0; k < PIECES; ++k) num.push_back(tl::exp(x[k] - row_max));
  auto total = num[0];
  for (int k = 1; k < PIECES; ++k) total = total + num[k];
  auto row_sum = tl::sum(total);
  for (int k = 0; k < PIECES; ++k)
    pieces.masked(k, [&](auto... m) { tl::store(out + pieces.at(k), tl::cast<T>(num[k] / row_sum), m...); });
}

/// The fused softmax of narrow rows, R rows of up to C columns per program as one 2D tile (RowBlock): a
/// row of tens of columns would leave a program of its own, even a packed one-warp one, with too few
/// bytes in flight to keep up with memory. With PEEL, rows are read through their aligned windows; with
/// STAGED_STORE (rows of a contiguous matrix, not PEEL), written through shared memory as one run of
/// whole 16-byte vectors (StagedRows::store).
template <class T, int R, int C, bool PEEL, bool STAGED_STORE = false>
void softmax_rows_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                          tl::Scalar<tl::i32> n_rows) {
  static_assert(!(PEEL && STAGED_STORE), "tilefuse kernels: rows read through windows are written row by row.");
  RowBlock<T, R, C, PEEL> block(stride, n_cols, n_rows);
  auto x = tl::cast<tl::f32>(tl::load(in + block.at, block.mask, -tl::inf));
  auto num = tl::exp(x - tl::max<1>(x)(tl::all, tl::none));
  auto y = tl::cast<T>(num / tl::sum<1>(num)(tl::all, tl::none));
  if constexpr (STAGED_STORE) StagedRows<T, R, C>(n_cols, n_rows).store(out, y);
  else tl::store(out + block.at, y, block.mask);
}

/// The fused softmax of narrow rows read through shared memory (StagedRows): R rows of up to C - 1
/// columns of a contiguous matrix (stride == n_cols) per program, moved as one 16-byte aligned run.
template <class T, int R, int C>
void softmax_staged_rows_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                                 tl::Scalar<tl::i32> n_rows) {
  (void)stride;  // the launcher passes n_cols: the block's rows are one run of memory
  StagedRows<T, R, C> block(n_cols, n_rows);
  auto x = tl::cast<tl::f32>(block.load(in, -tl::inf));
  auto num = tl::exp(x - tl::max<1>(x)(tl::all, tl::none));
  block.store(out, tl::cast<T>(num / tl::sum<1>(num)(tl::all, tl::none)));
}

/// Unfused step 1: m[row] = max of the row.
template <class T, int BLOCK>
void row_max_program(tl::Ptr<T> x, tl::Ptr<T> m, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  tl::store(m + row, tl::max(tl::load(x + row * stride + cols, cols < n_cols, -tl::inf)));
}

/// Unfused step 2: z = x - m[row].
template <class T, int BLOCK>
void subtract_row_program(tl::Ptr<T> x, tl::Ptr<T> m, tl::Ptr<T> z, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::cast<tl::f32>(tl::load(x + row * stride + cols, mask)) - tl::cast<tl::f32>(tl::load(m + row));
  tl::store(z + row * stride + cols, tl::cast<T>(v), mask);
}

/// Unfused step 3: e = exp(z).
template <class T, int BLOCK>
void exp_program(tl::Ptr<T> z, tl::Ptr<T> e, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::exp(tl::cast<tl::f32>(tl::load(z + row * stride + cols, mask)));
  tl::store(e + row * stride + cols, tl::cast<T>(v), mask);
}

/// Unfused step 4: s[row] = sum of the row.
template <class T, int BLOCK>
void row_sum_program(tl::Ptr<T> e, tl::Ptr<T> s, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto v = tl::cast<tl::f32>(tl::load(e + row * stride + cols, cols < n_cols));
  tl::store(s + row, tl::cast<T>(tl::sum(v)));
}

/// Unfused step 5: y = e / s[row].
template <class T, int BLOCK>
void divide_row_program(tl::Ptr<T> e, tl::Ptr<T> s, tl::Ptr<T> y, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::cast<tl::f32>(tl::load(e + row * stride + cols, mask)) / tl::cast<tl::f32>(tl::load(s + row));
  tl::store(y + row * stride + cols, tl::cast<T>(v), mask);
}

namespace detail {

// Max and sum of exp(x - max) over columns [start, end) of the row at `base`, in BLOCK-column pieces
// with a running max and sum per lane (online softmax: each element read once), then across lanes.
// With FIRST, columns below `first` are not the row's (an aligned window's head, row_window). Only the
// end pieces are masked (for_row_pieces_ahead). The row is read evict-last where the kernel's shape keeps
// the hint (Tuning::keep_rows_in_l2): the second pass (normalize_range, streaming) or kernel rereads it.
template <class T, int BLOCK, bool FIRST = false>
std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> online_max_sum(tl::Ptr<T> in, tl::Scalar<tl::i32> base,
                                                                     tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end,
                                                                     tl::Scalar<tl::i32> first = tl::scalar<tl::i32>(0)) {
  auto cols = tl::arange<BLOCK>();
  auto init = std::tuple{tl::full<tl::f32, BLOCK>(-tl::inf), tl::full<tl::f32, BLOCK>(0.0)};
  auto load = [&](tl::Scalar<tl::i32> from, const auto& mask) {
    return tl::load(in + base + from + cols, mask, -tl::inf, tl::Cache::evict_last);
  };
  auto [m, s] = for_row_pieces_ahead<BLOCK, FIRST>(start, first, end, load, init, [&](auto, auto piece, const auto&, auto m, auto s) {
    auto x = tl::cast<tl::f32>(piece);
    // One exp per element: of x and the running max, one is the new max and its exp term is 1, the other
    // is scaled by exp(-|x - m|). A masked (-inf) x leaves the lane as it was (-inf - -inf would be NaN).
    auto d = x - m;
    auto e = tl::exp(-tl::abs(d));
    auto s_new = tl::where(x == -tl::inf, s, tl::where(d > 0.0, s * e + 1.0, s + e));
    return std::tuple{tl::maximum(m, x), s_new};
  });
  auto row_max = tl::max(m);
  // A lane whose running max is still -inf saw only -inf (its sum is 0) or a NaN (the max skips NaN; its
  // sum is NaN): it adds its sum as it is, so a NaN reaches the row's sum however the row is split.
  return {row_max, tl::sum(tl::where(m == -tl::inf, s, s * tl::exp(m - row_max)))};
}

// out = exp(x - row_max) / row_sum over columns [start, end) of the row at `base`, last piece first: the
// pieces the first pass read last are the likeliest still in L2. FIRST as for online_max_sum. The row is
// read for the last time and written streaming (evicted first), so that the output does not push the
// rest of the row out of L2 before it is read.
template <class T, int BLOCK, bool FIRST = false>
void normalize_range(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> base, tl::Scalar<tl::i32> start,
                     tl::Scalar<tl::i32> end, tl::Scalar<tl::f32> row_max, tl::Scalar<tl::f32> row_sum,
                     tl::Scalar<tl::i32> first = tl::scalar<tl::i32>(0)) {
  auto cols = tl::arange<BLOCK>();
  auto load = [&](tl::Scalar<tl::i32> from, const auto& mask) {
    return tl::load(in + base + from + cols, mask, tl::Cache::streaming);
  };
  for_row_pieces_ahead<BLOCK, FIRST, true>(start, first, end, load, std::tuple<>{}, [&](auto from, auto piece, const PieceMask<BLOCK>& in_row) {
    auto y = tl::cast<T>(tl::exp(tl::cast<tl::f32>(piece) - row_max) / row_sum);
    in_row.access([&](const auto&... mask) { tl::store(out + base + from + cols, y, mask..., tl::Cache::streaming); });
    return std::tuple<>{};
  });
}

}  // namespace detail

/// Softmax of one row of any width, looping over it in BLOCK-column pieces: the first pass keeps a
/// running max and sum per lane (online softmax: read once), the second writes exp(x - max) / sum
/// (read again, write once): 3 bytes moved per 2 of the one-program kernel, with no row-width limit.
/// With PEEL, each row is read through its aligned window (row_window), for widths that are not a
/// multiple of 16 bytes.
template <class T, int BLOCK, bool PEEL = false>
void softmax_looped_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                            tl::Scalar<tl::i32> rows) {
  auto zero = tl::scalar<tl::i32>(0);
  tl::for_range(tl::program_id(0), rows, tl::num_programs(0), [&](auto row) {  // one row per program by default
    if constexpr (PEEL) {
      auto [base, head] = row_window<T>(row * stride);
      auto [row_max, row_sum] = detail::online_max_sum<T, BLOCK, true>(in, base, zero, head + n_cols, head);
      detail::normalize_range<T, BLOCK, true>(in, out, base, zero, head + n_cols, row_max, row_sum, head);
    } else {
      auto base = row * stride;
      auto [row_max, row_sum] = detail::online_max_sum<T, BLOCK>(in, base, zero, n_cols);
      detail::normalize_range<T, BLOCK>(in, out, base, zero, n_cols, row_max, row_sum);
    }
  });
}

/// The looped softmax with each row shared by a thread-block cluster of `splits` programs
/// (Tuning::looped_cluster): program pid loops over columns [start, start + chunk) of its cluster's rows
/// (start = (pid % splits) * chunk, a whole number of BLOCK pieces; of the row's aligned window with PEEL),
/// the row's max and sum combine over the cluster (tl::cluster_max, tl::cluster_sum, as the split-row
/// combine does through memory), and the clusters stride over rows, so that the rows in flight are a
/// cluster's fraction of one-program-per-row's and the second pass finds its row in the L2.
template <class T, int BLOCK, bool PEEL = false>
void softmax_looped_cluster_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                                    tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::i32> rows) {
  auto pid = tl::program_id(0);
  auto start = (pid % splits) * chunk;
  // Every program of a cluster takes the same rows, so all of them reach each cluster reduction.
  tl::for_range(pid / splits, rows, tl::num_programs(0) / splits, [&](auto row) {
    auto [base, first, end] = [&] {
      if constexpr (PEEL) {
        auto [window, head] = row_window<T>(row * stride);
        return std::tuple{window, head, tl::minimum(start + chunk, head + n_cols)};
      } else {
        return std::tuple{row * stride, tl::scalar<tl::i32>(0), tl::minimum(start + chunk, n_cols)};
      }
    }();
    auto [m, s] = detail::online_max_sum<T, BLOCK, PEEL>(in, base, start, end, first);
    auto row_max = tl::cluster_max(m);
    auto row_sum = tl::cluster_sum(tl::where(m == -tl::inf, s, s * tl::exp(m - row_max)));  // (as online_max_sum)
    detail::normalize_range<T, BLOCK, PEEL>(in, out, base, start, end, row_max, row_sum, first);
  });
}

/// Split-row softmax, kernel 1 of 2: program (r, split) of a launch over rows first_row + r writes the max
/// and the sum of exp(x - max) of its `chunk` columns to partial_max/partial_sum[r * splits + split]: the
/// grid-wide reduction's first pass, for rows too wide (and too few) to keep the GPU busy one program per
/// row. (A launch covers a group of rows: the automatic choice keeps a group within 80% of the L2, so that
/// kernel 2 reads its rows again from there.)
/// With PEEL, the row is read through its aligned window (row_window) and the chunks split the window.
template <class T, int BLOCK, bool PEEL = false>
void softmax_partials_program(tl::Ptr<T> in, tl::Ptr<tl::f32> partial_max, tl::Ptr<tl::f32> partial_sum,
                              tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols, tl::Scalar<tl::i32> chunk,
                              tl::Scalar<tl::i32> first_row) {
  tl::gdc_launch_dependents();  // the combine kernel's programs may take the SMs this launch's last ones leave
  auto r = tl::program_id(0);
  auto row = first_row + r;
  auto split = tl::program_id(1);
  auto start = split * chunk;
  auto [m, s] = [&] {
    if constexpr (PEEL) {
      auto [base, head] = row_window<T>(row * stride);
      return detail::online_max_sum<T, BLOCK, true>(in, base, start, tl::minimum(start + chunk, head + n_cols), head);
    } else {
      return detail::online_max_sum<T, BLOCK>(in, row * stride, start, tl::minimum(start + chunk, n_cols));
    }
  }();
  // The reads above overlap the previous group's combine kernel (launched with pdl); the partials it
  // reads are overwritten only once it has ended.
  tl::gdc_wait();
  tl::store(partial_max + r * tl::num_programs(1) + split, m);
  tl::store(partial_sum + r * tl::num_programs(1) + split, s);
}

/// Split-row softmax, kernel 2 of 2: program (r, split) combines row first_row + r's SPLITS_BLOCK-padded
/// partials into the row's max and sum, then normalizes its own chunk.
template <class T, int BLOCK, int SPLITS_BLOCK, bool PEEL = false>
void softmax_combine_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Ptr<tl::f32> partial_max, tl::Ptr<tl::f32> partial_sum,
                             tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols, tl::Scalar<tl::i32> chunk,
                             tl::Scalar<tl::i32> first_row) {
  tl::gdc_launch_dependents();  // the next group's partials may start reading its rows
  tl::gdc_wait();               // for this group's partials (launched with pdl)
  auto r = tl::program_id(0);
  auto row = first_row + r;
  auto split = tl::program_id(1);
  auto splits = tl::num_programs(1);
  auto k = tl::arange<SPLITS_BLOCK>();
  auto valid = k < splits;
  auto m = tl::load(partial_max + r * splits + k, valid, -tl::inf);
  auto row_max = tl::max(m);
  auto s = tl::load(partial_sum + r * splits + k, valid);
  auto row_sum = tl::sum(tl::where(m == -tl::inf, s, s * tl::exp(m - row_max)));  // (as online_max_sum)
  auto start = split * chunk;
  if constexpr (PEEL) {
    auto [base, head] = row_window<T>(row * stride);
    detail::normalize_range<T, BLOCK, true>(in, out, base, start, tl::minimum(start + chunk, head + n_cols), row_max, row_sum, head);
  } else {
    detail::normalize_range<T, BLOCK>(in, out, row * stride, start, tl::minimum(start + chunk, n_cols), row_max, row_sum);
  }
}

/// Softmax of rows split over a thread-block cluster, read once: program pid handles columns
/// [start, start + chunk) of row pid / splits (start = (pid % splits) * chunk) in registers; the row's max
/// and sum come from its cluster's programs through tl::cluster_max / tl::cluster_sum (distributed shared
/// memory on sm_90), so each element is read once and written once, as in the one-program kernel.
template <class T, int BLOCK>
void softmax_cluster_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                             tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits) {
  auto pid = tl::program_id(0);
  auto row = pid / splits;
  auto start = (pid % splits) * chunk;
  auto lane = tl::arange<BLOCK>();
  auto mask = lane < tl::minimum(chunk, n_cols - start);  // one bound: a run is tested at its last lane
  auto base = row * stride + start;
  auto x = tl::cast<tl::f32>(tl::load(in + base + lane, mask, -tl::inf));
  auto row_max = tl::cluster_max(tl::max(x));
  auto e = tl::exp(x - row_max);  // masked lanes: exp(-inf) = 0
  auto row_sum = tl::cluster_sum(tl::sum(e));
  tl::store(out + base + lane, tl::cast<T>(e / row_sum), mask);
}

/// log2(e), for exponentials taken as exp2.
inline constexpr double kLog2e = 1.4426950408889634;

/// The softmax of the chunk `part` (StagedChunk) whose elements `stage` holds, written to `out`: pass 1
/// takes the max from the stage, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum; max and sum
/// combine over the cluster (tl::cluster_max / tl::cluster_sum). Only PIECE columns are in registers at a
/// time, and only the pieces that hold the chunk's ends are masked.
template <class T, int STAGE, int PIECE, bool PEEL>
void softmax_staged_chunk(const StagedChunk<T, STAGE, PIECE, PEEL>& part, const tl::Stage<T, STAGE>& stage, tl::Ptr<T> out) {
  // Stage elements off the row read as -inf: the max ignores them and their exp adds 0.
  auto piece = [&](auto from, const PieceMask<PIECE>& in_row) {
    return in_row.in_row(tl::cast<tl::f32>(stage.template load<PIECE>(from)), -tl::inf);
  };
  auto [m] = part.pieces(std::tuple{tl::full<tl::f32, PIECE>(-tl::inf)}, [&](auto from, const PieceMask<PIECE>& in_row, auto m) {
    return std::tuple{tl::maximum(m, piece(from, in_row))};
  });
  auto row_max = tl::cluster_max(tl::max(m));
  auto [s] = part.pieces(std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, const PieceMask<PIECE>& in_row, auto s) {
    return std::tuple{s + tl::exp(piece(from, in_row) - row_max)};
  });
  auto row_sum = tl::cluster_sum(tl::sum(s));
  // exp(x - max) / sum as one exp2: 2^((x - max) log2(e) - log2(sum)), a multiply-add and an ex2 per element.
  auto log2_sum = tl::log(row_sum) * kLog2e;
  part.pieces(std::tuple<>{}, [&](auto from, const PieceMask<PIECE>& in_row) {
    auto x = tl::cast<tl::f32>(stage.template load<PIECE>(from));
    auto y = tl::cast<T>(tl::exp2((x - row_max) * kLog2e - log2_sum));
    in_row.access([&](const auto&... mask) { tl::store(out + part.base + from + part.cols, y, mask...); });
    return std::tuple<>{};
  });
}

/// Softmax of rows staged through shared memory, read from global memory once: each program's chunk of a
/// row (StagedChunk: one program per row, or a thread-block cluster or resident group per row that
/// combines max and sum through tl::cluster_max / tl::cluster_sum; rows from first_row) is copied into a
/// stage of STAGE elements, then softmax_staged_chunk. With PEEL the chunk is copied from the vector
/// boundary before it (row_window), for rows that are not whole vectors.
template <class T, int STAGE, int PIECE, bool PEEL = false>
void softmax_staged_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                            tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::i32> first_row) {
  const auto part = StagedChunk<T, STAGE, PIECE, PEEL>::of(stride, n_cols, chunk, splits, first_row);
  tl::Stage<T, STAGE> stage;
  part.copy(stage, in);
  softmax_staged_chunk(part, stage, out);
}

/// softmax_staged_program with programs (or clusters of `splits` programs) striding over rows through
/// two stages in turn (for_rows_in_turn): each row's chunk is copied while the row before is read, so that
/// a program keeps a chunk in flight through its three passes and its cluster's barriers instead of
/// waiting for each row's copy in turn.
template <class T, int STAGE, int PIECE, bool PEEL = false>
void softmax_staged_strided_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                                    tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits, tl::Scalar<tl::i32> n_rows) {
  using Chunk = StagedChunk<T, STAGE, PIECE, PEEL>;
  for_rows_in_turn<T, STAGE>(
      in, splits, n_rows, [&](tl::Scalar<tl::i32> row) { return Chunk::at(row, stride, n_cols, chunk, splits, n_rows); },
      [&](const Chunk& part, const tl::Stage<T, STAGE>& stage) { softmax_staged_chunk(part, stage, out); });
}

}  // namespace tilefuse::kernels
