// tilefuse kernels on PyTorch tensors (LibTorch, C++), without a copy: the input through DLPack
// (at::toDLPack, checked by tilefuse::dlpack_view), the output through at::Tensor's data pointer, and
// PyTorch's current CUDA stream. Built only when CMake finds Torch (point CMAKE_PREFIX_PATH at
// torch.utils.cmake_prefix_path); the result must be bit-identical to the same call on DeviceBuffers and
// match torch::softmax. Needs a GPU; without one it says so and exits 0.
//
//   torch_tensors [--rows R] [--cols N]
#include <ATen/DLConvertor.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "backend/driver/driver.hpp"
#include "dsl/tl.hpp"
#include "backend/runtime/dlpack.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;
namespace tl = tilefuse::tl;

namespace {

// y = x * 2 in bf16, x read-only.
void twice_program(tl::Ptr<const tl::bf16> x, tl::Ptr<tl::bf16> y, tl::Scalar<tl::i32> n) {
  auto i = tl::program_id(0) * 1024 + tl::arange<1024>();
  tl::store(y + i, tl::cast<tl::bf16>(tl::cast<tl::f32>(tl::load(x + i, i < n)) * 2.0f), i < n);
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 1024, cols = 3000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cols")) cols = std::atoi(argv[i + 1]);
  }
  std::string why;
  if (!driver::available(&why) || !torch::cuda::is_available()) {
    std::printf("torch_tensors: needs a GPU (%s); nothing to run\n", why.empty() ? "PyTorch sees none" : why.c_str());
    return 0;
  }
  torch::manual_seed(0);
  const auto opts = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::Tensor x = torch::randn({rows, cols}, opts);
  torch::Tensor y = torch::full({rows, cols}, std::nan(""), opts);  // poisoned

  // The input through DLPack (checked: CUDA, bf16, contiguous), the output through its data pointer.
  DLManagedTensor* exported = at::toDLPack(x);
  const DeviceView<const bfloat16> x_view = dlpack_view<const bfloat16>(exported);
  DeviceView<bfloat16> y_view(static_cast<bfloat16*>(y.data_ptr()), static_cast<std::size_t>(y.numel()));
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  // The sample kernels take one buffer type for input and output: a writable view of the same memory.
  DeviceView<bfloat16> x_rw(static_cast<bfloat16*>(x.data_ptr()), static_cast<std::size_t>(x.numel()));
  kernels::softmax_auto(x_rw, y_view, rows, cols, kernels::RowOptions{Backend::gpu, stream});
  torch::Tensor z = torch::empty_like(y);
  Kernel<&twice_program> twice("twice_bf16", {.num_warps = 4});
  twice.launch({{(x.numel() + 1023) / 1024}, Backend::gpu, stream}, DeviceView<const bfloat16>(y_view),
               DeviceView<bfloat16>(static_cast<bfloat16*>(z.data_ptr()), z.numel()), x.numel());
  torch::cuda::synchronize();

  // The same call on DeviceBuffers, from the same bytes.
  const torch::Tensor x_host = x.cpu();
  std::vector<bfloat16> host(x.numel());
  std::memcpy(host.data(), x_host.data_ptr(), host.size() * sizeof(bfloat16));
  DeviceBuffer<bfloat16> xb(host), yb(host.size());
  kernels::softmax_auto(xb, yb, rows, cols, kernels::RowOptions{Backend::gpu});
  const std::vector<bfloat16> y_buffer = yb.download();
  const torch::Tensor y_host = y.cpu();

  const bool same_pointer = x_view.device_ptr() == reinterpret_cast<std::uintptr_t>(x.data_ptr()) &&
                            y_view.device_ptr() == reinterpret_cast<std::uintptr_t>(y.data_ptr());
  const bool identical = std::memcmp(y_host.data_ptr(), y_buffer.data(), y_buffer.size() * sizeof(bfloat16)) == 0;
  const double err = (y.to(torch::kFloat64) - torch::softmax(x.to(torch::kFloat64), 1)).abs().max().item<double>();
  const bool doubled = torch::equal(z, (y.to(torch::kFloat32) * 2).to(torch::kBFloat16));
  exported->deleter(exported);
  std::printf("torch_tensors: softmax %dx%d bf16 on PyTorch tensors and PyTorch's stream: max abs error vs float64 %.2e, "
              "%s the DeviceBuffer result, pointers %s, read-only DLPack input %s\n",
              rows, cols, err, identical ? "bit-identical to" : "DIFFERENT from", same_pointer ? "identical (no copy)" : "DIFFER",
              doubled ? "exact" : "WRONG");
  return err < 8e-3 && identical && same_pointer && doubled ? 0 : 1;
}
