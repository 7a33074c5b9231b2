// Tunes a sample row kernel for one shape and keeps the fastest configuration (kernels/tune/tuner.hpp):
// every configuration of the kernel's space is timed on the GPU (on the CPU interpreter without one,
// timed by the host clock) and checked against the default's output; the table shows each one's median
// time, its error against the default and whether it was accepted. softmax_auto and layernorm_auto then
// run the kept configuration for shapes of the same bucket when RowOptions::tune is TuneMode::cached
// (or first_use). The configuration is kept in TILEFUSE_TUNE_DIR (default: tuned/ in the kernel cache).
//
//   tune [--kernel softmax|layernorm] [--rows R] [--cols N] [--dtype f32|f16|bf16] [--interpreter]
#include <cstdio>
#include <stdexcept>
#include <string>

#include "backend/driver/driver.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;

namespace {

struct Args {
  std::string kernel = "softmax", dtype = "bf16";
  std::int64_t rows = 4096, cols = 3000;
  bool interpreter = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("tune: " + flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--kernel") a.kernel = value();
    else if (flag == "--rows") a.rows = std::stoll(value());
    else if (flag == "--cols") a.cols = std::stoll(value());
    else if (flag == "--dtype") a.dtype = value();
    else if (flag == "--interpreter") a.interpreter = true;
    else throw std::invalid_argument("tune: unknown flag " + flag + " (flags: --kernel --rows --cols --dtype --interpreter)");
  }
  if (a.kernel != "softmax" && a.kernel != "layernorm") throw std::invalid_argument("tune: --kernel must be softmax or layernorm, got " + a.kernel);
  if (a.dtype != "f32" && a.dtype != "f16" && a.dtype != "bf16") throw std::invalid_argument("tune: --dtype must be f32, f16 or bf16, got " + a.dtype);
  return a;
}

// The softmax of x (rows x cols) with what was tuned for its bucket, as the README shows it; returns its
// relative error against float64.
template <class Buf, class H>
double tuned_softmax(Buf& x, Buf& y, const std::vector<H>& host_x, std::int64_t rows, std::int64_t cols, Backend backend, void* stream) {
  // readme-tune-begin
  kernels::RowOptions opt{backend, stream};
  opt.tune = kernels::TuneMode::cached;     // what was tuned for the bucket, else the rules (first_use: tune it now)
  kernels::softmax_auto(x, y, rows, cols, opt);
  // readme-tune-end
  std::vector<H> out(host_x.size());
  if constexpr (requires { y.download(); }) out = y.download();
  else out.assign(y.begin(), y.end());
  return reference::relative_error<H>(out, reference::softmax<H>(host_x, rows, cols));
}

template <class H>
kernels::TuneReport run(const Args& a) {
  const auto x = reference::random_vector<H>(static_cast<std::size_t>(a.rows * a.cols), 1, 0.f, 3.f);
  const auto w = reference::random_vector<H>(static_cast<std::size_t>(a.cols), 2), b = reference::random_vector<H>(static_cast<std::size_t>(a.cols), 3);
  kernels::TuneReport report;
  double err = 0;
  if (!a.interpreter && driver::available()) {
    DeviceBuffer<H> dx(x), dw(w), db(b), dy(x.size());
    const kernels::RowOptions opt{Backend::gpu};
    report = a.kernel == "softmax" ? kernels::tune_softmax(dx, a.rows, a.cols, opt) : kernels::tune_layernorm(dx, dw, db, a.rows, a.cols, 1e-5f, opt);
    if (a.kernel == "softmax") err = tuned_softmax(dx, dy, x, a.rows, a.cols, Backend::gpu, nullptr);
  } else {
    auto hx = x, hw = w, hb = b, hy = x;
    const kernels::RowOptions opt{Backend::interpreter};
    report = a.kernel == "softmax" ? kernels::tune_softmax(hx, a.rows, a.cols, opt) : kernels::tune_layernorm(hx, hw, hb, a.rows, a.cols, 1e-5f, opt);
    if (a.kernel == "softmax") err = tuned_softmax(hx, hy, x, a.rows, a.cols, Backend::interpreter, nullptr);
  }
  if (a.kernel == "softmax") {
    std::printf("softmax_auto with the tuned configuration: relative error %.1e against float64\n", err);
    if (!(err <= reference::tolerance<H>())) throw std::runtime_error("tune: the tuned softmax is wrong");
  }
  return report;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const auto report = a.dtype == "f32" ? run<float>(a) : a.dtype == "f16" ? run<half>(a) : run<bfloat16>(a);
  std::printf("tuned %s (%s)\n", report.key.c_str(), a.interpreter || !driver::available() ? "interpreter, host clock" : "GPU");
  std::printf("%-60s %12s %10s  %s\n", "configuration", "median us", "error", "accepted");
  for (const auto& c : report.candidates)
    std::printf("%-60s %12.2f %10.1e  %s\n", c.config.c_str(), c.us, c.error, c.accepted ? "yes" : ("no: " + c.why).c_str());
  std::printf("best: %s, %.2f us (default %.2f us, %.2fx)\n", kernels::describe(report.best).c_str(), report.best_us, report.default_us,
              report.default_us / report.best_us);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
