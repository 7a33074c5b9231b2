// Fused vs unfused row softmax. On a GPU: checks both against float64 on fresh random input, then prints
// median times, GB/s (bytes read + written), the ratio to a device copy of the same bytes measured in the
// same run, and the fused/unfused speedup. With no GPU: runs the interpreter on a smaller input.
//
//   softmax [--rows R] [--cols C] [--dtype f32|f16|bf16] [--runs N]
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "backend/driver/driver.hpp"
#include "bench/measure.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;

namespace {

struct Args {
  std::int64_t rows = 4096, cols = 4096;
  std::string dtype = "f32";
  int runs = 200;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("softmax: " + flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--rows") a.rows = std::stoll(value());
    else if (flag == "--cols") a.cols = std::stoll(value());
    else if (flag == "--dtype") a.dtype = value();
    else if (flag == "--runs") a.runs = std::stoi(value());
    else throw std::invalid_argument("softmax: unknown flag " + flag + " (flags: --rows --cols --dtype --runs)");
  }
  if (a.dtype != "f32" && a.dtype != "f16" && a.dtype != "bf16")
    throw std::invalid_argument("softmax: --dtype must be f32, f16 or bf16, got " + a.dtype);
  return a;
}

template <class H>
int run_interpreter(const Args& a, const std::string& why) {
  const std::int64_t rows = std::min<std::int64_t>(a.rows, 64), cols = a.cols;
  const auto seed = std::random_device{}();
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf(""))), y2 = y;
  kernels::softmax(x, y, rows, cols, {Backend::interpreter});
  kernels::UnfusedScratch<std::vector<H>> scratch{std::vector<H>(rows), std::vector<H>(x.size()),
                                                  std::vector<H>(x.size()), std::vector<H>(rows)};
  kernels::softmax_unfused(x, y2, scratch, rows, cols, {Backend::interpreter});
  const auto ref = reference::softmax<H>(x, rows, cols);
  const double e1 = reference::relative_error<H>(y, ref), e2 = reference::relative_error<H>(y2, ref);
  std::printf("interpreter: softmax %lldx%lld %s, fused rel err %.2e, unfused rel err %.2e (vs float64)\n",
              static_cast<long long>(rows), static_cast<long long>(cols), a.dtype.c_str(), e1, e2);
  std::printf("GPU run skipped: %s\n", why.c_str());
  const double tol = reference::tolerance<H>();
  return e1 <= tol && e2 <= tol ? 0 : 1;
}

template <class H>
int run_gpu(const Args& a) {
  const auto& dev = driver::device();
  const std::size_t n = static_cast<std::size_t>(a.rows * a.cols);
  const std::size_t bytes = n * sizeof(H);
  driver::Stream stream;
  const kernels::RowOptions opt{Backend::gpu, stream.handle()};

  // Correctness first: fresh random input, poisoned outputs (0xff bytes are NaN in every float type).
  const auto seed = std::random_device{}();
  const auto host_x = reference::random_vector<H>(n, seed);
  DeviceBuffer<H> x(host_x), y(n), y2(n);
  kernels::UnfusedScratch<DeviceBuffer<H>> scratch{DeviceBuffer<H>(a.rows), DeviceBuffer<H>(n), DeviceBuffer<H>(n),
                                                   DeviceBuffer<H>(a.rows)};
  y.fill_bytes(0xff, stream.handle());  // on the kernels' stream, which does not wait for the default one
  y2.fill_bytes(0xff, stream.handle());
  kernels::softmax(x, y, a.rows, a.cols, opt);
  kernels::softmax_unfused(x, y2, scratch, a.rows, a.cols, opt);
  stream.synchronize();
  const auto ref = reference::softmax<H>(host_x, a.rows, a.cols);
  const double e1 = reference::relative_error<H>(y.download(), ref);
  const double e2 = reference::relative_error<H>(y2.download(), ref);

  // Timing: rotate through enough input/output sets to overflow the L2.
  const int sets = bench::rotation_sets(2 * bytes);
  std::vector<DeviceBuffer<H>> xs, ys;
  for (int s = 0; s < sets; ++s) {
    xs.emplace_back(host_x);
    ys.emplace_back(n);
  }
  const auto fused = bench::time_launches([&](int s) { kernels::softmax(xs[s], ys[s], a.rows, a.cols, opt); }, sets,
                                          stream.handle(), 20, a.runs);
  const auto unfused = bench::time_launches(
      [&](int s) { kernels::softmax_unfused(xs[s], ys[s], scratch, a.rows, a.cols, opt); }, sets, stream.handle(), 10,
      std::max(20, a.runs / 4));
  bench::CopyBaseline copy(bytes, sets);
  const auto c = copy.time(stream.handle(), a.runs);

  const double moved = 2.0 * bytes;  // each element read once and written once
  std::printf("device: %s (%s, %d SMs), L2 %d MB, %d buffer sets rotated\n", dev.name.c_str(), dev.arch().c_str(),
              dev.sm_count, dev.l2_bytes >> 20, sets);
  std::printf("softmax %lldx%lld %s: rel err vs float64: fused %.2e, unfused %.2e\n", static_cast<long long>(a.rows),
              static_cast<long long>(a.cols), a.dtype.c_str(), e1, e2);
  std::printf("%-28s %10s %10s %9s\n", "", "median us", "GB/s", "x copy");
  std::printf("%-28s %10.1f %10.1f %9.2f\n", "device copy (same bytes)", c.median_us, moved / c.median_us / 1e3, 1.0);
  std::printf("%-28s %10.1f %10.1f %9.2f\n", "fused softmax", fused.median_us, moved / fused.median_us / 1e3,
              c.median_us / fused.median_us);
  std::printf("%-28s %10.1f %10.1f %9.2f   (4x the bytes: GB/s counts the fused bytes)\n", "unfused (5 kernels)",
              unfused.median_us, moved / unfused.median_us / 1e3, c.median_us / unfused.median_us);
  std::printf("fused speedup over unfused: %.2fx\n", unfused.median_us / fused.median_us);
  const double tol = reference::tolerance<H>();
  if (!(e1 <= tol && e2 <= tol)) {
    std::printf("FAILED: error above %.1e (seed %u)\n", tol, static_cast<unsigned>(seed));
    return 1;
  }
  return 0;
}

template <class H>
int run(const Args& a) {
  std::string why;
  if (interpret_by_default()) return run_interpreter<H>(a, "TILEFUSE_INTERPRET=1 asks for the interpreter");
  if (!driver::available(&why)) return run_interpreter<H>(a, why);
  return run_gpu<H>(a);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (a.dtype == "f32") return run<float>(a);
    if (a.dtype == "f16") return run<half>(a);
    return run<bfloat16>(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
