// The consumer's kernel: y[r, c] = x[r, c] / max_c |x[r, c]| with a 2D tile per program (rows by
// columns, ragged edges masked), run in the interpreter and checked against float64. Exit status 0 when
// it matches.
#include <cmath>
#include <cstdio>
#include <vector>

#include "dsl/tl.hpp"

namespace tl = tilefuse::tl;

// One program: 16 rows of up to 64 columns.
void scale_rows(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::i32> rows, tl::Scalar<tl::i32> cols) {
  const auto r = tl::program_id(0) * 16 + tl::arange<16>();
  const auto c = tl::arange<64>();
  const auto in = (r(tl::all, tl::none) < rows) & (c(tl::none, tl::all) < cols);
  const auto at = r(tl::all, tl::none) * cols + c(tl::none, tl::all);
  const auto v = tl::load(x + at, in);
  const auto peak = tl::max<1>(tl::abs(v));
  tl::store(y + at, v / peak(tl::all, tl::none), in);
}

int main() {
  const int rows = 37, cols = 50;
  std::vector<float> x(rows * cols), y(rows * cols, NAN);
  for (int i = 0; i < rows * cols; ++i) x[i] = std::sin(0.37f * i) * (1 + i % 7);
  tilefuse::Kernel<&scale_rows> k("scale_rows", {.num_warps = 4});
  k.launch({{(rows + 15) / 16}, tilefuse::Backend::interpreter}, x, y, rows, cols);
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double peak = 0;
    for (int c = 0; c < cols; ++c) peak = std::max(peak, std::abs(double(x[r * cols + c])));
    for (int c = 0; c < cols; ++c) worst = std::max(worst, std::abs(y[r * cols + c] - x[r * cols + c] / peak));
  }
  std::printf("scale_rows %dx%d in the interpreter: max error %.2e against float64\n", rows, cols, worst);
  return worst < 1e-6 ? 0 : 1;
}
