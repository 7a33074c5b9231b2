// The bench harness the family files share: the results table, the run's settings (smoke sizes, tuning
// knobs from the command line), the copy baseline of every shape, and RowCase, one shape's inputs rotated
// past the L2 with a poisoned output and a float64 check before anything is timed.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "backend/driver/driver.hpp"
#include "backend/runtime/buffer.hpp"
#include "bench/measure.hpp"
#include "bench/peer_cubins.hpp"
#include "kernels/reference.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::bench {

/// One row of the results table.
struct Row {
  std::string kernel, impl, shape, dtype;
  double us = 0, gbps = 0, x_copy = 0;
  std::string note;
};

/// What the whole run shares: its rows, whether it is a smoke run, the tuning knobs every launch gets, and
/// why GPU rows are skipped (empty with a GPU).
struct Run {
  std::vector<Row> rows;
  bool smoke = false;
  bool failed = false;  ///< a wrong result makes the run fail, not just skip a row
  kernels::Tuning tuning;
  /// The variant the sweep runs (--sweep-variant; automatic: the automatic choice, as a caller gets it).
  kernels::RowVariant sweep_variant = kernels::RowVariant::automatic;
  std::string gpu_skip;
};
/// The run in progress.
Run& run();

/// Median copy time of `bytes` read + `bytes` written, measured once per size in this process.
double copy_time_us(std::size_t bytes, int sets, void* stream, int runs);
/// The bytes a row normalization over rows x cols elements of `element_bytes` moves: x read and y
/// written, its `column_operands` vectors (LayerNorm's w and b: 2) read once, and `stats` floats written
/// per row (LayerNorm's mean and rstd: 2; 8 bytes a row, an eighth of the bytes of a row of 16 halves).
double norm_moved(std::int64_t rows, std::int64_t cols, std::size_t element_bytes, int column_operands, int stats);
/// Adds the same-bytes copy row for a shape and returns the shape's name ("4096x4096").
std::string add_copy_row(std::int64_t rows, std::int64_t cols, const char* dtype, double copy_us, double moved);
/// Adds a kernel row: its time, GB/s over `moved` bytes, and its ratio to the copy of the same shape.
void add_row(const char* kernel, const std::string& impl, const std::string& shape, const char* dtype, double us, double moved,
             double copy_us, const std::string& note);
/// Sets a registered GPU benchmark up as the harness times it: by hand, one iteration (the harness
/// repeats and takes medians itself), in microseconds.
void timed(benchmark::internal::Benchmark* b);
/// "4096x4096/f32": a shape's part of a benchmark name.
std::string shape_name(std::int64_t rows, std::int64_t cols, const char* dtype);

/// Calls f(first, end) on contiguous blocks of [0, count) on every core of the host, and returns when all
/// are done: the bench's float64 references and random inputs, which on one core took seconds per row of
/// a 1 GB matrix (most of a full run's time on the GPU machine).
void parallel_blocks(std::int64_t count, const std::function<void(std::int64_t, std::int64_t)>& f);

/// `ref(x_rows, n)`, a float64 reference of `n` rows of `cols` (reference::softmax and its kin), over all
/// `rows` rows of `x`: the rows split into blocks computed in parallel, each row exactly as one call would.
template <class H, class Ref>
std::vector<double> reference_by_rows(std::span<const H> x, std::int64_t rows, std::int64_t cols, Ref&& ref) {
  std::vector<double> y(x.size());
  parallel_blocks(rows, [&](std::int64_t first, std::int64_t end) {
    const auto part = ref(x.subspan(static_cast<std::size_t>(first * cols), static_cast<std::size_t>((end - first) * cols)), end - first);
    std::copy(part.begin(), part.end(), y.begin() + first * cols);
  });
  return y;
}

/// A random N(0, 1) matrix of `n` elements, the same for the same `seed` on any host: up to 64 pieces,
/// piece p drawn from mt19937_64(seed + 1000003 p) as reference::random_vector draws, the pieces in
/// parallel (a matrix of up to 1 GB made one element at a time took seconds of the GPU session per
/// shape). Under 2^17 elements, one piece: reference::random_vector(n, seed).
template <class H>
std::vector<H> random_input(std::size_t n, std::uint64_t seed) {
  std::vector<H> v(n);
  const auto pieces = static_cast<std::int64_t>(std::max<std::size_t>(1, std::min<std::size_t>(64, n / (1 << 16))));
  parallel_blocks(pieces, [&](std::int64_t first, std::int64_t end) {
    for (std::int64_t p = first; p < end; ++p) {
      std::mt19937_64 gen(seed + 1000003 * static_cast<std::uint64_t>(p));
      std::normal_distribution<float> dist(0.f, 1.f);
      const auto piece_end = static_cast<std::size_t>(p + 1) * n / static_cast<std::size_t>(pieces);
      for (std::size_t i = static_cast<std::size_t>(p) * n / static_cast<std::size_t>(pieces); i < piece_end; ++i)
        v[i] = reference::from_float<H>(dist(gen));
    }
  });
  return v;
}

/// One row-kernel benchmark's inputs: a random rows x cols matrix uploaded to enough buffer sets to
/// overflow the L2, output sets beside them, and a stream. `ok` is false (and the row skipped) without a GPU.
template <class H>
struct RowCase {
  std::size_t n, bytes;
  int sets = 0;
  std::shared_ptr<const std::vector<H>> data;  ///< the input matrix on the host
  std::span<const H> host;                     ///< *data
  std::vector<DeviceBuffer<H>> xs, ys;
  std::unique_ptr<driver::Stream> stream;
  kernels::RowOptions opt;
  bool ok = false;

  /// A random matrix (`input`, when given, is the matrix: the sweep shares one between its kernels).
  RowCase(benchmark::State& state, std::int64_t rows, std::int64_t cols, std::shared_ptr<const std::vector<H>> input = nullptr)
      : n(static_cast<std::size_t>(rows * cols)), bytes(n * sizeof(H)) {
    if (!run().gpu_skip.empty()) {
      state.SkipWithError(("no GPU: " + run().gpu_skip).c_str());
      return;
    }
    stream = std::make_unique<driver::Stream>();
    opt = kernels::RowOptions{Backend::gpu, stream->handle(), run().tuning};
    sets = rotation_sets(2 * bytes);
    data = input ? std::move(input) : std::make_shared<const std::vector<H>>(random_input<H>(n, 7));
    host = *data;
    for (int s = 0; s < sets; ++s) {
      xs.emplace_back(host);
      ys.emplace_back(n);
    }
    ys[0].fill_bytes(0xff, stream->handle());  // poisoned, on the kernel's stream: check() sees any unwritten element
    ok = true;
  }
  void* handle() const { return stream->handle(); }
  /// Launches and timed runs for this shape's size.
  int runs(int full) const { return run().smoke ? full / 10 : full; }

  /// Checks set 0's output against `ref` after one launch: a fast wrong kernel is worth nothing.
  bool check(benchmark::State& state, const std::vector<double>& ref, double* err) {
    stream->synchronize();
    *err = reference::relative_error<H>(ys[0].download(), ref);
    if (*err <= reference::tolerance<H>()) return true;
    run().failed = true;
    state.SkipWithError(("wrong result, rel err " + std::to_string(*err)).c_str());
    return false;
  }
};

/// The peer CUBIN's row of a shape (tilefuse_bench --peer-cubins), when the manifest has one: launched
/// once on set 0, poisoned first, and checked against `ref` as ours is (a wrong result fails the run, as
/// ours would), then timed on the same rotated sets with the same bursts. launch(kernel, set) launches it.
template <class H, class Launch>
void add_peer_row(RowCase<H>& rc, const char* kernel, std::int64_t rows, std::int64_t cols, const char* dtype, const std::vector<double>& ref,
                  double copy_us, double moved, int runs, Launch&& launch) {
  const PeerCubin* peer = find_peer_cubin(kernel, rows, cols, dtype);
  if (!peer) return;
  const PeerKernel k(*peer);
  rc.ys[0].fill_bytes(0xff, rc.handle());
  launch(k, 0);
  rc.stream->synchronize();
  const double err = reference::relative_error<H>(rc.ys[0].download(), ref);
  char note[96];
  std::snprintf(note, sizeof note, "rel err %.1e vs float64", err);
  if (!(err <= reference::tolerance<H>())) {
    std::fprintf(stderr, "tilefuse_bench: the peer CUBIN %s (%s %lldx%lld %s) gave a wrong result, rel err %g\n", peer->path.c_str(), kernel,
                 static_cast<long long>(rows), static_cast<long long>(cols), dtype, err);
    run().failed = true;
    return;
  }
  const Timing t = time_launches([&](int s) { launch(k, s); }, rc.sets, rc.handle(), 20, runs);
  add_row(kernel, PeerKernel::impl(), std::to_string(rows) + "x" + std::to_string(cols), dtype, t.median_us, moved, copy_us, note);
}

/// One bench row of a family's variant table: a variant (split and cluster over `splits` programs per row;
/// 0: the launcher's choice) on a shape.
struct VariantCase {
  kernels::RowVariant variant;
  std::int64_t rows, cols;
  const char* dtype;
  std::int64_t splits = 0;
};
/// The benchmark's name of a case: the variant's entry point (with its splits), then the shape.
std::string case_name(const kernels::VariantInfo& v, const VariantCase& k);
/// The results table's implementation column of a case: the variant, its splits and its summary.
std::string case_impl(const kernels::VariantInfo& v, const VariantCase& k);

/// Times a fused kernel (`fused_warmup` launches first, then `runs`) and its unfused baseline (a quarter of
/// the runs) on the same rotated buffer sets; the benchmark's iteration time is the fused kernel's.
template <class Fused, class Unfused>
std::pair<Timing, Timing> time_fused_and_unfused(benchmark::State& state, Fused&& fused, Unfused&& unfused, int sets, void* stream,
                                                 int fused_warmup, int runs) {
  Timing f, u;
  for (auto _ : state) {
    f = time_launches(fused, sets, stream, fused_warmup, runs);
    u = time_launches(unfused, sets, stream, 5, std::max(10, runs / 4));
    state.SetIterationTime(f.median_us * 1e-6);
  }
  return {f, u};
}

/// Records a fused kernel and its unfused baseline on one shape: the benchmark's counters, the copy row,
/// and a row each (the baseline moving `unfused_factor` times the fused kernel's `moved` bytes).
void add_fused_rows(benchmark::State& state, const char* kernel, const std::string& fused_impl, const std::string& unfused_impl,
                    std::int64_t rows, std::int64_t cols, const char* dtype, const std::pair<Timing, Timing>& times, double copy_us,
                    double moved, double unfused_factor, double err);

/// The family files' registrations (each adds its shapes, smaller for a smoke run).
void register_softmax();
void register_layernorm();
void register_epilogue();
void register_matrix();
void register_host_costs();

}  // namespace tilefuse::bench
