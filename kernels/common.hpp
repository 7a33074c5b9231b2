// Helpers the sample kernels share: choosing a compile-time BLOCK for a run-time row width, checking
// buffer sizes, and the launch options of row-wise kernels.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"

namespace tilefuse::kernels {

/// Where and how a row-wise sample kernel runs.
struct RowOptions {
  Backend backend = Backend::automatic;  ///< GPU, interpreter, or by TILEFUSE_INTERPRET
  void* stream = nullptr;                ///< CUstream for GPU launches
};

template <class Buf> struct element_of;
template <class H> struct element_of<DeviceBuffer<H>> { using type = H; };
template <class H> struct element_of<std::span<H>> { using type = H; };
template <class H> struct element_of<std::vector<H>> { using type = H; };
/// Element type of a buffer argument (DeviceBuffer<H>, std::span<H>, std::vector<H>).
template <class Buf> using element_of_t = typename element_of<std::remove_cvref_t<Buf>>::type;

/// The smallest power of two >= n (n >= 1).
constexpr std::int64_t next_pow2(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/// Warps per program for a row tile of `block` elements when each thread holds `per_thread` of them;
/// 1 to 32 warps.
constexpr int row_warps(std::int64_t block, int per_thread) {
  std::int64_t w = block / (32 * per_thread);
  if (w < 1) w = 1;
  if (w > 32) w = 32;
  return static_cast<int>(w);
}

/// Row elements per thread for the sample row kernels over elements of `element_bytes` (in a row tile of
/// `block`): 64 bytes per thread (16 f32 or 32 f16/bf16: four 16-byte accesses in flight each), but at
/// least two warps per program where the row allows it (halves at 1024 columns ran 0.95 x copy at two
/// warps and 0.88 at one: bench/results/sweep-*). TILEFUSE_ROW_ELEMENTS overrides it (a tuning knob for
/// sweeps; kernels are made once per process, so set it before the first launch).
inline int row_elements_per_thread(int element_bytes, std::int64_t block) {
  if (const char* v = std::getenv("TILEFUSE_ROW_ELEMENTS"); v && *v) {
    const int n = std::atoi(v);
    if (n >= 1 && n <= 64 && (n & (n - 1)) == 0) return n;
    throw std::invalid_argument(std::string("tilefuse: TILEFUSE_ROW_ELEMENTS must be a power of two from 1 to 64, got ") + v);
  }
  int n = 64 / element_bytes;
  while (n > 16 && block / n < 64) n /= 2;
  return n;
}

/// Threads per SM the row kernels ask ptxas to make room for (`fallback`; 0: no request), or
/// TILEFUSE_ROW_RESIDENT_THREADS when set (a tuning knob for sweeps, read once per kernel).
inline int row_resident_threads(int fallback = 0) {
  if (const char* v = std::getenv("TILEFUSE_ROW_RESIDENT_THREADS"); v && *v) {
    const int n = std::atoi(v);
    if (n >= 0 && n <= 2048) return n;
    throw std::invalid_argument(std::string("tilefuse: TILEFUSE_ROW_RESIDENT_THREADS must be from 0 to 2048, got ") + v);
  }
  return fallback;
}

/// KernelOptions of a row kernel for a row tile of `block` elements of `element_bytes` each, asking for
/// room for `resident_threads` threads per SM (0: none).
inline KernelOptions row_kernel_options(int element_bytes, std::int64_t block, std::vector<std::string> params,
                                        int resident_threads = 0) {
  const int warps = row_warps(block, row_elements_per_thread(element_bytes, block));
  const int resident = row_resident_threads(resident_threads);
  const int min_programs = resident > 32 * warps ? resident / (32 * warps) : 0;
  return KernelOptions{warps, std::move(params), min_programs};
}

/// KernelOptions of a kernel that loops over a row in pieces of `block`: 16 elements per thread for every
/// dtype (the looped softmax at 2048x131072 bf16 took 528 us at 16 halves per thread and 762 us at 32;
/// the 64-byte rule of row_kernel_options is for rows held in registers).
inline KernelOptions looped_kernel_options(std::int64_t block, std::vector<std::string> params) {
  return row_kernel_options(4, block, std::move(params));
}

/// Bytes per element of dtype tag T.
template <class T>
constexpr int element_bytes_of() {
  return std::is_same_v<T, tl::f16> || std::is_same_v<T, tl::bf16> ? 2 : std::is_same_v<T, tl::i64> ? 8 : 4;
}

/// Bytes per element of a row program's first (row) pointer parameter.
template <class F> struct row_element_bytes;
template <class T, class... Rest>
struct row_element_bytes<void (*)(tl::Ptr<T>, Rest...)> : std::integral_constant<int, element_bytes_of<T>()> {};

/// The kernel of program Fn for clusters of `cluster_size` programs: one kernel per cluster size, made
/// (and traced) on first use with the KernelOptions `make_options()` returns, named
/// name + cluster_size + "_" + tag.
template <auto Fn, class MakeOptions>
Kernel<Fn>& cluster_kernel(const char* name, int tag, MakeOptions&& make_options, int cluster_size) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Kernel<Fn>>> kernels;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& k = kernels[cluster_size];
  if (!k) {
    KernelOptions options = make_options();
    options.cluster_size = cluster_size;
    k = std::make_unique<Kernel<Fn>>(std::string(name) + std::to_string(cluster_size) + "_" + std::to_string(tag),
                                     std::move(options));
  }
  return *k;
}

/// The kernel of row program Fn (row tile BLOCK, elements of `element_bytes`) for clusters of
/// `cluster_size` programs, with room asked for `resident_threads` threads per SM.
template <auto Fn, int BLOCK>
Kernel<Fn>& cluster_kernel(const char* name, int element_bytes, int cluster_size, std::initializer_list<const char*> params,
                           int resident_threads = 0) {
  return cluster_kernel<Fn>(
      name, BLOCK,
      [&] {
        return row_kernel_options(element_bytes, BLOCK, std::vector<std::string>(params.begin(), params.end()),
                                  resident_threads);
      },
      cluster_size);
}

/// How a row is spread over a thread-block cluster: `splits` programs of `chunk` columns each.
struct ClusterSplit {
  std::int64_t splits, chunk;
};

/// Checks a cluster kernel's shape and splits each row: `splits` programs (0: the fewest that hold a
/// row, at most `max_piece` columns each; else 1 to 8) of chunk columns, a multiple of 8 so that every
/// piece starts 16-byte aligned. Errors name the kernel and, for too wide rows, `alternative`.
inline ClusterSplit cluster_split(const char* kernel, const char* alternative, std::int64_t rows, std::int64_t cols,
                                  std::int64_t splits, std::int64_t max_piece) {
  if (cols > 8 * max_piece)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the cluster limit of " + std::to_string(8 * max_piece) + " elements (8 programs of " +
                                std::to_string(max_piece) + "; " + alternative + " takes rows of any width)");
  if (splits == 0) splits = (cols + max_piece - 1) / max_piece;
  const std::int64_t chunk = splits > 0 ? ((cols + splits - 1) / splits + 7) / 8 * 8 : 0;
  if (splits < 1 || splits > 8 || chunk > max_piece)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument splits: expected 0 (automatic) or 1 to 8 with at most " +
                                std::to_string(max_piece) + " columns each, got " + std::to_string(splits) + " for " +
                                std::to_string(cols) + " columns");
  if (rows * splits > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": rows x splits = " + std::to_string(rows * splits) +
                                " exceeds 2^31-1 programs");
  return {splits, chunk};
}

/// Checks the `splits` of a split-row kernel (1 to max_splits) and returns each program's chunk: whole
/// pieces of `block` columns, so every piece but a row's last is full and aligned.
inline std::int64_t split_row_chunk(const char* kernel, std::int64_t cols, std::int64_t splits, std::int64_t max_splits,
                                    std::int64_t block) {
  if (splits < 1 || splits > max_splits || splits > 65535)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument splits: expected 1 to " +
                                std::to_string(max_splits) + ", got " + std::to_string(splits));
  return ((cols + splits - 1) / splits + block - 1) / block * block;
}

/// Calls f.template operator()<BLOCK>() with BLOCK = next_pow2(cols), for BLOCK up to MaxBlock.
template <int MaxBlock, class F>
decltype(auto) with_block(std::int64_t cols, F&& f) {
  return [&]<int... Log>(std::integer_sequence<int, Log...>) -> decltype(auto) {
    const std::int64_t block = next_pow2(cols);
    using R = decltype(f.template operator()<1>());
    if constexpr (std::is_void_v<R>) {
      (void)((block == (1 << Log) ? (f.template operator()<(1 << Log)>(), true) : false) || ...);
    } else {
      R result{};
      (void)((block == (1 << Log) ? (result = f.template operator()<(1 << Log)>(), true) : false) || ...);
      return result;
    }
  }(std::make_integer_sequence<int, std::countr_zero(static_cast<unsigned>(MaxBlock)) + 1>{});
}

/// Calls f.template operator()<PIECE, PIECES>() for a row of `cols` (1 to MaxBlock) held in registers as
/// PIECES tiles of PIECE columns: three quarter-tiles where the row fits them (cols <= 3/4 of
/// next_pow2(cols), from 512 columns on), so that at most a quarter tile is masked off, else one tile of
/// next_pow2(cols).
template <int MaxBlock, class F>
void with_pieces(std::int64_t cols, F&& f) {
  with_block<MaxBlock>(cols, [&]<int BLOCK>() {
    if constexpr (BLOCK >= 512) {
      if (cols <= 3 * (BLOCK / 4)) return f.template operator()<BLOCK / 4, 3>();
    }
    f.template operator()<BLOCK, 1>();
  });
}

/// KernelOptions of a row kernel that holds its row as `pieces` tiles of `piece` elements of
/// `element_bytes` each: row_elements_per_thread split over the pieces and rounded up to a power of two
/// per piece (at least two warps where the piece allows) sets the warps; one piece takes
/// row_kernel_options. At 4096x12288 bf16 (3 x 4096) on the H200: 16 per piece (256 threads) 55.3 us, 8
/// (512 threads) 59.8.
inline KernelOptions pieces_kernel_options(int element_bytes, std::int64_t piece, int pieces, std::vector<std::string> params) {
  if (pieces == 1) return row_kernel_options(element_bytes, piece, std::move(params));
  const int per_thread = row_elements_per_thread(element_bytes, piece * pieces);
  int per_piece = static_cast<int>(std::bit_ceil(static_cast<unsigned>((per_thread + pieces - 1) / pieces)));
  // Two warps at least where a thread would hold more than 16 elements of the row (the rule of
  // row_elements_per_thread for one piece).
  while (per_piece > 1 && per_piece * pieces > 16 && piece / per_piece < 64) per_piece /= 2;
  const int warps = row_warps(piece, per_piece);
  const int resident = row_resident_threads(0);
  return KernelOptions{warps, std::move(params), resident > 32 * warps ? resident / (32 * warps) : 0};
}

/// The kernel object for a row program Fn holding PIECES tiles of PIECE, made (and traced) on first use;
/// named name_PIECE (one piece) or name_PIECExPIECES.
template <auto Fn, int PIECE, int PIECES>
Kernel<Fn>& pieces_kernel(const char* name, std::vector<std::string> params) {
  static Kernel<Fn> k(std::string(name) + "_" + std::to_string(PIECE) + (PIECES > 1 ? "x" + std::to_string(PIECES) : ""),
                      pieces_kernel_options(row_element_bytes<decltype(Fn)>::value, PIECE, PIECES, std::move(params)));
  return k;
}

/// Throws unless a matrix buffer holds rows x cols elements: names the kernel and the argument.
template <class Buf>
void check_matrix(const char* kernel, const char* arg, const Buf& buf, std::int64_t rows, std::int64_t cols) {
  if (rows < 1 || cols < 1)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": expected rows >= 1 and cols >= 1, got rows = " +
                                std::to_string(rows) + ", cols = " + std::to_string(cols));
  if (static_cast<std::int64_t>(buf.size()) < rows * cols)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument " + arg + " holds " +
                                std::to_string(buf.size()) + " elements, expected at least rows x cols = " +
                                std::to_string(rows * cols));
  if (rows * cols > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": rows x cols = " + std::to_string(rows * cols) +
                                " exceeds the 2^31-1 elements that i32 offsets address");
}

/// Throws unless a per-row or per-column vector holds n elements.
template <class Buf>
void check_vector(const char* kernel, const char* arg, const Buf& buf, std::int64_t n) {
  if (static_cast<std::int64_t>(buf.size()) < n)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument " + arg + " holds " +
                                std::to_string(buf.size()) + " elements, expected at least " + std::to_string(n));
}

/// TILEFUSE_LOOPED_PROGRAMS_PER_SM (a tuning knob for sweeps, read once per process): at most this many
/// programs per SM for row kernels that stride over their rows; 0 when unset (one program per row).
inline int looped_programs_per_sm() {
  static const int per_sm = [] {
    const char* v = std::getenv("TILEFUSE_LOOPED_PROGRAMS_PER_SM");
    if (!v || !*v) return 0;
    const int n = std::atoi(v);
    if (n < 1 || n > 64)
      throw std::invalid_argument(std::string("tilefuse: TILEFUSE_LOOPED_PROGRAMS_PER_SM must be 1 to 64, got ") + v);
    return n;
  }();
  return per_sm;
}

/// Programs a row kernel that strides over its rows (`for row in [pid, rows) by programs`) is launched
/// with: one per row, or with TILEFUSE_LOOPED_PROGRAMS_PER_SM=k at most k per SM on the GPU, so that fewer
/// rows are in flight and a second pass finds more of its row in L2.
inline std::int64_t strided_row_programs(std::int64_t rows, Backend backend) {
  const int per_sm = looped_programs_per_sm();
  if (per_sm == 0 || rows <= 0 || resolve_backend(backend) != Backend::gpu) return rows;
  return std::min<std::int64_t>(rows, std::int64_t{per_sm} * driver::device().sm_count);
}

/// Whether kernels with thread-block clusters can run on `backend`: the interpreter always, the GPU from
/// sm_90 (Hopper) on.
inline bool clusters_available(Backend backend) {
  return resolve_backend(backend) != Backend::gpu || driver::device().cc_major >= 9;
}

/// Columns each pass of a staged kernel moves at once (16 per thread of a 4-warp program).
inline constexpr int kStagePiece = 2048;
/// Stage sizes of the staged kernels are multiples of this many elements.
inline constexpr std::int64_t kStageGranule = 4096;
/// Widest row piece a staged program holds in shared memory.
inline constexpr std::int64_t kStageMaxCols = 32768;

/// Calls f.template operator()<STAGE>() with STAGE = cols rounded up to a multiple of kStageGranule, for
/// cols from 1 to kStageMaxCols: the stage fits the row with less than one granule to spare, so that a
/// 12288-column row takes 24 KB of shared memory in bf16 rather than the 32 KB of a power of two.
template <class F>
void with_stage(std::int64_t cols, F&& f) {
  [&]<int... K>(std::integer_sequence<int, K...>) {
    const std::int64_t granules = (cols + kStageGranule - 1) / kStageGranule;
    (void)((granules == K + 1 ? (f.template operator()<static_cast<int>((K + 1) * kStageGranule)>(), true) : false) || ...);
  }(std::make_integer_sequence<int, static_cast<int>(kStageMaxCols / kStageGranule)>{});
}

/// Warps per staged program: `fallback`, or TILEFUSE_STAGED_WARPS when set (a tuning knob for sweeps,
/// read once per kernel).
inline int staged_warps(int fallback) {
  if (const char* v = std::getenv("TILEFUSE_STAGED_WARPS"); v && *v) {
    const int n = std::atoi(v);
    if (n >= 1 && n <= 32 && (n & (n - 1)) == 0) return n;
    throw std::invalid_argument(std::string("tilefuse: TILEFUSE_STAGED_WARPS must be a power of two from 1 to 32, got ") + v);
  }
  return fallback;
}

/// KernelOptions of a staged kernel of `warps` warps (see staged_warps) whose programs hold `stage_bytes`
/// of shared memory: ptxas is asked to fit as many programs per SM as the H100/H200's 228 KB of shared
/// memory holds (each block also takes 1 KB of the driver's), so that registers do not become the tighter
/// limit.
inline KernelOptions staged_kernel_options(std::int64_t stage_bytes, std::vector<std::string> params, int warps = 4) {
  warps = staged_warps(warps);
  const std::int64_t by_shared = (228 * 1024) / (stage_bytes + 1024);
  const int threads = 32 * warps;
  const int resident = row_resident_threads(static_cast<int>(std::min<std::int64_t>(2048, by_shared * threads)));
  return KernelOptions{warps, std::move(params), resident > threads ? resident / threads : 0};
}

/// For a tile-program loop `for from in [start, end) by BLOCK`: the value t such that `t - from` visits the
/// same BLOCK-wide pieces last to first (t - start is the start of the last piece).
template <int BLOCK>
tl::Scalar<tl::i32> reversed_piece_turn(tl::Scalar<tl::i32> start, tl::Scalar<tl::i32> end) {
  return start + start + ((end - start - 1) / BLOCK) * BLOCK;
}

}  // namespace tilefuse::kernels
