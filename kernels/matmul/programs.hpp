// The tile program of the matrix product with a fused epilogue, C = epilogue(A B + bias), A [M, K],
// B [K, N], C [M, N] row-major, bias [N]: a program owns a BM x BN block of C, walks K in steps of BK
// with dot (tensor cores, f32 accumulation), adds the bias and applies GELU (or nothing) in registers,
// and stores C once. Every edge is masked, so M, N and K need not be multiples of the blocks.
#pragma once

#include <tuple>

#include "dsl/tl.hpp"

namespace tilefuse::kernels {

/// The epilogue a matmul applies to A B + bias.
enum class MatmulEpilogue : std::uint8_t {
  none,  ///< C = A B + bias
  gelu,  ///< C = gelu(A B + bias), the erf GELU (tl::gelu)
};

/// Blocks of C along M that consecutive programs share (grouped order: programs that run together read
/// the same few blocks of A and B, which stay in L2).
inline constexpr int kMatmulGroup = 8;

/// One BM x BN block of C = epilogue(A B + bias), for a 1D grid of cdiv(M, BM) * cdiv(N, BN) programs
/// in grouped order (groups of G blocks along M).
template <class T, int BM, int BN, int BK, MatmulEpilogue E, int G = kMatmulGroup>
void matmul_program(tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> bias, tl::Ptr<T> c, tl::Scalar<tl::i32> M, tl::Scalar<tl::i32> N,
                    tl::Scalar<tl::i32> K) {
  namespace t = tl;
  const auto pid = t::program_id(0);
  const auto blocks_m = (M + (BM - 1)) / BM, blocks_n = (N + (BN - 1)) / BN;
  const auto per_group = blocks_n * G;
  const auto first_m = (pid / per_group) * G;
  const auto group_m = t::minimum(blocks_m - first_m, G);
  const auto in_group = pid % per_group;
  const auto rows = (first_m + in_group % group_m) * BM + t::arange<BM>();
  const auto cols = (in_group / group_m) * BN + t::arange<BN>();
  const auto row_in = rows(t::all, t::none) < M;
  const auto col_in = cols(t::none, t::all) < N;
  const auto a_rows = t::cast<t::i64>(rows(t::all, t::none)) * t::cast<t::i64>(K);
  auto [acc] = t::for_range(0, K, BK, std::tuple{t::zeros<t::f32, BM, BN>()}, [&](t::Scalar<t::i32> kk, t::Tile<t::f32, BM, BN> acc) {
    const auto ks = kk + t::arange<BK>();
    const auto A = t::load(a + a_rows + ks(t::none, t::all), row_in & (ks(t::none, t::all) < K));
    const auto B = t::load(b + t::cast<t::i64>(ks(t::all, t::none)) * t::cast<t::i64>(N) + cols(t::none, t::all),
                           (ks(t::all, t::none) < K) & col_in);
    return std::tuple{t::dot(A, B, acc)};
  });
  auto x = acc + t::cast<t::f32>(t::load(bias + cols, cols < N))(t::none, t::all);
  if constexpr (E == MatmulEpilogue::gelu) x = t::gelu(x);
  t::store(c + t::cast<t::i64>(rows(t::all, t::none)) * t::cast<t::i64>(N) + cols(t::none, t::all), t::cast<T>(x), row_in & col_in);
}

}  // namespace tilefuse::kernels
