// Device tier, numerics at the edges: the interpreter tier's checks (tests/common/edge_rows.hpp) on the GPU.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/common/edge_rows.hpp"
#include "tests/common/gelu_check.hpp"
#include "tests/common/gpu.hpp"

namespace {

using namespace tilefuse;
using NumericsGpu = test::Gpu;

TEST_F(NumericsGpu, SoftmaxAtTheEdges) {
  for (int cols : {100, 1000, 20000, 100000}) {
    test::check_softmax_edges<float>(cols, Backend::gpu);
    test::check_softmax_edges<bfloat16>(cols, Backend::gpu);
    test::check_softmax_edges<half>(cols, Backend::gpu);
  }
}

TEST_F(NumericsGpu, LayerNormAtTheEdges) {
  for (int cols : {100, 1000, 20000, 100000}) {
    test::check_layernorm_edges<float>(cols, Backend::gpu);
    test::check_layernorm_edges<bfloat16>(cols, Backend::gpu);
    test::check_layernorm_edges<half>(cols, Backend::gpu);
  }
}

// The GPU's reciprocal and ex2 approximations add to the formula's own error (2e-7 in the interpreter).
TEST_F(NumericsGpu, GeluWithinItsBound) {
  const double worst = test::check_gelu(Backend::gpu, 1 << 20, 3e-7);
  std::printf("gelu: worst error %.3g max(1, |x|)\n", worst);
}

}  // namespace
