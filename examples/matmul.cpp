// C = gelu(A B + bias) as one kernel (the epilogue fused into the matrix product's last step). On a GPU:
// checks 64 rows against float64, then prints the median time and TFLOP/s with and without the GELU.
// With no GPU: the interpreter on a small, ragged shape.
//
//   matmul [--m M] [--n N] [--k K] [--runs R]
#include <cstdio>
#include <random>
#include <string>

#include "backend/driver/driver.hpp"
#include "bench/measure.hpp"
#include "kernels/matmul/matmul.hpp"
#include "kernels/matrix_reference.hpp"
#include "kernels/reference.hpp"

using namespace tilefuse;

namespace {

// Relative error of rows [0, rows) of c against float64.
double check_rows(const std::vector<bfloat16>& a, const std::vector<bfloat16>& b, const std::vector<bfloat16>& bias,
                  const std::vector<bfloat16>& c, std::int64_t rows, std::int64_t N, std::int64_t K) {
  const std::vector<bfloat16> a0(a.begin(), a.begin() + rows * K), c0(c.begin(), c.begin() + rows * N);
  return reference::max_relative_error(c0, reference::matmul(a0, b, bias, rows, N, K, true));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::int64_t M = 4096, N = 4096, K = 4096;
    int runs = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--m") M = std::stoll(value);
      else if (flag == "--n") N = std::stoll(value);
      else if (flag == "--k") K = std::stoll(value);
      else if (flag == "--runs") runs = std::stoi(value);
      else throw std::invalid_argument("matmul: unknown flag " + flag + " (flags: --m --n --k --runs)");
    }
    std::string why;
    const bool gpu = !interpret_by_default() && driver::available(&why);
    if (!gpu) M = 70, N = 50, K = 40;
    const auto seed = std::random_device{}();
    auto a = reference::random_vector<bfloat16>(M * K, seed), b = reference::random_vector<bfloat16>(K * N, seed + 1);
    auto bias = reference::random_vector<bfloat16>(N, seed + 2);
    std::printf("matmul %lldx%lldx%lld bf16, C = gelu(A B + bias)\n", (long long)M, (long long)N, (long long)K);
    if (!gpu) {
      std::vector<bfloat16> c(M * N);
      kernels::matmul(a, b, bias, c, M, N, K, kernels::MatmulEpilogue::gelu, {Backend::interpreter});
      const double e = check_rows(a, b, bias, c, M, N, K);
      std::printf("interpreter: rel err %.2e\nGPU run skipped: %s\n", e, why.empty() ? "TILEFUSE_INTERPRET=1" : why.c_str());
      return e < 1e-2 ? 0 : 1;
    }
    DeviceBuffer<bfloat16> da(a), db(b), dbias(bias), c(std::vector<bfloat16>(M * N, bfloat16(NAN)));
    kernels::matmul(da, db, dbias, c, M, N, K, kernels::MatmulEpilogue::gelu);
    const double e = check_rows(a, b, bias, c.download(), std::min<std::int64_t>(M, 64), N, K);
    const double flops = kernels::matmul_flops(M, N, K);
    for (auto ep : {kernels::MatmulEpilogue::gelu, kernels::MatmulEpilogue::none}) {
      const double us = bench::time_launches([&](int) { kernels::matmul(da, db, dbias, c, M, N, K, ep); }, 1, nullptr, 5, runs).median_us;
      std::printf("%-22s %10.1f us  %6.1f TFLOP/s\n", ep == kernels::MatmulEpilogue::gelu ? "bias + GELU (fused):" : "bias only:", us,
                  flops / us * 1e-6);
    }
    std::printf("rel err (first 64 rows vs float64) %.2e\n", e);
    return e < 1e-2 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "matmul: %s\n", e.what());
    return 2;
  }
}
