// The matmul launcher: argument checks and the launch of the tile program for f16 and bf16, with and
// without GELU, over K steps of 64, with the fastest block shapes measured on the H200 (bench/NOTES.md):
// with warpgroup MMA (sm_90) blocks of 128 x 256 of C over 8 warps (two warpgroups of 64 x 256) and four
// stages of copies (TMA, where the rows of A and B are whole 16-byte vectors: K and N multiples of 8), each
// iteration's wgmmas running on while the next copies land, and C stored through TMA (N a multiple of 8);
// with mma.sync blocks of
// 128 x 128 over 4 warps (each a 64 x 64 block of C) and two stages.
#include "kernels/matmul/matmul.hpp"

#include <stdexcept>
#include <string>

#include "kernels/matrix_launch.hpp"

namespace tilefuse::kernels {

namespace {

void check(const char* name, const Arg& x, std::int64_t count, ir::DType dtype) {
  if (x.dtype != dtype)
    throw std::invalid_argument(std::string("tilefuse matmul: argument ") + name + ": expected " + ir::dtype_name(dtype) +
                                " elements like a, got " + ir::dtype_name(x.dtype));
  if (static_cast<std::int64_t>(x.count) < count)
    throw std::invalid_argument(std::string("tilefuse matmul: argument ") + name + " holds " + std::to_string(x.count) +
                                " elements, expected at least " + std::to_string(count));
}

}  // namespace

void detail::matmul(const MatmulArgs& x, const MatrixOptions& opt) {
  if (x.m < 1 || x.n < 1 || x.k < 1)
    throw std::invalid_argument("tilefuse matmul: expected m, n, k >= 1, got " + std::to_string(x.m) + ", " + std::to_string(x.n) + ", " +
                                std::to_string(x.k));
  if (x.a.dtype != ir::DType::f16 && x.a.dtype != ir::DType::bf16)
    throw std::invalid_argument(std::string("tilefuse matmul: argument a: expected f16 or bf16 elements, got ") + ir::dtype_name(x.a.dtype));
  if (x.m > 2147483647 || x.n > 2147483647 || x.k > 2147483647)
    throw std::invalid_argument("tilefuse matmul: m, n and k must fit in 32 bits");
  check("a", x.a, x.m * x.k, x.a.dtype);
  check("b", x.b, x.k * x.n, x.a.dtype);
  check("bias", x.bias, x.n, x.a.dtype);
  check("c", x.c, x.m * x.n, x.a.dtype);
  const bool wgmma = warpgroup_mma(opt.backend);
  const std::array args{x.a, x.b, x.bias, x.c, Arg::of_i32(static_cast<std::int32_t>(x.m)), Arg::of_i32(static_cast<std::int32_t>(x.n)),
                        Arg::of_i32(static_cast<std::int32_t>(x.k))};
  auto run = [&]<class T, int BM, int BN>(int warps, int stages) {
    constexpr int BK = 64;
    const std::int64_t programs = ((x.m + BM - 1) / BM) * ((x.n + BN - 1) / BN);
    if (programs > 2147483647)
      throw std::invalid_argument("tilefuse matmul: m x n needs more than 2^31-1 blocks of " + std::to_string(BM) + " x " + std::to_string(BN));
    const LaunchConfig config(Grid(programs), opt.backend, opt.stream);
    if (x.epilogue == MatmulEpilogue::gelu)
      matrix_program<&matmul_program<T, BM, BN, BK, MatmulEpilogue::gelu>>("matmul_gelu", warps, {"a", "b", "bias", "c", "M", "N", "K"}, stages).launch(config, args);
    else
      matrix_program<&matmul_program<T, BM, BN, BK, MatmulEpilogue::none>>("matmul", warps, {"a", "b", "bias", "c", "M", "N", "K"}, stages).launch(config, args);
  };
  auto with_blocks = [&]<class T>() {
    if (wgmma) run.template operator()<T, 128, 256>(8, 4);
    else run.template operator()<T, 128, 128>(4, 2);
  };
  if (x.a.dtype == ir::DType::f16) with_blocks.template operator()<tl::f16>();
  else with_blocks.template operator()<tl::bf16>();
}

}  // namespace tilefuse::kernels
