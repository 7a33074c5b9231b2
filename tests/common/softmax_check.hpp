// The interpreter tier's softmax check: a variant on fresh random rows against float64 (relative error,
// and every element within bounds).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::test {

/// Softmax `variant` (the staged one over `splits` programs per row; 0: its choice) of rows x cols in the
/// interpreter against float64, with `tuning`.
template <class H>
void check_softmax_interpreter(std::int64_t rows, std::int64_t cols, kernels::RowVariant variant, std::int64_t splits = 0,
                               const kernels::Tuning& tuning = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("softmax ") + kernels::variant_name(variant) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
               " splits " + std::to_string(splits) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, 0.f, 3.f);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning = tuning;
  if (variant == kernels::RowVariant::staged) kernels::softmax_staged(x, y, rows, cols, opt, splits);
  else kernels::softmax_auto(x, y, rows, cols, opt, variant);
  const auto ref = reference::softmax<H>(x, rows, cols);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(y, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

}  // namespace tilefuse::test
