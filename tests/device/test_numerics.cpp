// Device tier, numerics at the edges: the interpreter tier's checks (tests/common/edge_rows.hpp) on the GPU.
#include <gtest/gtest.h>

#include "tests/common/edge_rows.hpp"
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

}  // namespace
