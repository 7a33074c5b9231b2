// Memory the caller already owns: a tilefuse kernel on plain cudaMalloc'ed memory and the caller's own
// cudaStream_t, without a copy, giving bit for bit what the same kernel gives on DeviceBuffers (and the
// float64 reference). Also a tile program of one's own with a read-only input (tl::Ptr<const T>). Needs a
// GPU; without one it says so and exits 0.
//
//   device_memory [--rows R] [--cols N]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;
namespace tl = tilefuse::tl;

namespace {

// y = x * scale, with x read-only: const memory binds to `x`, never to `y`.
void scale_program(tl::Ptr<const tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::f32> scale, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 1024 + tl::arange<1024>();
  tl::store(y + i, tl::load(x + i, i < n) * scale, i < n);
}

#define CHECK_CUDA(call)                                                                    \
  do {                                                                                      \
    const cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "device_memory: %s failed: %s\n", #call, cudaGetErrorString(e)); \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  int rows = 1000, cols = 3000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cols")) cols = std::atoi(argv[i + 1]);
  }
  std::string why;
  if (!driver::available(&why)) {
    std::printf("device_memory: needs a GPU (%s); nothing to run\n", why.c_str());
    return 0;
  }
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const auto x = reference::random_vector<float>(n, 7);

  // The caller's memory and stream, from the CUDA runtime.
  float *x_dev = nullptr, *y_dev = nullptr, *z_dev = nullptr;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&x_dev), n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&y_dev), n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&z_dev), n * sizeof(float)));
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMemcpy(x_dev, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(y_dev, 0xff, n * sizeof(float)));  // poisoned: NaN until written

  // Views, not copies: the kernel reads and writes the caller's allocations on the caller's stream.
  DeviceView<float> xv(x_dev, n), yv(y_dev, n);
  kernels::softmax_auto(xv, yv, rows, cols, kernels::RowOptions{Backend::gpu, stream});
  Kernel<&scale_program> scale("scale", {.num_warps = 4, .param_names = {"x", "y", "scale", "n"}});
  scale.launch({{(static_cast<std::int64_t>(n) + 1023) / 1024}, Backend::gpu, stream}, DeviceView<const float>(yv),
               DeviceView<float>(z_dev, n), 2.0f, static_cast<std::int64_t>(n));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> y(n), z(n);
  CHECK_CUDA(cudaMemcpy(y.data(), y_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(z.data(), z_dev, n * sizeof(float), cudaMemcpyDeviceToHost));

  // The same call on DeviceBuffers.
  DeviceBuffer<float> xb(x), yb(n);
  yb.fill_bytes(0xff);
  kernels::softmax_auto(xb, yb, rows, cols, kernels::RowOptions{Backend::gpu});
  const std::vector<float> y_buffer = yb.download();

  const bool same_pointer = xv.device_ptr() == reinterpret_cast<std::uintptr_t>(x_dev) &&
                            yv.device_ptr() == reinterpret_cast<std::uintptr_t>(y_dev);
  const bool identical = std::memcmp(y.data(), y_buffer.data(), n * sizeof(float)) == 0;
  bool scaled = true;
  for (std::size_t i = 0; i < n; ++i) scaled = scaled && z[i] == 2.0f * y[i];
  const double err = reference::relative_error<float>(y, reference::softmax<float>(x, rows, cols));
  std::printf("device_memory: softmax %dx%d f32 on cudaMalloc memory and a caller's stream: relative error vs float64 %.2e, "
              "%s the DeviceBuffer result, pointers %s, read-only scale %s\n",
              rows, cols, err, identical ? "bit-identical to" : "DIFFERENT from", same_pointer ? "identical (no copy)" : "DIFFER",
              scaled ? "exact" : "WRONG");
  cudaFree(x_dev);
  cudaFree(y_dev);
  cudaFree(z_dev);
  cudaStreamDestroy(stream);
  return err < 1e-5 && identical && same_pointer && scaled ? 0 : 1;
}
