// Attention launchers: argument checks, the block sizes per head dimension, and the launches of the
// fused program and of the three naive ones, for f16 and bf16, head_dim 64 and 128, causal or not.
#include "kernels/attention/attention.hpp"

#include <stdexcept>
#include <string>

#include "kernels/attention/programs.hpp"
#include "kernels/matrix_launch.hpp"

namespace tilefuse::kernels {

namespace {

void check_buffer(const char* entry, const char* name, const Arg& a, std::int64_t count, bool f32) {
  const bool ok_dtype = f32 ? a.dtype == ir::DType::f32 : (a.dtype == ir::DType::f16 || a.dtype == ir::DType::bf16);
  if (!ok_dtype)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": argument " + name + ": expected " + (f32 ? "f32" : "f16 or bf16") +
                                " elements, got " + ir::dtype_name(a.dtype));
  if (static_cast<std::int64_t>(a.count) < count)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": argument " + name + " holds " + std::to_string(a.count) +
                                " elements, expected at least " + std::to_string(count));
}

void check(const char* entry, const detail::AttentionArgs& a, bool lse) {
  const AttentionShape& s = a.shape;
  if (s.batch < 1 || s.heads < 1 || s.seq < 1)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": expected batch, heads and seq >= 1, got " + std::to_string(s.batch) +
                                ", " + std::to_string(s.heads) + ", " + std::to_string(s.seq));
  if (s.head_dim != 64 && s.head_dim != 128)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": head_dim: expected 64 or 128, got " + std::to_string(s.head_dim));
  if (s.batch * s.heads > 65535)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": batch x heads = " + std::to_string(s.batch * s.heads) +
                                " exceeds the 65535 programs of a grid's second axis");
  if (s.seq * s.head_dim > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + entry + ": seq x head_dim exceeds the 2^31-1 elements i32 offsets address");
  const std::int64_t n = s.batch * s.heads * s.seq * s.head_dim;
  check_buffer(entry, "q", a.q, n, false);
  for (const auto& [name, arg] : {std::pair{"k", &a.k}, {"v", &a.v}, {"o", &a.o}}) {
    check_buffer(entry, name, *arg, n, false);
    if (arg->dtype != a.q.dtype)
      throw std::invalid_argument(std::string("tilefuse ") + entry + ": argument " + name + ": expected " + ir::dtype_name(a.q.dtype) +
                                  " elements like q, got " + ir::dtype_name(arg->dtype));
  }
  if (lse) check_buffer(entry, "lse", a.lse, s.batch * s.heads * s.seq, true);
}

template <class F>
void with_half(ir::DType t, F&& f) {
  if (t == ir::DType::f16) f.template operator()<tl::f16>();
  else f.template operator()<tl::bf16>();
}
template <class F>
void with_head_dim(std::int64_t d, F&& f) {
  if (d == 64) f.template operator()<64>();
  else f.template operator()<128>();
}

}  // namespace

// Block shapes, the fastest measured on the H200 for both head dims (bench/NOTES.md):
// - with warpgroup MMA (sm_90): 64 query rows by 64 keys over one warpgroup (4 warps of 16 rows), the
//   scores and P V each one wgmma chain per key block;
// - with mma.sync (every other GPU): 128 query rows by 64 keys over 4 warps of 32 rows each, so that each
//   key block's fragments serve two row tiles per warp (at head dim 128 ptxas spills 128 bytes of the 255
//   registers, and it is still the fastest).
void detail::attention(const AttentionArgs& a, const MatrixOptions& opt) {
  check("attention", a, true);
  constexpr int BN = 64, warps = 4;
  const AttentionShape& s = a.shape;
  const std::array args{a.q, a.k, a.v, a.o, a.lse, Arg::of_i32(static_cast<std::int32_t>(s.seq)), Arg::of_f32(a.scale * kLog2e)};
  const bool wgmma = warpgroup_mma(opt.backend);
  with_half(a.q.dtype, [&]<class T>() {
    with_head_dim(s.head_dim, [&]<int D>() {
      auto run = [&]<int BM, bool C>() {
        const LaunchConfig config(Grid((s.seq + BM - 1) / BM, s.batch * s.heads), opt.backend, opt.stream);
        matrix_program<&attention_program<T, BM, BN, D, C>>(C ? "attention_causal" : "attention", warps,
                                                         {"q", "k", "v", "o", "lse", "seq", "scale_log2"})
            .launch(config, args);
      };
      if (wgmma) {
        if (a.causal) run.template operator()<64, true>();
        else run.template operator()<64, false>();
      } else {
        if (a.causal) run.template operator()<128, true>();
        else run.template operator()<128, false>();
      }
    });
  });
}

void detail::attention_naive(const AttentionArgs& a, const Arg& scores, const Arg& probs, const MatrixOptions& opt) {
  check("attention_naive", a, false);
  const AttentionShape& s = a.shape;
  if (s.seq > 16384) throw std::invalid_argument("tilefuse attention_naive: seq: expected at most 16384, got " + std::to_string(s.seq));
  const std::int64_t n2 = s.batch * s.heads * s.seq * s.seq;
  check_buffer("attention_naive", "scores", scores, n2, true);
  check_buffer("attention_naive", "probs", probs, n2, false);
  if (probs.dtype != a.q.dtype) throw std::invalid_argument("tilefuse attention_naive: argument probs: expected the dtype of q");
  const Arg seq = Arg::of_i32(static_cast<std::int32_t>(s.seq));
  constexpr int BM = 128, BN = 64;
  with_half(a.q.dtype, [&]<class T>() {
    with_head_dim(s.head_dim, [&]<int D>() {
      const Grid tiles((s.seq + BM - 1) / BM, (s.seq + BN - 1) / BN, s.batch * s.heads);
      matrix_program<&attention_scores_program<T, BM, BN, D>>("attention_scores", 8, {"q", "k", "s", "seq", "scale"})
          .launch(LaunchConfig(tiles, opt.backend, opt.stream), std::array{a.q, a.k, scores, seq, Arg::of_f32(a.scale)});
      const LaunchConfig rows(Grid(s.batch * s.heads * s.seq), opt.backend, opt.stream);
      auto softmax = [&]<int BLOCK>() {
        const std::array args{scores, probs, seq};
        if (a.causal)
          matrix_program<&attention_softmax_program<T, BLOCK, true>>("attention_softmax_causal", BLOCK >= 4096 ? 16 : 4, {"s", "p", "seq"})
              .launch(rows, args);
        else
          matrix_program<&attention_softmax_program<T, BLOCK, false>>("attention_softmax", BLOCK >= 4096 ? 16 : 4, {"s", "p", "seq"})
              .launch(rows, args);
      };
      if (s.seq <= 1024) softmax.template operator()<1024>();
      else if (s.seq <= 4096) softmax.template operator()<4096>();
      else softmax.template operator()<16384>();
      matrix_program<&attention_pv_program<T, BM, BN, D>>("attention_pv", 8, {"p", "v", "o", "seq"})
          .launch(LaunchConfig(Grid((s.seq + BM - 1) / BM, s.batch * s.heads), opt.backend, opt.stream), std::array{probs, a.v, a.o, seq});
    });
  });
}

}  // namespace tilefuse::kernels
