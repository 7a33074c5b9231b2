// Matrix rows of the bench: fused attention (and the naive three-kernel version where its seq x seq
// scores fit) at the shapes, and matmul with and without the fused GELU epilogue, in TFLOP/s
// (4 B H N^2 D for attention, halved when causal; 2 M N K for matmul). These rows time only: the
// results are checked against float64 by the device tests and by examples/attention and examples/matmul,
// which run in the same GPU-machine script.
#include <cstdio>

#include "bench/harness.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/matmul/matmul.hpp"
#include "kernels/reference.hpp"

namespace tilefuse::bench {

namespace {

void add_tflops_row(const char* kernel, const std::string& impl, const std::string& shape, const char* dtype, double us, double flops,
                    const std::string& note) {
  Row r;
  r.kernel = kernel;
  r.impl = impl;
  r.shape = shape;
  r.dtype = dtype;
  r.us = us;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", flops / us * 1e-6);
  r.note = std::string(buf) + (note.empty() ? "" : "; " + note);
  run().rows.push_back(r);
}

template <class H>
void attention_rows(benchmark::State& state, kernels::AttentionShape s, bool causal, const char* dtype, bool naive) {
  if (!run().gpu_skip.empty()) return state.SkipWithError(run().gpu_skip.c_str());
  if (run().smoke) s.batch = 1, s.heads = 2, s.seq = std::min<std::int64_t>(s.seq, 512);
  const std::size_t n = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  DeviceBuffer<H> q(reference::random_vector<H>(n, 1)), k(reference::random_vector<H>(n, 2)), v(reference::random_vector<H>(n, 3)), o(n);
  DeviceBuffer<float> lse(static_cast<std::size_t>(s.batch * s.heads * s.seq));
  const float scale = 1.0f / std::sqrt(float(s.head_dim));
  auto fused = [&](int) { kernels::attention(q, k, v, o, lse, s, causal, scale); };
  const int runs = run().smoke ? 5 : 50;
  const Timing t = time_launches(fused, 1, nullptr, 5, runs, 1);  // events around each launch: its time and the fastest one
  const std::string shape = "B" + std::to_string(s.batch) + " H" + std::to_string(s.heads) + " N" + std::to_string(s.seq) + " D" +
                            std::to_string(s.head_dim) + (causal ? " causal" : "");
  const double flops = kernels::attention_flops(s, causal);
  add_tflops_row("attention", "tilefuse fused (online softmax)", shape, dtype, t.median_us, flops, "");
  if (naive) {
    const std::size_t n2 = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.seq);
    DeviceBuffer<float> scores(n2);
    DeviceBuffer<H> probs(n2);
    const Timing tn = time_launches([&](int) { kernels::attention_naive(q, k, v, o, scores, probs, s, causal, scale); }, 1, nullptr, 2,
                                    run().smoke ? 3 : 10, 1);
    char note[96];
    std::snprintf(note, sizeof note, "moves %.2f GB of scores and probabilities; fused is %.1fx faster", n2 * (4.0 + 4.0 + 2.0 + 2.0) / 1e9,
                  tn.median_us / t.median_us);
    add_tflops_row("attention", "tilefuse naive (3 kernels)", shape, dtype, tn.median_us, flops, note);
  }
  state.counters["TFLOP/s"] = flops / t.median_us * 1e-6;
}

void matmul_rows(benchmark::State& state, std::int64_t m, kernels::MatmulEpilogue e) {
  if (!run().gpu_skip.empty()) return state.SkipWithError(run().gpu_skip.c_str());
  if (run().smoke) m = 512;
  const std::size_t n = static_cast<std::size_t>(m * m);
  const int sets = std::max(1, rotation_sets(3 * n * 2));
  std::vector<DeviceBuffer<bfloat16>> as, bs, cs;
  for (int i = 0; i < sets; ++i) {
    as.emplace_back(reference::random_vector<bfloat16>(n, 10 + i));
    bs.emplace_back(reference::random_vector<bfloat16>(n, 20 + i));
    cs.emplace_back(n);
  }
  DeviceBuffer<bfloat16> bias(reference::random_vector<bfloat16>(static_cast<std::size_t>(m), 5));
  const Timing t = time_launches([&](int i) { kernels::matmul(as[i], bs[i], bias, cs[i], m, m, m, e); }, sets, nullptr, 5,
                                 run().smoke ? 5 : 50, 1);
  const std::string shape = std::to_string(m) + "x" + std::to_string(m) + "x" + std::to_string(m);
  // The fastest launch beside the median: under sustained load the later launches of a burst slow down
  // (bench/NOTES.md, "Matmul against cuBLAS plus a GELU pass"), which the gap between the two shows.
  char fastest[64];
  std::snprintf(fastest, sizeof fastest, "fastest launch %.1f us", t.min_us);
  add_tflops_row("matmul", e == kernels::MatmulEpilogue::gelu ? "tilefuse (bias + GELU fused)" : "tilefuse (bias)", shape, "bf16",
                 t.median_us, kernels::matmul_flops(m, m, m), fastest);
  state.counters["TFLOP/s"] = kernels::matmul_flops(m, m, m) / t.median_us * 1e-6;
}

}  // namespace

void register_matrix() {
  struct A {
    kernels::AttentionShape s;
    bool causal, naive;
  };
  for (const A& a : {A{{4, 32, 4096, 128}, false, true}, A{{4, 32, 4096, 128}, true, true}, A{{8, 16, 2048, 64}, false, true},
                     A{{1, 32, 16384, 128}, true, false}}) {
    const std::string name = "attention/B" + std::to_string(a.s.batch) + "H" + std::to_string(a.s.heads) + "N" + std::to_string(a.s.seq) +
                             "D" + std::to_string(a.s.head_dim) + (a.causal ? "/causal" : "");
    timed(benchmark::RegisterBenchmark((name + "/bf16").c_str(), [a](benchmark::State& st) {
      for (auto _ : st) attention_rows<bfloat16>(st, a.s, a.causal, "bf16", a.naive);
    }));
  }
  timed(benchmark::RegisterBenchmark("attention/B4H32N4096D128/f16", [](benchmark::State& st) {
    for (auto _ : st) attention_rows<half>(st, {4, 32, 4096, 128}, false, "f16", false);
  }));
  for (std::int64_t m : {4096, 8192})
    for (auto e : {kernels::MatmulEpilogue::none, kernels::MatmulEpilogue::gelu})
      timed(benchmark::RegisterBenchmark(("matmul/" + std::to_string(m) + (e == kernels::MatmulEpilogue::gelu ? "/gelu" : "/bias")).c_str(),
                                         [m, e](benchmark::State& st) {
                                           for (auto _ : st) matmul_rows(st, m, e);
                                         }));
}

}  // namespace tilefuse::bench
