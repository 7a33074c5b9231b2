// Softmax rows of the bench: the fused kernel against its five-kernel baseline on the suite's shapes, and
// every variant of the family's variant table (named by kernels::RowVariant) on wide rows; each against a
// device copy of the same bytes in the same process.
#include <cstdio>

#include "bench/harness.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::bench {

namespace {

using kernels::RowVariant;

const kernels::VariantInfo& info(RowVariant v) { return kernels::find_variant(kernels::softmax_variants(), v, "softmax"); }

// The float64 softmax of `rows` rows of `x`, on every core.
template <class H>
std::vector<double> softmax_reference(std::span<const H> x, std::int64_t rows, std::int64_t cols) {
  return reference_by_rows(x, rows, cols, [&](std::span<const H> part, std::int64_t n) { return reference::softmax<H>(part, n, cols); });
}

// The fused kernel and the five unfused kernels on one shape.
template <class H>
void fused_and_unfused(benchmark::State& state, std::int64_t rows, std::int64_t cols, const char* dtype) {
  RowCase<H> rc(state, rows, cols);
  if (!rc.ok) return;
  const std::size_t n = rc.n, bytes = rc.bytes;
  const int runs = rc.runs(200);
  kernels::UnfusedScratch<DeviceBuffer<H>> scratch{DeviceBuffer<H>(rows), DeviceBuffer<H>(n), DeviceBuffer<H>(n), DeviceBuffer<H>(rows)};
  kernels::softmax(rc.xs[0], rc.ys[0], rows, cols, rc.opt);
  double err = 0;
  const auto ref = softmax_reference(rc.host, rows, cols);
  if (!rc.check(state, ref, &err)) return;
  const double c = copy_time_us(bytes, rc.sets, rc.handle(), runs);
  const auto times = time_fused_and_unfused(
      state, [&](int s) { kernels::softmax(rc.xs[s], rc.ys[s], rows, cols, rc.opt); },
      [&](int s) { kernels::softmax_unfused(rc.xs[s], rc.ys[s], scratch, rows, cols, rc.opt); }, rc.sets, rc.handle(), 20, runs);
  add_fused_rows(state, "softmax", "tilefuse fused", "tilefuse unfused (5 kernels)", rows, cols, dtype, times, c, 2.0 * bytes, 4, err);
  add_peer_row(rc, "softmax", rows, cols, dtype, ref, c, 2.0 * bytes, runs,
               [&](const PeerKernel& k, int s) { k.softmax(rc.xs[s].device_ptr(), rc.ys[s].device_ptr(), rc.handle()); });
}

// One variant of the table on one shape.
template <class H>
void variant(benchmark::State& state, const VariantCase& k) {
  RowCase<H> rc(state, k.rows, k.cols);
  if (!rc.ok) return;
  const int runs = rc.runs(100);
  const std::int64_t partials = k.rows * std::max<std::int64_t>(k.splits, 1);
  kernels::SplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(partials), DeviceBuffer<float>(partials)};
  auto launch = [&](int s) {
    if (k.variant == RowVariant::split) kernels::softmax_split(rc.xs[s], rc.ys[s], scratch, k.rows, k.cols, k.splits, rc.opt);
    else kernels::softmax_auto(rc.xs[s], rc.ys[s], k.rows, k.cols, rc.opt, k.variant);
  };
  launch(0);
  double err = 0;
  if (!rc.check(state, softmax_reference(rc.host, k.rows, k.cols), &err)) return;
  const double c = copy_time_us(rc.bytes, rc.sets, rc.handle(), runs);
  Timing t;
  for (auto _ : state) {
    t = time_launches(launch, rc.sets, rc.handle(), 10, runs);
    state.SetIterationTime(t.median_us * 1e-6);
  }
  const double moved = 2.0 * rc.bytes;  // the minimum: each element read once, written once
  state.counters["us"] = t.median_us;
  state.counters["x_copy"] = c / t.median_us;
  const std::string shape = add_copy_row(k.rows, k.cols, k.dtype, c, moved);
  const auto& v = info(k.variant);
  char note[128];
  std::snprintf(note, sizeof note, "%s; rel err %.1e", v.reads == 1 ? "reads the row once" : "reads the row twice (1.5x the bytes)", err);
  add_row("softmax", case_impl(v, k), shape, k.dtype, t.median_us, moved, c, note);
}

template <class F>
benchmark::internal::Benchmark* by_dtype(const std::string& name, const char* dtype, F&& f) {
  const std::string d = dtype;
  if (d == "bf16") return benchmark::RegisterBenchmark(name.c_str(), [f](benchmark::State& st) { f.template operator()<bfloat16>(st); });
  if (d == "f16") return benchmark::RegisterBenchmark(name.c_str(), [f](benchmark::State& st) { f.template operator()<half>(st); });
  return benchmark::RegisterBenchmark(name.c_str(), [f](benchmark::State& st) { f.template operator()<float>(st); });
}

}  // namespace

void register_softmax() {
  struct Shape {
    std::int64_t rows, cols;
    const char* dtype;
  };
  std::vector<Shape> shapes = {{4096, 4096, "f32"}, {8192, 8192, "f32"}, {32768, 1024, "f32"},
                               {65536, 128, "f32"}, {4096, 3000, "f32"}, {16384, 4096, "bf16"}};
  if (run().smoke) shapes = {{256, 1000, "f32"}, {128, 4096, "bf16"}};
  for (const Shape& s : shapes)
    timed(by_dtype("softmax/" + shape_name(s.rows, s.cols, s.dtype), s.dtype,
                   [s]<class H>(benchmark::State& st) { fused_and_unfused<H>(st, s.rows, s.cols, s.dtype); }));
  using V = RowVariant;
  std::vector<VariantCase> wide = {{V::looped, 4096, 32768, "f32"},       {V::looped, 2048, 131072, "bf16"},     {V::looped, 1024, 262144, "f32"},
                            {V::split, 2048, 131072, "bf16", 4},   {V::split, 1024, 262144, "f32", 8},    {V::split, 64, 1048576, "f32", 32},
                            {V::cluster, 2048, 131072, "bf16"},    {V::cluster, 2048, 131072, "f32"},     {V::cluster, 4096, 32768, "f32"},
                            {V::staged, 2048, 131072, "bf16"},     {V::staged, 4096, 32768, "f32"},       {V::staged, 1024, 262144, "f32"},
                            {V::staged, 2048, 131072, "f32"},      {V::looped, 2048, 131072, "f32"},      {V::staged, 1024, 262144, "bf16"},
                            {V::looped, 1024, 262144, "bf16"},     {V::one_program, 4096, 32768, "f32"}};
  if (run().smoke)
    wide = {{V::looped, 16, 40000, "f32"}, {V::split, 4, 40000, "f32", 3}, {V::cluster, 4, 40000, "f32"}, {V::staged, 4, 40000, "f32"}};
  for (const VariantCase& k : wide) {
    std::string name = info(k.variant).entry;
    if (k.variant == V::split) name += std::to_string(k.splits);
    timed(by_dtype(name + "/" + shape_name(k.rows, k.cols, k.dtype), k.dtype, [k]<class H>(benchmark::State& st) { variant<H>(st, k); }));
  }
}

}  // namespace tilefuse::bench
