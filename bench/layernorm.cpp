// LayerNorm and RMSNorm rows of the bench: every variant of the LayerNorm variant table (named by
// kernels::RowVariant) on the suite's shapes and on wide rows, and RMSNorm; each against a device copy of
// the same bytes in the same process.
#include <cstdio>

#include "bench/harness.hpp"
#include "kernels/layernorm/layernorm.hpp"

namespace tilefuse::bench {

namespace {

using kernels::RowVariant;

// A LayerNorm case of the variant table, or (rms) an RMSNorm one.
struct Case : VariantCase {
  bool rms = false;
};

const kernels::VariantInfo& info(RowVariant v) { return kernels::find_variant(kernels::layernorm_variants(), v, "layernorm"); }

template <class H>
void norm(benchmark::State& state, const Case& k) {
  RowCase<H> rc(state, k.rows, k.cols);
  if (!rc.ok) return;
  const int runs = rc.runs(200);
  const auto hw = reference::random_vector<H>(k.cols, 8), hb = reference::random_vector<H>(k.cols, 9);
  DeviceBuffer<H> w(hw), b(hb);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(k.rows), DeviceBuffer<float>(k.rows)};
  const std::int64_t partials = k.rows * std::max<std::int64_t>(k.splits, 1);
  kernels::NormSplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(partials), DeviceBuffer<float>(partials)};
  auto launch = [&](int s) {
    if (k.rms) kernels::rmsnorm(rc.xs[s], w, rc.ys[s], k.rows, k.cols, 1e-6f, rc.opt);
    else if (k.variant == RowVariant::split)
      kernels::layernorm_split(rc.xs[s], w, b, rc.ys[s], stats, scratch, k.rows, k.cols, k.splits, 1e-5f, rc.opt);
    else if (k.variant == RowVariant::cluster) kernels::layernorm_cluster(rc.xs[s], w, b, rc.ys[s], stats, k.rows, k.cols, 1e-5f, rc.opt, k.splits);
    else kernels::layernorm_auto(rc.xs[s], w, b, rc.ys[s], stats, k.rows, k.cols, 1e-5f, rc.opt, k.variant);
  };
  launch(0);
  double err = 0;
  const auto ref = reference_by_rows(rc.host, k.rows, k.cols, [&](std::span<const H> part, std::int64_t n) {
    return k.rms ? reference::rmsnorm<H>(part, hw, n, k.cols, 1e-6) : reference::layernorm<H>(part, hw, hb, n, k.cols, 1e-5);
  });
  if (!rc.check(state, ref, &err)) return;
  // x, y, w and b, and LayerNorm's mean and rstd (RMSNorm writes no statistics): a copy of half of them.
  const double moved = k.rms ? norm_moved(k.rows, k.cols, sizeof(H), 1, 0) : norm_moved(k.rows, k.cols, sizeof(H), 2, 2);
  const double c = copy_time_us(static_cast<std::size_t>(moved / 2), rc.sets, rc.handle(), runs);
  Timing t;
  for (auto _ : state) {
    t = time_launches(launch, rc.sets, rc.handle(), 20, runs);
    state.SetIterationTime(t.median_us * 1e-6);
  }
  state.counters["us"] = t.median_us;
  state.counters["x_copy"] = c / t.median_us;
  const std::string shape = add_copy_row(k.rows, k.cols, k.dtype, c, moved);
  char note[96];
  const bool twice = !k.rms && info(k.variant).reads == 2;
  std::snprintf(note, sizeof note, "%srel err %.1e vs float64", twice ? "reads the row twice (1.5x the bytes); " : "", err);
  add_row(k.rms ? "rmsnorm" : "layernorm", k.rms ? "tilefuse one program per row" : case_impl(info(k.variant), k), shape, k.dtype,
          t.median_us, moved, c, note);
  if (!k.rms && k.variant == RowVariant::one_program)
    add_peer_row(rc, "layernorm", k.rows, k.cols, k.dtype, ref, c, moved, runs, [&](const PeerKernel& p, int s) {
      p.layernorm(rc.xs[s].device_ptr(), w.device_ptr(), b.device_ptr(), rc.ys[s].device_ptr(), rc.handle());
    });
}

}  // namespace

void register_layernorm() {
  using V = RowVariant;
  const V one = V::one_program;
  std::vector<VariantCase> cases = {{one, 4096, 4096, "f32"},          {one, 8192, 8192, "bf16"},           {one, 32768, 1024, "f16"},
                                    {one, 4096, 12288, "bf16"},        {one, 16384, 768, "f32"},            {V::looped, 4096, 12288, "bf16"},
                                    {V::split, 4096, 12288, "bf16", 3}, {V::looped, 256, 131072, "bf16"},   {V::split, 256, 131072, "bf16", 8},
                                    {V::cluster, 4096, 12288, "bf16", 3}, {V::cluster, 256, 131072, "bf16", 8}, {V::staged, 4096, 12288, "bf16"},
                                    {V::staged, 8192, 8192, "bf16"},   {V::staged, 4096, 4096, "f32"},      {V::staged, 4096, 32768, "bf16"},
                                    {V::looped, 4096, 32768, "bf16"},  {one, 4096, 32768, "bf16"}};
  std::vector<VariantCase> rms = {{one, 32768, 4096, "bf16"}};
  if (run().smoke) {
    cases = {{one, 256, 1000, "f32"},      {V::looped, 8, 20000, "f32"},     {V::split, 8, 20000, "f32", 3},
             {V::cluster, 8, 20000, "f32", 2}, {V::staged, 8, 20000, "f32"}};
    rms = {{one, 128, 4096, "bf16"}};
  }
  std::vector<Case> all;
  for (const auto& k : cases) all.push_back(Case{k, false});
  for (const auto& k : rms) all.push_back(Case{k, true});
  for (const Case& k : all) {
    const std::string name = k.rms ? "rmsnorm/" + shape_name(k.rows, k.cols, k.dtype) : case_name(info(k.variant), k);
    const std::string d = k.dtype;
    auto* b = d == "f32"   ? benchmark::RegisterBenchmark(name.c_str(), [k](benchmark::State& st) { norm<float>(st, k); })
              : d == "f16" ? benchmark::RegisterBenchmark(name.c_str(), [k](benchmark::State& st) { norm<half>(st, k); })
                           : benchmark::RegisterBenchmark(name.c_str(), [k](benchmark::State& st) { norm<bfloat16>(st, k); });
    timed(b);
  }
}

}  // namespace tilefuse::bench
