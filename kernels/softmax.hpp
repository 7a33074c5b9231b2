// Row softmax: the fused one-program-per-row kernel, and the same computation as five separate kernels
// (max, subtract, exp, sum, divide), the unfused baseline that moves four times the bytes.
#pragma once

#include <bit>

#include "kernels/common.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// Widest row one softmax program holds in registers (f32 elements).
inline constexpr std::int64_t kSoftmaxMaxCols = 16384;

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

/// The kernel object for a program at a given BLOCK (one piece), made (and traced) on first use.
template <auto Fn, int BLOCK>
Kernel<Fn>& row_kernel(const char* name, std::vector<std::string> params) {
  return pieces_kernel<Fn, BLOCK, 1>(name, std::move(params));
}

namespace detail {
inline void check_softmax_cols(const char* kernel, std::int64_t cols) {
  if (cols > kSoftmaxMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the one-program row limit of " + std::to_string(kSoftmaxMaxCols) +
                                " elements (kernels::softmax_auto and softmax_looped take rows of any width)");
}
}  // namespace detail

/// The fused softmax kernel for element type T (tl::f32, tl::f16, tl::bf16) and row tile BLOCK.
template <class T, int BLOCK>
Kernel<&softmax_program<T, BLOCK>>& softmax_kernel() {
  return row_kernel<&softmax_program<T, BLOCK>, BLOCK>("softmax", {"in", "out", "stride", "n_cols"});
}

/// Unfused step 1 as a kernel (same warps per row as the fused kernel).
template <class T, int BLOCK>
auto& row_max_kernel() {
  return row_kernel<&row_max_program<T, BLOCK>, BLOCK>("row_max", {"x", "m", "stride", "n_cols"});
}
/// Unfused step 2 as a kernel.
template <class T, int BLOCK>
auto& subtract_row_kernel() {
  return row_kernel<&subtract_row_program<T, BLOCK>, BLOCK>("subtract_row", {"x", "m", "z", "stride", "n_cols"});
}
/// Unfused step 3 as a kernel.
template <class T, int BLOCK>
auto& exp_kernel() {
  return row_kernel<&exp_program<T, BLOCK>, BLOCK>("exp", {"z", "e", "stride", "n_cols"});
}
/// Unfused step 4 as a kernel.
template <class T, int BLOCK>
auto& row_sum_kernel() {
  return row_kernel<&row_sum_program<T, BLOCK>, BLOCK>("row_sum", {"e", "s", "stride", "n_cols"});
}
/// Unfused step 5 as a kernel.
template <class T, int BLOCK>
auto& divide_row_kernel() {
  return row_kernel<&divide_row_program<T, BLOCK>, BLOCK>("divide_row", {"e", "s", "y", "stride", "n_cols"});
}

/// out = softmax(in) over each of `rows` contiguous rows of `cols` elements, one program per row.
/// Buf is DeviceBuffer<H> (GPU or interpreter) or std::span<H> / std::vector<H> (interpreter), with
/// H = float, tilefuse::half or tilefuse::bfloat16. In place (in and out the same buffer) is allowed.
template <class Buf>
void softmax(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  check_matrix("softmax", "in", in, rows, cols);
  check_matrix("softmax", "out", out, rows, cols);
  detail::check_softmax_cols("softmax", cols);
  with_block<kSoftmaxMaxCols>(cols, [&]<int BLOCK>() {
    softmax_kernel<T, BLOCK>().launch(LaunchConfig({rows}, opt.backend, opt.stream), in, out, cols, cols);
  });
}

/// The five unfused kernels' scratch: m and s hold one value per row, z and e a whole matrix each.
template <class Buf>
struct UnfusedScratch {
  Buf m, z, e, s;
};

/// softmax as five kernels (max, subtract, exp, sum, divide), each a round trip through memory.
template <class Buf>
void softmax_unfused(Buf& in, Buf& out, UnfusedScratch<Buf>& scratch, std::int64_t rows, std::int64_t cols,
                     const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_unfused: elements must be float, half or bfloat16.");
  check_matrix("softmax_unfused", "in", in, rows, cols);
  check_matrix("softmax_unfused", "out", out, rows, cols);
  check_matrix("softmax_unfused", "scratch.z", scratch.z, rows, cols);
  check_matrix("softmax_unfused", "scratch.e", scratch.e, rows, cols);
  check_vector("softmax_unfused", "scratch.m", scratch.m, rows);
  check_vector("softmax_unfused", "scratch.s", scratch.s, rows);
  detail::check_softmax_cols("softmax_unfused", cols);
  const LaunchConfig cfg({rows}, opt.backend, opt.stream);
  with_block<kSoftmaxMaxCols>(cols, [&]<int BLOCK>() {
    row_max_kernel<T, BLOCK>().launch(cfg, in, scratch.m, cols, cols);
    subtract_row_kernel<T, BLOCK>().launch(cfg, in, scratch.m, scratch.z, cols, cols);
    exp_kernel<T, BLOCK>().launch(cfg, scratch.z, scratch.e, cols, cols);
    row_sum_kernel<T, BLOCK>().launch(cfg, scratch.e, scratch.s, cols, cols);
    divide_row_kernel<T, BLOCK>().launch(cfg, scratch.e, scratch.s, out, cols, cols);
  });
}

}  // namespace tilefuse::kernels

namespace tilefuse::kernels {

namespace detail {

// Max and sum of exp(x - max) over columns [start, end) of the row at `base`, in BLOCK-column pieces
// with a running max and sum per lane (online softmax: each element read once), then across lanes.
template <class T, int BLOCK>
std::tuple<tl::Scalar<tl::f32>, tl::Scalar<tl::f32>> online_max_sum(tl::Ptr<T> in, tl::Scalar<tl::i32> base,
                                                                     tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end) {
  auto cols = tl::arange<BLOCK>();
  auto init = std::tuple{tl::full<tl::f32, BLOCK>(-tl::inf), tl::full<tl::f32, BLOCK>(0.0)};
  auto [m, s] = tl::for_range(start, end, BLOCK, init, [&](auto from, auto m, auto s) {
    auto idx = from + cols;
    auto x = tl::cast<tl::f32>(tl::load(in + base + idx, idx < end, -tl::inf));
    // One exp per element: of x and the running max, one is the new max and its exp term is 1, the other
    // is scaled by exp(-|x - m|). A masked (-inf) x leaves the lane as it was (-inf - -inf would be NaN).
    auto d = x - m;
    auto e = tl::exp(-tl::abs(d));
    auto s_new = tl::where(x == -tl::inf, s, tl::where(d > 0.0, s * e + 1.0, s + e));
    return std::tuple{tl::maximum(m, x), s_new};
  });
  auto row_max = tl::max(m);
  return {row_max, tl::sum(tl::where(m == -tl::inf, 0.0, s * tl::exp(m - row_max)))};
}

// out = exp(x - row_max) / row_sum over columns [start, end) of the row at `base`, last piece first: the
// pieces the first pass read last are the likeliest still in L2.
template <class T, int BLOCK>
void normalize_range(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> base, tl::Scalar<tl::i32> start,
                     tl::Scalar<tl::i32> end, tl::Scalar<tl::f32> row_max, tl::Scalar<tl::f32> row_sum) {
  auto cols = tl::arange<BLOCK>();
  auto turn = reversed_piece_turn<BLOCK>(start, end);
  tl::for_range(start, end, BLOCK, [&](auto from) {
    auto idx = (turn - from) + cols;
    auto mask = idx < end;
    auto x = tl::cast<tl::f32>(tl::load(in + base + idx, mask));
    tl::store(out + base + idx, tl::cast<T>(tl::exp(x - row_max) / row_sum), mask);
  });
}

}  // namespace detail

/// Softmax of one row of any width, looping over it in BLOCK-column pieces: the first pass keeps a
/// running max and sum per lane (online softmax: read once), the second writes exp(x - max) / sum
/// (read again, write once): 3 bytes moved per 2 of the one-program kernel, with no row-width limit.
template <class T, int BLOCK>
void softmax_looped_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                            tl::Scalar<tl::i32> rows) {
  auto zero = tl::scalar<tl::i32>(0);
  tl::for_range(tl::program_id(0), rows, tl::num_programs(0), [&](auto row) {  // one row per program by default
    auto base = row * stride;
    auto [row_max, row_sum] = detail::online_max_sum<T, BLOCK>(in, base, zero, n_cols);
    detail::normalize_range<T, BLOCK>(in, out, base, zero, n_cols, row_max, row_sum);
  });
}

/// Split-row softmax, kernel 1 of 2: program (row, split) writes the max and the sum of exp(x - max) of
/// its `chunk` columns to partial_max/partial_sum[row * splits + split]: the grid-wide reduction's first
/// pass, for rows too wide (and too few) to keep the GPU busy one program per row.
template <class T, int BLOCK>
void softmax_partials_program(tl::Ptr<T> in, tl::Ptr<tl::f32> partial_max, tl::Ptr<tl::f32> partial_sum,
                              tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols, tl::Scalar<tl::i32> chunk) {
  auto row = tl::program_id(0);
  auto split = tl::program_id(1);
  auto start = split * chunk;
  auto [m, s] = detail::online_max_sum<T, BLOCK>(in, row * stride, start, tl::minimum(start + chunk, n_cols));
  tl::store(partial_max + row * tl::num_programs(1) + split, m);
  tl::store(partial_sum + row * tl::num_programs(1) + split, s);
}

/// Split-row softmax, kernel 2 of 2: program (row, split) combines the row's SPLITS_BLOCK-padded partials
/// into the row's max and sum, then normalizes its own chunk.
template <class T, int BLOCK, int SPLITS_BLOCK>
void softmax_combine_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Ptr<tl::f32> partial_max, tl::Ptr<tl::f32> partial_sum,
                             tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols, tl::Scalar<tl::i32> chunk) {
  auto row = tl::program_id(0);
  auto split = tl::program_id(1);
  auto splits = tl::num_programs(1);
  auto k = tl::arange<SPLITS_BLOCK>();
  auto valid = k < splits;
  auto m = tl::load(partial_max + row * splits + k, valid, -tl::inf);
  auto row_max = tl::max(m);
  auto s = tl::load(partial_sum + row * splits + k, valid);
  auto row_sum = tl::sum(tl::where(m == -tl::inf, 0.0, s * tl::exp(m - row_max)));
  auto start = split * chunk;
  detail::normalize_range<T, BLOCK>(in, out, row * stride, start, tl::minimum(start + chunk, n_cols), row_max, row_sum);
}

/// Column piece of the looped softmax: 4096 elements (16 per thread at 8 warps).
inline constexpr int kSoftmaxLoopBlock = 4096;

/// The looped softmax kernel for dtype T.
template <class T>
auto& softmax_looped_kernel() {
  static Kernel<&softmax_looped_program<T, kSoftmaxLoopBlock>> k(
      "softmax_looped", looped_kernel_options(kSoftmaxLoopBlock, {"in", "out", "stride", "n_cols", "rows"}));
  return k;
}

/// out = softmax(in) over rows of any width (one program per row, looping over the row): reads each row
/// twice and writes it once (H200: 0.65 x copy at 4096x32768 f32, counting one read and one write).
template <class Buf>
void softmax_looped(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_looped: elements must be float, half or bfloat16.");
  check_matrix("softmax_looped", "in", in, rows, cols);
  check_matrix("softmax_looped", "out", out, rows, cols);
  softmax_looped_kernel<T>().launch(LaunchConfig({strided_row_programs(rows, opt.backend)}, opt.backend, opt.stream), in,
                                    out, cols, cols, rows);
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

/// Widest row the cluster softmax takes: 8 programs (the portable cluster size) of 16384 columns.
inline constexpr std::int64_t kSoftmaxClusterMaxCols = 8 * kSoftmaxMaxCols;

/// The cluster softmax kernel for dtype T, row pieces of BLOCK and `splits` programs per cluster. It asks
/// for three 512-thread programs per SM: at 2048x131072 bf16 on the H200 that took 404 us against 460 us
/// at two (40 registers and 24 bytes of spill instead of 54 registers).
template <class T, int BLOCK>
Kernel<&softmax_cluster_program<T, BLOCK>>& softmax_cluster_kernel(int splits) {
  return cluster_kernel<&softmax_cluster_program<T, BLOCK>, BLOCK>(
      "softmax_cluster", element_bytes_of<T>(), splits, {"in", "out", "stride", "n_cols", "chunk", "splits"}, 1536);
}

/// out = softmax(in) for rows up to 131072 columns, each read once: a row wider than 16384 is split over
/// a thread-block cluster of ceil(cols / 16384) programs (sm_90) that combine their max and sum through
/// distributed shared memory; narrower rows take the one-program kernel.
template <class Buf>
void softmax_cluster(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_cluster: elements must be float, half or bfloat16.");
  check_matrix("softmax_cluster", "in", in, rows, cols);
  check_matrix("softmax_cluster", "out", out, rows, cols);
  const auto split = cluster_split("softmax_cluster", "kernels::softmax_looped", rows, cols, 0, kSoftmaxMaxCols);
  if (split.splits == 1) return softmax(in, out, rows, cols, opt);
  with_block<kSoftmaxMaxCols>(split.chunk, [&]<int BLOCK>() {
    softmax_cluster_kernel<T, BLOCK>(static_cast<int>(split.splits))
        .launch(LaunchConfig({rows * split.splits}, opt.backend, opt.stream), in, out, cols, cols, split.chunk, split.splits);
  });
}

/// log2(e), for exponentials taken as exp2.
inline constexpr double kLog2e = 1.4426950408889634;

/// Softmax of rows staged through shared memory, read from global memory once: program pid handles
/// columns [start, start + chunk) of row pid / splits (one program per row when splits is 1, else a
/// thread-block cluster per row that combines max and sum through tl::cluster_max / tl::cluster_sum).
/// The piece is copied into a stage of STAGE elements (asynchronously, all of it in flight at once); pass 1
/// takes the max from the stage, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum. Only PIECE
/// columns are in registers at a time.
template <class T, int STAGE, int PIECE>
void softmax_staged_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols,
                            tl::Scalar<tl::i32> chunk, tl::Scalar<tl::i32> splits) {
  auto pid = tl::program_id(0);
  auto row = pid / splits;
  auto start = (pid % splits) * chunk;
  // The program's columns, at most STAGE (the launcher guarantees it; saying so lets the compiler drop the
  // stage bounds tests, and the masks where they are a multiple of PIECE).
  auto valid = tl::minimum(tl::maximum(tl::minimum(chunk, n_cols - start), 0), STAGE);
  auto base = row * stride + start;
  auto cols = tl::arange<PIECE>();
  auto zero = tl::scalar<tl::i32>(0);
  tl::Stage<T, STAGE> stage;
  tl::for_range(zero, valid, PIECE, [&](auto from) {
    auto idx = from + cols;
    stage.copy(from, in + base + idx, idx < valid);
  });
  // Reads of the stage past `valid` take -inf: the max ignores them and their exp adds 0.
  auto piece = [&](auto from) { return tl::cast<tl::f32>(stage.template load<PIECE>(from, from + cols < valid, -tl::inf)); };
  auto [m] = tl::for_range(zero, valid, PIECE, std::tuple{tl::full<tl::f32, PIECE>(-tl::inf)}, [&](auto from, auto m) {
    return std::tuple{tl::maximum(m, piece(from))};
  });
  auto row_max = tl::cluster_max(tl::max(m));
  auto [s] = tl::for_range(zero, valid, PIECE, std::tuple{tl::full<tl::f32, PIECE>(0.0)}, [&](auto from, auto s) {
    return std::tuple{s + tl::exp(piece(from) - row_max)};
  });
  auto row_sum = tl::cluster_sum(tl::sum(s));
  // exp(x - max) / sum as one exp2: 2^((x - max) log2(e) - log2(sum)), a multiply-add and an ex2 per element.
  auto log2_sum = tl::log(row_sum) * kLog2e;
  tl::for_range(zero, valid, PIECE, [&](auto from) {
    auto idx = from + cols;
    tl::store(out + base + idx, tl::cast<T>(tl::exp2((piece(from) - row_max) * kLog2e - log2_sum)), idx < valid);
  });
}

/// TILEFUSE_STAGE_BYTES (a tuning knob for sweeps, read once per process): the most shared memory a
/// staged softmax program takes, which sets how many programs split a row; default 32 KB.
inline std::int64_t softmax_stage_bytes() {
  static const std::int64_t bytes = [] {
    const char* v = std::getenv("TILEFUSE_STAGE_BYTES");
    if (!v || !*v) return std::int64_t{32768};
    const long long n = std::atoll(v);
    if (n < 8192 || n > 131072)
      throw std::invalid_argument(std::string("tilefuse: TILEFUSE_STAGE_BYTES must be from 8192 to 131072, got ") + v);
    return static_cast<std::int64_t>(n);
  }();
  return bytes;
}

/// Widest row the staged softmax takes: a cluster of 8 programs of kStageMaxCols each.
inline constexpr std::int64_t kSoftmaxStagedMaxCols = 8 * kStageMaxCols;

/// out = softmax(in) for rows up to 262144 columns, each read once and staged through shared memory: a
/// row is split over `splits` programs (0: the fewest whose piece fits 32 KB of shared memory, e.g. 8 of
/// 16384 columns at 131072 bf16; above 1 a thread-block cluster, sm_90).
template <class Buf>
void softmax_staged(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {},
                    std::int64_t splits = 0) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_staged: elements must be float, half or bfloat16.");
  check_matrix("softmax_staged", "in", in, rows, cols);
  check_matrix("softmax_staged", "out", out, rows, cols);
  const std::int64_t piece = std::min<std::int64_t>(kStageMaxCols, softmax_stage_bytes() / element_bytes_of<T>());
  const auto split = cluster_split("softmax_staged", "kernels::softmax_looped", rows, cols,
                                   splits == 0 ? std::min<std::int64_t>(8, (cols + piece - 1) / piece) : splits, kStageMaxCols);
  if (split.splits > 1 && !clusters_available(opt.backend))
    throw std::invalid_argument("tilefuse softmax_staged: " + std::to_string(cols) + " columns need a cluster of " +
                                std::to_string(split.splits) + " programs, which needs sm_90; this GPU is " +
                                driver::device().arch() + " (kernels::softmax_looped runs anywhere)");
  with_stage(split.chunk, [&]<int STAGE>() {
    cluster_kernel<&softmax_staged_program<T, STAGE, kStagePiece>>(
        "softmax_staged", STAGE,
        [] {
          // Two warps: 2048x131072 bf16 on the H200 took 306 us at two warps, 344 at four, 359 at eight.
          return staged_kernel_options(STAGE * element_bytes_of<T>(), {"in", "out", "stride", "n_cols", "chunk", "splits"}, 2);
        },
        static_cast<int>(split.splits))
        .launch(LaunchConfig({rows * split.splits}, opt.backend, opt.stream), in, out, cols, cols, split.chunk, split.splits);
  });
}

/// Which softmax kernel softmax_auto runs.
enum class RowVariant {
  automatic,    ///< one program per row up to 16384 columns, staged up to 8 programs of 64 KB (sm_90), looped above
  one_program,  ///< softmax(): reads once, rows up to 16384 columns (an error above)
  looped,       ///< softmax_looped(): any width, reads twice
  cluster,      ///< softmax_cluster(): reads once, rows up to 131072 columns, sm_90 thread-block clusters
  staged,       ///< softmax_staged(): reads once through shared memory, rows up to 262144 columns
};

/// Largest stage softmax_auto lets one program of a staged cluster hold. On the H200, 64 KB stages won:
/// 2048x131072 f32 took 578.3 us staged (a cluster of 8) against 800.8 looped, 1024x262144 bf16 351.8
/// against 413.9; 128 KB stages lost (1024x262144 f32: 914.4 us staged, 804.8 looped).
inline constexpr std::int64_t kSoftmaxAutoMaxStageBytes = 65536;

/// Whether softmax_auto sends rows of `cols` elements of `element_bytes` on `backend` to softmax_staged():
/// one program, or a cluster of at most 8 whose stages hold at most kSoftmaxAutoMaxStageBytes each (or
/// TILEFUSE_STAGE_BYTES when that is larger).
inline bool softmax_staged_fits(std::int64_t cols, int element_bytes, Backend backend) {
  const std::int64_t piece =
      std::min<std::int64_t>(kStageMaxCols, std::max(softmax_stage_bytes(), kSoftmaxAutoMaxStageBytes) / element_bytes);
  return cols <= piece || (cols <= 8 * piece && clusters_available(backend));
}

/// out = softmax(in) for rows of any width, with the kernel chosen from the width (or by `variant`): the
/// one-program kernel where the row fits in one program's registers (up to 16384 columns), the staged
/// one where the row fits in at most eight programs' 64 KB stages (262144 bf16 or 131072 f32 columns; on the
/// H200 at 4096x32768 f32: 281.6 us against 364.7 for the register cluster; at 2048x131072 bf16: 307.8
/// against 401.9 looped; see kSoftmaxAutoMaxStageBytes), the looped one above (at 1024x262144 f32 the
/// staged kernel's 128 KB stages took 914.4 us against 804.8 looped) or where clusters are missing. The split-row kernel, which needs scratch, is the caller's explicit choice.
template <class Buf>
void softmax_auto(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {},
                  RowVariant variant = RowVariant::automatic) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  if (variant == RowVariant::automatic)
    variant = cols <= kSoftmaxMaxCols                                              ? RowVariant::one_program
              : softmax_staged_fits(cols, element_bytes_of<T>(), opt.backend) ? RowVariant::staged
                                                                               : RowVariant::looped;
  switch (variant) {
    case RowVariant::one_program: return softmax(in, out, rows, cols, opt);
    case RowVariant::cluster: return softmax_cluster(in, out, rows, cols, opt);
    case RowVariant::staged: return softmax_staged(in, out, rows, cols, opt);
    default: return softmax_looped(in, out, rows, cols, opt);
  }
}

/// Most splits of one row the split-row softmax supports (the combine kernel holds them as one tile).
inline constexpr std::int64_t kSoftmaxMaxSplits = 1024;

/// Scratch for the split-row softmax: rows x splits partial maxima and sums (f32).
template <class F32Buf>
struct SplitScratch {
  F32Buf partial_max, partial_sum;
};

/// out = softmax(in) with each row split over `splits` programs and two kernels (partials, then combine
/// and normalize): reads every element twice and writes it once, like the looped kernel, but spreads a
/// row over the GPU (for few, wide rows).
template <class Buf, class F32Buf>
void softmax_split(Buf& in, Buf& out, SplitScratch<F32Buf>& scratch, std::int64_t rows, std::int64_t cols,
                   std::int64_t splits, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_split: elements must be float, half or bfloat16.");
  static_assert(std::is_same_v<element_of_t<F32Buf>, float>, "tilefuse softmax_split: partials are float buffers.");
  check_matrix("softmax_split", "in", in, rows, cols);
  check_matrix("softmax_split", "out", out, rows, cols);
  constexpr int B = kSoftmaxLoopBlock;
  const std::int64_t chunk = split_row_chunk("softmax_split", cols, splits, kSoftmaxMaxSplits, B);
  check_vector("softmax_split", "scratch.partial_max", scratch.partial_max, rows * splits);
  check_vector("softmax_split", "scratch.partial_sum", scratch.partial_sum, rows * splits);
  const LaunchConfig cfg(Grid(rows, splits), opt.backend, opt.stream);
  static Kernel<&softmax_partials_program<T, B>> partials(
      "softmax_partials", looped_kernel_options(B, {"in", "partial_max", "partial_sum", "stride", "n_cols", "chunk"}));
  partials.launch(cfg, in, scratch.partial_max, scratch.partial_sum, cols, cols, chunk);
  with_block<kSoftmaxMaxSplits>(splits, [&]<int SB>() {
    static Kernel<&softmax_combine_program<T, B, SB>> combine(
        "softmax_combine_" + std::to_string(SB),
        looped_kernel_options(B, {"in", "out", "partial_max", "partial_sum", "stride", "n_cols", "chunk"}));
    combine.launch(cfg, in, out, scratch.partial_max, scratch.partial_sum, cols, cols, chunk);
  });
}

}  // namespace tilefuse::kernels
