// Attention forward, O = softmax(Q K^T * scale) V with the per-row log-sum-exp, for Q, K, V, O of
// [batch, heads, seq, head_dim] contiguous f16 or bf16 (head_dim 64 or 128), causal or not: fused
// (FlashAttention's online softmax, one kernel, the scores never stored) and naive (three kernels through
// seq x seq scores in memory). The launchers are compiled once in the kernels library; these inline
// wrappers check element types at compile time and pass the buffers on. Tile programs: programs.hpp.
#pragma once

#include <cstdint>

#include "backend/runtime/program.hpp"
#include "kernels/matrix_options.hpp"
#include "kernels/rows/operands.hpp"

namespace tilefuse::kernels {

/// The shape of an attention call.
struct AttentionShape {
  std::int64_t batch = 1, heads = 1, seq = 1, head_dim = 64;
};

namespace detail {
/// An attention call's operands, type-erased: what the compiled launchers take.
struct AttentionArgs {
  Arg q, k, v, o, lse;
  AttentionShape shape;
  bool causal = false;
  float scale = 0;
};
void attention(const AttentionArgs& args, const MatrixOptions& opt);
void attention_naive(const AttentionArgs& args, const Arg& scores, const Arg& probs, const MatrixOptions& opt);
}  // namespace detail

/// Fused attention: o (like q) and lse (f32, batch x heads x seq: each row's natural log-sum-exp of its
/// scaled scores) from q, k, v. `scale` multiplies the scores (usually 1/sqrt(head_dim)).
template <class Buf, class LseBuf>
void attention(Buf& q, Buf& k, Buf& v, Buf& o, LseBuf& lse, const AttentionShape& shape, bool causal, float scale,
               const MatrixOptions& opt = {}) {
  static_assert(holds_floats<Buf> && !holds_f32<Buf>, "tilefuse attention: q, k, v and o hold tilefuse::half or tilefuse::bfloat16.");
  static_assert(holds_f32<LseBuf>, "tilefuse attention: lse holds float.");
  detail::attention({memory_arg(q), memory_arg(k), memory_arg(v), memory_arg(o), memory_arg(lse), shape, causal, scale}, opt);
}

/// Naive attention, as three kernels: scores S = Q K^T * scale (f32, batch x heads x seq x seq), P =
/// softmax(S) (like q, same size), then O = P V. lse is not computed. For seq up to 16384.
template <class Buf, class F32Buf>
void attention_naive(Buf& q, Buf& k, Buf& v, Buf& o, F32Buf& scores, Buf& probs, const AttentionShape& shape, bool causal,
                     float scale, const MatrixOptions& opt = {}) {
  static_assert(holds_floats<Buf> && !holds_f32<Buf>, "tilefuse attention_naive: q, k, v, o and probs hold half or bfloat16.");
  static_assert(holds_f32<F32Buf>, "tilefuse attention_naive: scores hold float.");
  Arg none;
  detail::attention_naive({memory_arg(q), memory_arg(k), memory_arg(v), memory_arg(o), none, shape, causal, scale}, memory_arg(scores),
                          memory_arg(probs), opt);
}

/// Floating-point operations of one attention forward: 4 batch heads seq^2 head_dim, halved when causal.
inline double attention_flops(const AttentionShape& s, bool causal) {
  const double f = 4.0 * s.batch * s.heads * double(s.seq) * double(s.seq) * s.head_dim;
  return causal ? f / 2 : f;
}

}  // namespace tilefuse::kernels
