// Fused and unfused softmax in the interpreter against float64 at every width the issue names, ragged
// masks included, for f32, f16 and bf16; the row limit is a clear error.
#include <gtest/gtest.h>

#include <random>

#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;

namespace {

template <class H>
void check(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, 0.f, 3.f);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf(""))), y2 = y;
  kernels::softmax(x, y, rows, cols, {Backend::interpreter});
  kernels::UnfusedScratch<std::vector<H>> s{std::vector<H>(rows), std::vector<H>(x.size()), std::vector<H>(x.size()),
                                            std::vector<H>(rows)};
  kernels::softmax_unfused(x, y2, s, rows, cols, {Backend::interpreter});
  const auto ref = reference::softmax<H>(x, rows, cols);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(y, ref), tol);
  EXPECT_LE(reference::worst_element<H>(y, ref, 1e-7, 4 * tol), 1.0);
  EXPECT_LE(reference::relative_error<H>(y2, ref), 4 * tol);
}

const std::int64_t kWidths[] = {1, 7, 128, 1000, 3000, 4096, 16384};

}  // namespace

TEST(SoftmaxInterp, F32) {
  for (auto c : kWidths) check<float>(c >= 4096 ? 3 : 9, c);
}
TEST(SoftmaxInterp, F16) {
  for (auto c : kWidths) check<half>(c >= 4096 ? 2 : 5, c);
}
TEST(SoftmaxInterp, Bf16) {
  for (auto c : kWidths) check<bfloat16>(c >= 4096 ? 2 : 5, c);
}

TEST(SoftmaxInterp, RowsSumToOne) {
  const std::int64_t rows = 4, cols = 999;
  auto x = reference::random_vector<float>(rows * cols, 3, 0.f, 10.f);
  std::vector<float> y(x.size());
  kernels::softmax(x, y, rows, cols, {Backend::interpreter});
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += y[r * cols + c];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(SoftmaxInterp, WideRowsAreAClearError) {
  const std::int64_t cols = kernels::kSoftmaxMaxCols + 1;
  std::vector<float> x(cols), y(cols);
  try {
    kernels::softmax(x, y, 1, cols, {Backend::interpreter});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row limit of " + std::to_string(kernels::kSoftmaxMaxCols)), std::string::npos) << e.what();
  }
}

TEST(SoftmaxInterp, SmallBuffersAreAClearError) {
  std::vector<float> x(100), y(99);
  try {
    kernels::softmax(x, y, 10, 10, {Backend::interpreter});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument out holds 99 elements, expected at least rows x cols = 100"),
              std::string::npos) << e.what();
  }
}

// Every entry of the variant table in the interpreter, at a width past one program where it allows (the
// split-row variant with its scratch): a new variant is tested by being listed.
TEST(SoftmaxInterp, EveryVariantOfTheTable) {
  const std::int64_t rows = 2;
  for (const auto& v : kernels::softmax_variants()) {
    const std::int64_t widest = v.max_cols;
    const std::int64_t cols = widest == 0 ? 20000 : std::min<std::int64_t>(widest, 20000);
    SCOPED_TRACE(std::string(v.entry) + " at " + std::to_string(cols) + " columns");
    auto x = reference::random_vector<float>(static_cast<std::size_t>(rows * cols), 11, 0.f, 3.f);
    std::vector<float> y(x.size(), std::nanf(""));
    if (v.needs_scratch) {
      kernels::SplitScratch<std::vector<float>> scratch{std::vector<float>(rows * 3), std::vector<float>(rows * 3)};
      kernels::softmax_split(x, y, scratch, rows, cols, 3, {Backend::interpreter});
    } else {
      kernels::softmax_auto(x, y, rows, cols, {Backend::interpreter}, v.variant);
    }
    EXPECT_LE(reference::relative_error<float>(y, reference::softmax<float>(x, rows, cols)), reference::tolerance<float>());
  }
}
