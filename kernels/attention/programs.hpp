// The tile programs of attention, O = softmax(Q K^T * scale) V per (batch, head), with Q, K, V and O
// [batch, heads, seq, head_dim] contiguous. The fused program is FlashAttention's forward pass: a program
// owns BM query rows, walks the keys in blocks of BN with an online softmax (running maximum m and sum l,
// the accumulator rescaled by exp(m_old - m_new) whenever the maximum grows), so the seq x seq scores never
// reach memory; it also writes each row's log-sum-exp for a backward pass. The naive programs materialize
// the scores (S = Q K^T * scale, then P = softmax(S) row by row, then O = P V), to show what fusion saves.
#pragma once

#include <tuple>

#include "dsl/tl.hpp"

namespace tilefuse::kernels {

/// log2(e): the fused program works in base 2 (exp2 is one instruction), with scores pre-scaled by it.
inline constexpr float kLog2e = 1.4426950408889634f;
/// ln(2): turns a base-2 log-sum-exp back into the natural one.
inline constexpr float kLn2 = 0.6931471805599453f;

/// Fused attention forward for one block of BM query rows of one (batch, head): program (i, bh) writes
/// rows i*BM ... of O and lse. `scale_log2` is scale * log2(e). The keys are walked in two loops, as
/// FlashAttention does: first the blocks every row of the program sees whole (no masks at all), then the
/// blocks at the end of the sequence or on the causal diagonal, masked.
template <class T, int BM, int BN, int D, bool Causal>
void attention_program(tl::Ptr<T> q, tl::Ptr<T> k, tl::Ptr<T> v, tl::Ptr<T> o, tl::Ptr<tl::f32> lse, tl::Scalar<tl::i32> seq,
                       tl::Scalar<tl::f32> scale_log2) {
  static_assert(BM % BN == 0, "attention_program: the query block must be a whole number of key blocks");
  namespace t = tl;
  const auto block = t::program_id(0);
  const auto head = t::cast<t::i64>(t::program_id(1)) * t::cast<t::i64>(seq);  // first row of this (batch, head)
  const auto rows = block * BM + t::arange<BM>();
  const auto cols = t::arange<D>();
  const auto row_in = rows(t::all, t::none) < seq;
  const auto at_rows = rows(t::all, t::none) * D + cols(t::none, t::all);
  const auto Q = t::load(q + head * D + at_rows, row_in);
  // One block of keys from j: scores in base 2 (the scale folded into the exponent's multiply-add),
  // masked past the sequence and above the diagonal when Masked; the running maximum m and sum l, and the
  // accumulator rescaled by 2^(m_old - m_new).
  auto step = [&]<bool Masked>(t::Scalar<t::i32> j, t::Tile<t::f32, BM> m, t::Tile<t::f32, BM> l, t::Tile<t::f32, BM, D> acc) {
    const auto keys = j + t::arange<BN>();
    const auto at_keys = head * D + keys(t::all, t::none) * D + cols(t::none, t::all);
    auto s = t::dot(Q, t::trans(Masked ? t::load(k + at_keys, keys(t::all, t::none) < seq) : t::load(k + at_keys)));
    if constexpr (Masked) {
      s = t::where(keys(t::none, t::all) < seq, s, -t::inf);
      if constexpr (Causal) s = t::where(keys(t::none, t::all) <= rows(t::all, t::none), s, -t::inf);
    }
    const auto m_new = t::maximum(m, t::max<1>(s) * scale_log2);
    const auto p = t::exp2(s * scale_log2 - m_new(t::all, t::none));
    const auto alpha = t::exp2(m - m_new);
    const auto V = Masked ? t::load(v + at_keys, keys(t::all, t::none) < seq) : t::load(v + at_keys);
    return std::tuple{m_new, l * alpha + t::sum<1>(p), t::dot(t::cast<T>(p), V, acc * alpha(t::all, t::none))};
  };
  // Causal: the keys before this block's first row are whole for every row; keys past its last row never count.
  const auto whole = Causal ? block * BM : seq - seq % BN;
  const auto end = Causal ? t::minimum(seq, (block + 1) * BM) : seq;
  auto init = std::tuple{t::full<t::f32, BM>(-t::inf), t::full<t::f32, BM>(0.0f), t::zeros<t::f32, BM, D>()};
  auto unmasked = t::for_range(0, whole, BN, init, [&](auto j, auto m, auto l, auto acc) { return step.template operator()<false>(j, m, l, acc); });
  auto [m, l, acc] = t::for_range(whole, end, BN, unmasked, [&](auto j, auto m, auto l, auto acc) { return step.template operator()<true>(j, m, l, acc); });
  t::store(o + head * D + at_rows, t::cast<T>(acc / l(t::all, t::none)), row_in);
  t::store(lse + head + rows, m * kLn2 + t::log(l), rows < seq);
}

/// Naive attention, kernel 1 of 3: S = Q K^T * scale (f32) for a BM x BN block of one (batch, head).
template <class T, int BM, int BN, int D>
void attention_scores_program(tl::Ptr<T> q, tl::Ptr<T> k, tl::Ptr<tl::f32> s, tl::Scalar<tl::i32> seq, tl::Scalar<tl::f32> scale) {
  namespace t = tl;
  const auto head = t::cast<t::i64>(t::program_id(2)) * t::cast<t::i64>(seq);
  const auto rows = t::program_id(0) * BM + t::arange<BM>();
  const auto keys = t::program_id(1) * BN + t::arange<BN>();
  const auto cols = t::arange<D>();
  const auto Q = t::load(q + head * D + rows(t::all, t::none) * D + cols(t::none, t::all), rows(t::all, t::none) < seq);
  const auto K = t::load(k + head * D + keys(t::all, t::none) * D + cols(t::none, t::all), keys(t::all, t::none) < seq);
  const auto in = (rows(t::all, t::none) < seq) & (keys(t::none, t::all) < seq);
  t::store(s + head * seq + rows(t::all, t::none) * seq + keys(t::none, t::all), t::dot(Q, t::trans(K)) * scale, in);
}

/// Naive attention, kernel 2 of 3: P = softmax(S) over one row of `seq` scores (a 1D program per row,
/// BLOCK >= seq), with causal rows masked past the diagonal; P in T.
template <class T, int BLOCK, bool Causal>
void attention_softmax_program(tl::Ptr<tl::f32> s, tl::Ptr<T> p, tl::Scalar<tl::i32> seq) {
  namespace t = tl;
  const auto row = t::cast<t::i64>(t::program_id(0));
  const auto within = t::program_id(0) % seq;  // the query's position in its sequence
  const auto cols = t::arange<BLOCK>();
  auto in = cols < seq;
  if constexpr (Causal) in = in & (cols <= within);
  const auto x = t::load(s + row * seq + cols, in, -t::inf);
  const auto e = t::exp(x - t::max(x));
  t::store(p + row * seq + cols, t::cast<T>(e / t::sum(e)), cols < seq);
}

/// Naive attention, kernel 3 of 3: O = P V for BM rows of one (batch, head), over the keys in blocks of BN.
template <class T, int BM, int BN, int D>
void attention_pv_program(tl::Ptr<T> p, tl::Ptr<T> v, tl::Ptr<T> o, tl::Scalar<tl::i32> seq) {
  namespace t = tl;
  const auto head = t::cast<t::i64>(t::program_id(1)) * t::cast<t::i64>(seq);
  const auto rows = t::program_id(0) * BM + t::arange<BM>();
  const auto cols = t::arange<D>();
  const auto row_in = rows(t::all, t::none) < seq;
  auto [acc] = t::for_range(0, seq, BN, std::tuple{t::zeros<t::f32, BM, D>()}, [&](t::Scalar<t::i32> j, t::Tile<t::f32, BM, D> acc) {
    const auto keys = j + t::arange<BN>();
    const auto P = t::load(p + head * seq + rows(t::all, t::none) * seq + keys(t::none, t::all), row_in & (keys(t::none, t::all) < seq));
    const auto V = t::load(v + head * D + keys(t::all, t::none) * D + cols(t::none, t::all), keys(t::all, t::none) < seq);
    return std::tuple{t::dot(P, V, acc)};
  });
  t::store(o + head * D + rows(t::all, t::none) * D + cols(t::none, t::all), t::cast<T>(acc), row_in);
}

}  // namespace tilefuse::kernels
