// y = dropout(gelu(x + bias)) + residual, fused into one kernel and as four kernels. On a GPU: checks
// both against float64 (with the same Philox draws), then prints median times, the bytes each version
// moves, and the ratio to a device copy of the fused version's bytes. With no GPU: the interpreter.
//
//   fused_epilogue [--rows R] [--cols C] [--p P] [--runs N]
#include <cstdio>
#include <random>
#include <string>

#include "backend/driver/driver.hpp"
#include "bench/measure.hpp"
#include "kernels/epilogue/epilogue.hpp"
#include "kernels/reference.hpp"

using namespace tilefuse;

int main(int argc, char** argv) {
  try {
    std::int64_t rows = 8192, cols = 4096;
    float p = 0.1f;
    int runs = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string flag = argv[i], value = argv[i + 1];
      if (flag == "--rows") rows = std::stoll(value);
      else if (flag == "--cols") cols = std::stoll(value);
      else if (flag == "--p") p = std::stof(value);
      else if (flag == "--runs") runs = std::stoi(value);
      else throw std::invalid_argument("fused_epilogue: unknown flag " + flag + " (flags: --rows --cols --p --runs)");
    }
    std::string why;
    const bool gpu = !interpret_by_default() && driver::available(&why);
    if (!gpu) rows = std::min<std::int64_t>(rows, 32);
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    const auto seed = std::random_device{}();
    auto x = reference::random_vector<float>(n, seed), res = reference::random_vector<float>(n, seed + 1);
    auto bias = reference::random_vector<float>(cols, seed + 2);
    const kernels::DropoutParams d{p, static_cast<std::int64_t>(seed), 0};
    const auto ref = reference::epilogue<float>(x, bias, res, rows, cols, p, d.seed, d.offset);
    // Bytes: fused reads x and the residual and writes y; unfused moves 2 + 2 + 2 + 3 matrices.
    const double fused_bytes = 3.0 * n * sizeof(float), unfused_bytes = 9.0 * n * sizeof(float);
    if (!gpu) {
      std::vector<float> y(n), y2(n), t1(n), t2(n);
      kernels::epilogue(x, bias, res, y, rows, cols, d, {Backend::interpreter});
      kernels::epilogue_unfused(x, bias, res, y2, t1, t2, rows, cols, d, {Backend::interpreter});
      const double e1 = reference::relative_error<float>(y, ref), e2 = reference::relative_error<float>(y2, ref);
      std::printf("interpreter: epilogue %lldx%lld f32, p = %.2f: fused rel err %.2e, unfused %.2e; fused moves %.1f MB, "
                  "unfused %.1f MB\nGPU run skipped: %s\n",
                  static_cast<long long>(rows), static_cast<long long>(cols), p, e1, e2, fused_bytes / 1e6,
                  unfused_bytes / 1e6, why.empty() ? "TILEFUSE_INTERPRET=1" : why.c_str());
      return e1 <= 1e-5 && e2 <= 1e-5 ? 0 : 1;
    }
    driver::Stream stream;
    const kernels::RowOptions opt{Backend::gpu, stream.handle()};
    DeviceBuffer<float> dx(x), dr(res), db(bias), y(n), y2(n), t1(n), t2(n);
    y.fill_bytes(0xff, stream.handle());
    y2.fill_bytes(0xff, stream.handle());
    kernels::epilogue(dx, db, dr, y, rows, cols, d, opt);
    kernels::epilogue_unfused(dx, db, dr, y2, t1, t2, rows, cols, d, opt);
    stream.synchronize();
    const double e1 = reference::relative_error<float>(y.download(), ref);
    const double e2 = reference::relative_error<float>(y2.download(), ref);
    const int sets = bench::rotation_sets(static_cast<std::size_t>(fused_bytes));
    std::vector<DeviceBuffer<float>> xs, rs, ys;
    for (int s = 0; s < sets; ++s) {
      xs.emplace_back(x);
      rs.emplace_back(res);
      ys.emplace_back(n);
    }
    const auto fused = bench::time_launches([&](int s) { kernels::epilogue(xs[s], db, rs[s], ys[s], rows, cols, d, opt); },
                                            sets, stream.handle(), 10, runs);
    const auto unfused = bench::time_launches(
        [&](int s) { kernels::epilogue_unfused(xs[s], db, rs[s], ys[s], t1, t2, rows, cols, d, opt); }, sets,
        stream.handle(), 5, std::max(10, runs / 4));
    bench::CopyBaseline copy(static_cast<std::size_t>(fused_bytes / 2), sets);
    const auto c = copy.time(stream.handle(), runs);
    std::printf("device: %s; epilogue %lldx%lld f32, p = %.2f; rel err vs float64: fused %.2e, unfused %.2e\n",
                driver::device().name.c_str(), static_cast<long long>(rows), static_cast<long long>(cols), p, e1, e2);
    std::printf("%-26s %10s %10s %9s %10s\n", "", "median us", "MB moved", "GB/s", "x copy");
    std::printf("%-26s %10.1f %10.1f %9.1f %10.2f\n", "copy (fused's bytes)", c.median_us, fused_bytes / 1e6,
                fused_bytes / c.median_us / 1e3, 1.0);
    std::printf("%-26s %10.1f %10.1f %9.1f %10.2f\n", "fused (1 kernel)", fused.median_us, fused_bytes / 1e6,
                fused_bytes / fused.median_us / 1e3, c.median_us / fused.median_us);
    std::printf("%-26s %10.1f %10.1f %9.1f %10.2f\n", "unfused (4 kernels)", unfused.median_us, unfused_bytes / 1e6,
                unfused_bytes / unfused.median_us / 1e3, c.median_us / unfused.median_us);
    std::printf("fused speedup: %.2fx\n", unfused.median_us / fused.median_us);
    return e1 <= 1e-5 && e2 <= 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
