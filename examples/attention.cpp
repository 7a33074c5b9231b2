// Attention forward, fused (FlashAttention's online softmax: one kernel, the seq x seq scores never in
// memory) and naive (scores, softmax and P V as three kernels through memory). On a GPU: checks both
// against float64 on the first head, then prints the median time, TFLOP/s and the bytes the naive
// version moves that the fused one does not. With no GPU: the interpreter on a small shape.
//
//   attention [--batch B] [--heads H] [--seq N] [--dim 64|128] [--causal 0|1] [--dtype bf16|f16] [--runs R]
#include <cstdio>
#include <random>
#include <string>

#include "backend/driver/driver.hpp"
#include "bench/measure.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/matrix_reference.hpp"
#include "kernels/reference.hpp"

using namespace tilefuse;

namespace {

// Float64 check of head 0 of o (and lse) against the reference; returns the relative errors.
template <class H>
std::pair<double, double> check_head0(const std::vector<H>& q, const std::vector<H>& k, const std::vector<H>& v,
                                      const std::vector<H>& o, const std::vector<float>* lse, const kernels::AttentionShape& s,
                                      bool causal, float scale) {
  const std::size_t n = static_cast<std::size_t>(s.seq * s.head_dim);
  const std::vector<H> q0(q.begin(), q.begin() + n), k0(k.begin(), k.begin() + n), v0(v.begin(), v.begin() + n),
      o0(o.begin(), o.begin() + n);
  std::vector<double> ro, rl;
  reference::attention(q0, k0, v0, 1, s.seq, s.head_dim, causal, scale, ro, rl);
  double el = 0;
  if (lse) el = reference::max_relative_error(std::vector<float>(lse->begin(), lse->begin() + s.seq), rl);
  return {reference::max_relative_error(o0, ro), el};
}

template <class H>
int run(kernels::AttentionShape s, bool causal, int runs, const char* dtype) {
  std::string why;
  const bool gpu = !interpret_by_default() && driver::available(&why);
  if (!gpu) s = {1, 2, std::min<std::int64_t>(s.seq, 96), s.head_dim};
  const std::size_t n = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  const auto seed = std::random_device{}();
  auto q = reference::random_vector<H>(n, seed), k = reference::random_vector<H>(n, seed + 1), v = reference::random_vector<H>(n, seed + 2);
  const float scale = 1.0f / std::sqrt(float(s.head_dim));
  const double flops = kernels::attention_flops(s, causal);
  const double n2 = double(s.batch) * s.heads * s.seq * s.seq;
  std::printf("attention B%lld H%lld N%lld D%lld %s %s\n", (long long)s.batch, (long long)s.heads, (long long)s.seq, (long long)s.head_dim,
              dtype, causal ? "causal" : "full");
  if (!gpu) {
    std::vector<H> o(n);
    std::vector<float> lse(static_cast<std::size_t>(s.batch * s.heads * s.seq));
    kernels::attention(q, k, v, o, lse, s, causal, scale, {Backend::interpreter});
    const auto [eo, el] = check_head0(q, k, v, o, &lse, s, causal, scale);
    std::printf("interpreter: fused rel err %.2e (lse %.2e)\nGPU run skipped: %s\n", eo, el, why.empty() ? "TILEFUSE_INTERPRET=1" : why.c_str());
    return eo < 1e-2 && el < 1e-2 ? 0 : 1;
  }
  DeviceBuffer<H> dq(q), dk(k), dv(v), o(std::vector<H>(n, H(NAN))), o2(std::vector<H>(n, H(NAN)));
  DeviceBuffer<float> lse(static_cast<std::size_t>(s.batch * s.heads * s.seq));
  kernels::attention(dq, dk, dv, o, lse, s, causal, scale);
  const auto lse_host = lse.download();
  const auto [eo, el] = check_head0(q, k, v, o.download(), &lse_host, s, causal, scale);
  const bool naive = s.seq <= 16384 && n2 * 6 < 40e9;  // the scores (f32) and probabilities must fit
  double e2 = 0, naive_us = 0;
  if (naive) {
    DeviceBuffer<float> scores(static_cast<std::size_t>(n2));
    DeviceBuffer<H> probs(static_cast<std::size_t>(n2));
    kernels::attention_naive(dq, dk, dv, o2, scores, probs, s, causal, scale);
    e2 = check_head0(q, k, v, o2.download(), nullptr, s, causal, scale).first;
    naive_us = bench::time_launches([&](int) { kernels::attention_naive(dq, dk, dv, o2, scores, probs, s, causal, scale); }, 1, nullptr, 2,
                                    std::max(3, runs / 10)).median_us;
  }
  const double us = bench::time_launches([&](int) { kernels::attention(dq, dk, dv, o, lse, s, causal, scale); }, 1, nullptr, 5, runs).median_us;
  std::printf("fused:  %10.1f us  %6.1f TFLOP/s  rel err %.2e (lse %.2e)\n", us, flops / us * 1e-6, eo, el);
  if (naive)
    std::printf("naive:  %10.1f us  %6.1f TFLOP/s  rel err %.2e; moves %.2f GB of scores and probabilities (written and read "
                "back), which fusion never stores: %.1fx slower\n",
                naive_us, flops / naive_us * 1e-6, e2, n2 * (4 + 4 + sizeof(H) + sizeof(H)) / 1e9, naive_us / us);
  return eo < 1e-2 && el < 1e-2 && e2 < 1e-2 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    kernels::AttentionShape s{4, 16, 2048, 128};
    bool causal = false;
    int runs = 50;
    std::string dtype = "bf16";
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--batch") s.batch = std::stoll(value);
      else if (flag == "--heads") s.heads = std::stoll(value);
      else if (flag == "--seq") s.seq = std::stoll(value);
      else if (flag == "--dim") s.head_dim = std::stoll(value);
      else if (flag == "--causal") causal = value == "1";
      else if (flag == "--dtype") dtype = value;
      else if (flag == "--runs") runs = std::stoi(value);
      else throw std::invalid_argument("attention: unknown flag " + flag + " (flags: --batch --heads --seq --dim --causal --dtype --runs)");
    }
    if (dtype == "f16") return run<half>(s, causal, runs, "f16");
    if (dtype != "bf16") throw std::invalid_argument("attention: --dtype must be bf16 or f16, got " + dtype);
    return run<bfloat16>(s, causal, runs, "bf16");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention: %s\n", e.what());
    return 2;
  }
}
