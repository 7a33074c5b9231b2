// The shape sweep: shapes as users bring them, not the suite's. A seeded generator gives row-kernel shapes
// with columns log-uniform from 16 to 2^21 (half a multiple of 8 elements, half odd), rows so that the
// matrix holds 16 MB to 1 GB (log-uniform), and f32, f16 and bf16 in turn; each runs through softmax_auto
// and layernorm_auto (the automatic choice, as a caller gets it) against a device copy of the same bytes
// in the same process, after a float64 check of rows spread over the matrix. The table gets a row per shape; the summary at the end gives
// each kernel's x-copy distribution (worst with its shape, 5th percentile, median).
//   tilefuse_bench --sweep 60 [--sweep-seed 1] [--sweep-variant staged] --benchmark_filter=sweep --table sweep.md
// (--sweep-variant runs one variant wherever it takes the shape, to compare it with the automatic choice.)
#include "bench/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "bench/harness.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::bench {

std::vector<SweepShape> sweep_shapes(int count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  static constexpr const char* kDtypes[] = {"f32", "f16", "bf16"};
  std::vector<SweepShape> shapes;
  for (int i = 0; i < count; ++i) {
    SweepShape s;
    s.dtype = kDtypes[i % 3];
    const int element = i % 3 == 0 ? 4 : 2;
    auto cols = static_cast<std::int64_t>(std::llround(std::exp(std::log(16.0) + unit(rng) * (std::log(2097152.0) - std::log(16.0)))));
    cols = std::clamp<std::int64_t>(cols, 16, 2097152);
    if (i % 2 == 0) cols = std::max<std::int64_t>(8, cols / 8 * 8);  // aligned: whole 16-byte runs (32 for f32)
    else cols |= 1;                                                   // odd: no row but the first is aligned
    const double bytes = std::exp(std::log(16.0 * (1 << 20)) + unit(rng) * (std::log(1024.0 * (1 << 20)) - std::log(16.0 * (1 << 20))));
    s.cols = cols;
    s.rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / (static_cast<double>(cols) * element)));
    shapes.push_back(s);
  }
  return shapes;
}

namespace {

// The input of a shape (random_input, seed 7), made once for both kernels of the shape.
template <class H>
std::shared_ptr<const std::vector<H>> sweep_input(const SweepShape& k) {
  static std::mutex mutex;
  static std::string last;
  static std::shared_ptr<const std::vector<H>> kept;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string key = shape_name(k.rows, k.cols, k.dtype);
  if (key == last && kept) return kept;
  kept.reset();  // the previous shape's matrix goes before the next is made
  kept = std::make_shared<const std::vector<H>>(random_input<H>(static_cast<std::size_t>(k.rows * k.cols), 7));
  last = key;
  return kept;
}

// x-copy ratio per kernel, with the shape it was measured at.
std::map<std::string, std::vector<std::pair<double, std::string>>>& ratios() {
  static std::map<std::string, std::vector<std::pair<double, std::string>>> r;
  return r;
}

template <class H>
void sweep_case(benchmark::State& state, const SweepShape& k, bool layernorm) {
  RowCase<H> rc(state, k.rows, k.cols, sweep_input<H>(k));
  if (!rc.ok) return;
  const int runs = rc.runs(50);
  const auto hw = reference::random_vector<H>(static_cast<std::size_t>(k.cols), 8), hb = reference::random_vector<H>(static_cast<std::size_t>(k.cols), 9);
  DeviceBuffer<H> w(hw), b(hb);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(k.rows), DeviceBuffer<float>(k.rows)};
  const kernels::RowVariant forced = run().sweep_variant;
  auto launch = [&](int s) {
    if (layernorm) kernels::layernorm_auto(rc.xs[s], w, b, rc.ys[s], stats, k.rows, k.cols, 1e-5f, rc.opt, forced);
    else kernels::softmax_auto(rc.xs[s], rc.ys[s], k.rows, k.cols, rc.opt, forced);
  };
  try {
    launch(0);
  } catch (const std::invalid_argument& e) {  // a forced variant that does not take the shape
    if (forced == kernels::RowVariant::automatic) throw;
    state.SkipWithError(e.what());  // not a failure of the run
    return;
  }
  // The float64 check on up to 64 rows spread over the matrix, first and last included (a whole 1 GB
  // matrix in float64 would cost the GPU session minutes of host time per shape).
  const std::int64_t m = std::min<std::int64_t>(k.rows, 64);
  std::vector<H> sub(static_cast<std::size_t>(m * k.cols)), got(sub.size());
  rc.stream->synchronize();
  const std::vector<H> out = rc.ys[0].download();
  for (std::int64_t i = 0; i < m; ++i) {
    const std::int64_t row = m == 1 ? 0 : i * (k.rows - 1) / (m - 1);
    std::copy_n(rc.host.begin() + row * k.cols, k.cols, sub.begin() + i * k.cols);
    std::copy_n(out.begin() + row * k.cols, k.cols, got.begin() + i * k.cols);
  }
  const auto ref = layernorm ? reference::layernorm<H>(sub, hw, hb, m, k.cols, 1e-5) : reference::softmax<H>(sub, m, k.cols);
  const double err = reference::relative_error<H>(got, ref);
  // What float64 rounded to H itself misses by: a row of 400 thousand halves has softmax outputs near
  // 2.5e-6, subnormals in f16, that no kernel can hold to f16's relative precision.
  std::vector<H> rounded(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) rounded[i] = reference::from_float<H>(static_cast<float>(ref[i]));
  const double floor = reference::relative_error<H>(rounded, ref);
  if (err > std::max(reference::tolerance<H>(), 2 * floor)) {
    run().failed = true;
    state.SkipWithError(("wrong result, rel err " + std::to_string(err)).c_str());
    return;
  }
  // LayerNorm also reads w and b and writes each row's mean and rstd: a copy of half of what it moves.
  const double moved = layernorm ? norm_moved(k.rows, k.cols, sizeof(H), 2, 2) : 2.0 * static_cast<double>(rc.bytes);
  const double c = copy_time_us(static_cast<std::size_t>(moved / 2), rc.sets, rc.handle(), runs);
  Timing t;
  for (auto _ : state) {
    t = time_launches(launch, rc.sets, rc.handle(), 5, runs);
    state.SetIterationTime(t.median_us * 1e-6);
  }
  state.counters["x_copy"] = c / t.median_us;
  const std::string shape = add_copy_row(k.rows, k.cols, k.dtype, c, moved);
  const kernels::RowVariant v = forced != kernels::RowVariant::automatic ? forced
                                : layernorm ? kernels::layernorm_choice(k.rows, k.cols, sizeof(H), rc.opt)
                                            : kernels::softmax_choice(k.rows, k.cols, sizeof(H), rc.opt);
  char note[96];
  std::snprintf(note, sizeof note, "sweep; %s %s; rel err %.1e", forced != kernels::RowVariant::automatic ? "forced" : "chose",
                kernels::variant_name(v), err);
  const char* kernel = layernorm ? "layernorm" : "softmax";
  add_row(kernel, "tilefuse automatic", shape, k.dtype, t.median_us, moved, c, note);
  ratios()[kernel].emplace_back(c / t.median_us, shape + " " + k.dtype);
}

}  // namespace

void register_sweep(int count, std::uint64_t seed) {
  for (const SweepShape& s : sweep_shapes(count, seed))
    for (bool layernorm : {false, true}) {
      const std::string name = std::string("sweep/") + (layernorm ? "layernorm/" : "softmax/") + shape_name(s.rows, s.cols, s.dtype);
      const std::string d = s.dtype;
      auto* b = d == "bf16" ? benchmark::RegisterBenchmark(name.c_str(), [s, layernorm](benchmark::State& st) { sweep_case<bfloat16>(st, s, layernorm); })
                : d == "f16" ? benchmark::RegisterBenchmark(name.c_str(), [s, layernorm](benchmark::State& st) { sweep_case<half>(st, s, layernorm); })
                             : benchmark::RegisterBenchmark(name.c_str(), [s, layernorm](benchmark::State& st) { sweep_case<float>(st, s, layernorm); });
      timed(b);
    }
}

void print_sweep_summary() {
  for (auto& [kernel, rs] : ratios()) {
    if (rs.empty()) continue;
    std::sort(rs.begin(), rs.end());
    const auto at = [&](double q) { return rs[static_cast<std::size_t>(q * static_cast<double>(rs.size() - 1))].first; };
    std::printf("sweep %s: %zu shapes, x copy worst %.2f (%s), 5th percentile %.2f, median %.2f\n", kernel.c_str(), rs.size(),
                rs.front().first, rs.front().second.c_str(), at(0.05), at(0.5));
  }
}

}  // namespace tilefuse::bench
