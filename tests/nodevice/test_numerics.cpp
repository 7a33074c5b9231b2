// Numerics at the edges in the interpreter: softmax and LayerNorm on rows with NaN, infinities, only
// -inf, a constant, huge and tiny magnitudes, in every dtype and at a width for each variant family (the
// GPU tier runs the same checks: tests/device/test_numerics.cpp); tl::gelu against float64 within its bound.
#include <gtest/gtest.h>

#include "tests/common/edge_rows.hpp"
#include "tests/common/gelu_check.hpp"

using namespace tilefuse;

TEST(Numerics, SoftmaxAtTheEdges) {
  for (int cols : {100, 1000, 20000}) {
    test::check_softmax_edges<float>(cols, Backend::interpreter);
    test::check_softmax_edges<bfloat16>(cols, Backend::interpreter);
    test::check_softmax_edges<half>(cols, Backend::interpreter);
  }
}

TEST(Numerics, LayerNormAtTheEdges) {
  for (int cols : {100, 1000, 20000}) {
    test::check_layernorm_edges<float>(cols, Backend::interpreter);
    test::check_layernorm_edges<bfloat16>(cols, Backend::interpreter);
    test::check_layernorm_edges<half>(cols, Backend::interpreter);
  }
}

TEST(Numerics, GeluWithinItsBound) {
  const double worst = test::check_gelu(Backend::interpreter, 200001, 2e-7);
  RecordProperty("worst_error", std::to_string(worst));
}

TEST(Numerics, ZeroColumnsIsANamedError) {
  std::vector<float> x(4), y(4);
  try {
    kernels::softmax_auto(x, y, 4, 0, kernels::RowOptions{Backend::interpreter});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected rows >= 1 and cols >= 1, got rows = 4, cols = 0"), std::string::npos) << e.what();
  }
}
