// The README's tile program: a fused row softmax written from scratch, run on the GPU when there is
// one and in the CPU interpreter otherwise, checked against float64.
#include <cstdio>

#include "backend/driver/driver.hpp"
#include "kernels/reference.hpp"
// readme-begin
#include "dsl/tl.hpp"
namespace tl = tilefuse::tl;

// One program per row: what one row does with whole tiles.
template <int BLOCK>
void row_softmax(tl::Ptr<const tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();             // BLOCK: power of two >= n_cols
  auto mask = cols < n_cols;                   // the ragged tail
  auto x = tl::load(in + row * stride + cols, mask, -tl::inf);
  auto z = x - tl::max(x);
  auto num = tl::exp(z);
  tl::store(out + row * stride + cols, num / tl::sum(num), mask);
}

int run(std::vector<float>& x, std::vector<float>& y, int rows, int cols, tilefuse::Backend backend) {
  tilefuse::Kernel<&row_softmax<1024>> softmax("row_softmax", {.num_warps = 4});
  if (backend == tilefuse::Backend::interpreter) {
    softmax.launch({{rows}, backend}, x, y, cols, cols);  // host memory, CPU interpreter
  } else {
    tilefuse::DeviceBuffer<float> dx(x), dy(y.size());
    softmax.launch({rows}, dx, dy, cols, cols);           // traced once, NVRTC-compiled, cached
    dy.download(y);
  }
  return 0;
}
// readme-end

int main() {
  const int rows = 300, cols = 1000;
  auto x = tilefuse::reference::random_vector<float>(rows * cols, 42);
  std::vector<float> y(x.size(), std::nanf(""));
  std::string why;
  const bool gpu = !tilefuse::interpret_by_default() && tilefuse::driver::available(&why);
  run(x, y, rows, cols, gpu ? tilefuse::Backend::gpu : tilefuse::Backend::interpreter);
  const auto ref = tilefuse::reference::softmax<float>(x, rows, cols);
  const double err = tilefuse::reference::relative_error<float>(y, ref);
  std::printf("quickstart: row softmax %dx%d on the %s, relative error vs float64 %.2e\n", rows, cols,
              gpu ? "GPU" : "CPU interpreter", err);
  if (!gpu) std::printf("(no GPU: %s)\n", why.empty() ? "TILEFUSE_INTERPRET=1" : why.c_str());
  return err < 1e-5 ? 0 : 1;
}
