// Epilogue rows of the bench: the fused bias + GELU + dropout + residual kernel against its four-kernel
// baseline, each against a device copy of the fused kernel's bytes (x and the residual read, y written)
// in the same process.
#include <cstdio>

#include "bench/harness.hpp"
#include "kernels/epilogue/epilogue.hpp"

namespace tilefuse::bench {

namespace {

template <class H>
void fused_and_unfused(benchmark::State& state, std::int64_t rows, std::int64_t cols, const char* dtype) {
  RowCase<H> rc(state, rows, cols);  // xs: x, ys: y
  if (!rc.ok) return;
  const int runs = rc.runs(100);
  const auto hr = reference::random_vector<H>(rc.n, 11), hb = reference::random_vector<H>(cols, 12);
  std::vector<DeviceBuffer<H>> residuals;
  for (int s = 0; s < rc.sets; ++s) residuals.emplace_back(hr);
  DeviceBuffer<H> bias(hb), t1(rc.n), t2(rc.n);
  const kernels::DropoutParams d{0.1f, 1234, 0};
  kernels::epilogue(rc.xs[0], bias, residuals[0], rc.ys[0], rows, cols, d, rc.opt);
  double err = 0;
  if (!rc.check(state, reference::epilogue<H>(rc.host, hb, hr, rows, cols, d.p, d.seed, d.offset), &err)) return;
  const double moved = 3.0 * rc.bytes;  // x and the residual read, y written
  const double c = copy_time_us(static_cast<std::size_t>(moved / 2), rc.sets, rc.handle(), runs);
  const auto times = time_fused_and_unfused(
      state, [&](int s) { kernels::epilogue(rc.xs[s], bias, residuals[s], rc.ys[s], rows, cols, d, rc.opt); },
      [&](int s) { kernels::epilogue_unfused(rc.xs[s], bias, residuals[s], rc.ys[s], t1, t2, rows, cols, d, rc.opt); }, rc.sets,
      rc.handle(), 10, runs);
  add_fused_rows(state, "epilogue", "tilefuse fused (bias + GELU + dropout + residual)", "tilefuse unfused (4 kernels)", rows, cols,
                 dtype, times, c, moved, 3, err);
}

}  // namespace

void register_epilogue() {
  struct Shape {
    std::int64_t rows, cols;
    const char* dtype;
  };
  std::vector<Shape> shapes = {{8192, 4096, "f32"}, {16384, 4096, "bf16"}};
  if (run().smoke) shapes = {{256, 1000, "f32"}};
  for (const Shape& s : shapes) {
    const std::string name = "epilogue/" + shape_name(s.rows, s.cols, s.dtype);
    auto* b = std::string(s.dtype) == "bf16"
                  ? benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { fused_and_unfused<bfloat16>(st, s.rows, s.cols, s.dtype); })
                  : benchmark::RegisterBenchmark(name.c_str(), [s](benchmark::State& st) { fused_and_unfused<float>(st, s.rows, s.cols, s.dtype); });
    timed(b);
  }
}

}  // namespace tilefuse::bench
