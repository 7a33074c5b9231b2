// Device tier, launches that overlap the one before (LaunchConfig::pdl): the split-row softmax and
// LayerNorm in many groups (each group's partials read their rows while the previous group's combine
// kernel ends), checked against float64, bit for bit against the same calls without overlap, and across
// calls that read what the call before wrote.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/gpu.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;
using kernels::RowVariant;

// The automatic split plan with groups of 1 MiB of rows: a launch pair per few rows, so that a call chains
// dozens of overlapping launches.
kernels::RowOptions small_groups(bool overlap) {
  kernels::RowOptions opt{Backend::gpu};
  opt.tuning.split_group_bytes = 1 << 20;
  opt.tuning.overlap_launches = overlap;
  return opt;
}

template <class H>
bool same_bits(const std::vector<H>& a, const std::vector<H>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(H)) == 0;
}

// softmax(x) -> y, then softmax(y) -> y in place in the next call (its first launch must see every row
// the first call wrote; each combine kernel writes the rows its partials read while the next group's
// partials read theirs), with overlapping launches; then both again without: the same bits, and both
// within tolerance of float64.
template <class H>
void check_softmax_chain(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("overlapped split softmax " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  const auto hx = reference::random_vector<H>(n, seed, 0.f, 3.f);
  DeviceBuffer<H> x(hx), y(n);
  std::vector<H> results[2][2];  // [overlap][call]
  for (bool overlap : {true, false}) {
    y.fill_bytes(0xff);
    kernels::softmax_auto(x, y, rows, cols, small_groups(overlap), RowVariant::split);
    results[overlap][0] = y.download();
    kernels::softmax_auto(y, y, rows, cols, small_groups(overlap), RowVariant::split);
    results[overlap][1] = y.download();
  }
  EXPECT_TRUE(same_bits(results[1][0], results[0][0])) << "the first call's output changes with overlapping launches";
  EXPECT_TRUE(same_bits(results[1][1], results[0][1])) << "the second call's output changes with overlapping launches";
  const auto ref_y = reference::softmax<H>(hx, rows, cols);
  const auto ref_z = reference::softmax<H>(results[1][0], rows, cols);
  EXPECT_LE(reference::worst_element<H>(results[1][0], ref_y, 1e-7, 4 * reference::tolerance<H>()), 1.0);
  EXPECT_LE(reference::worst_element<H>(results[1][1], ref_z, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

TEST_F(Gpu, OverlappedSplitSoftmaxKeepsEveryRow) {
  check_softmax_chain<float>(64, 65536);       // rows of whole vectors, 4 rows a group
  check_softmax_chain<float>(48, 65537);       // rows through aligned windows
  check_softmax_chain<bfloat16>(96, 131075);   // halves, windows
  check_softmax_chain<half>(33, 262144);       // a last group of one row
}

// LayerNorm(x) -> y, then LayerNorm(y) -> z in the next call, with and without overlapping launches: the
// same bits (y, z, mean and rstd), and the second call within tolerance of float64.
template <class H>
void check_layernorm_chain(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("overlapped split layernorm " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  const auto hx = reference::random_vector<H>(n, seed, 0.f, 1.f);
  const auto hw = reference::random_vector<H>(cols, seed + 1);
  const auto hb = reference::random_vector<H>(cols, seed + 2);
  DeviceBuffer<H> x(hx), w(hw), b(hb), y(n), z(n);
  std::vector<H> ys[2], out[2];
  std::vector<float> means[2], rstds[2];
  for (bool overlap : {true, false}) {
    kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
    y.fill_bytes(0xff);
    z.fill_bytes(0xff);
    stats.mean.fill_bytes(0xff);
    stats.rstd.fill_bytes(0xff);
    kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, small_groups(overlap), RowVariant::split);
    kernels::layernorm_auto(y, w, b, z, stats, rows, cols, 1e-5f, small_groups(overlap), RowVariant::split);
    ys[overlap] = y.download();
    out[overlap] = z.download();
    means[overlap] = stats.mean.download();
    rstds[overlap] = stats.rstd.download();
  }
  EXPECT_TRUE(same_bits(ys[1], ys[0])) << "the first call's y changes with overlapping launches";
  EXPECT_TRUE(same_bits(out[1], out[0])) << "the second call's y changes with overlapping launches";
  EXPECT_TRUE(same_bits(means[1], means[0])) << "the means change with overlapping launches";
  EXPECT_TRUE(same_bits(rstds[1], rstds[0])) << "rstd changes with overlapping launches";
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(ys[1], hw, hb, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::worst_element<H>(out[1], ref, 4 * tol, 4 * tol), 1.0);
  EXPECT_LE(reference::worst_element<float>(means[1], mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(rstds[1], rstd_ref), 1e-4);
}

TEST_F(Gpu, OverlappedSplitLayerNormKeepsEveryRow) {
  check_layernorm_chain<float>(64, 65536);
  check_layernorm_chain<float>(40, 70001);
  check_layernorm_chain<bfloat16>(96, 131075);
  check_layernorm_chain<half>(33, 262144);
}

// LayerNorm rows through windows with w and b read from shifted copies (a launch before the row kernel,
// which overlaps it) and element by element: the same bits, float64's values; then a second call with
// other w and b on the same stream, which rewrites the copies the first call's kernel read.
template <class H>
void check_shifted_affine(std::int64_t rows, std::int64_t cols, RowVariant variant, const kernels::Tuning& base = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("layernorm shifted w and b ") + kernels::variant_name(variant) + " " + std::to_string(rows) + "x" +
               std::to_string(cols) + " seed " + std::to_string(seed) + " looped_cluster " + std::to_string(base.looped_cluster.value_or(1)));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  const auto hx = reference::random_vector<H>(n, seed);
  const auto hw = reference::random_vector<H>(cols, seed + 1);
  const auto hb = reference::random_vector<H>(cols, seed + 2);
  const auto hw2 = reference::random_vector<H>(cols, seed + 3);
  const auto hb2 = reference::random_vector<H>(cols, seed + 4);
  DeviceBuffer<H> x(hx), w(hw), b(hb), w2(hw2), b2(hb2), y(n), y2(n);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
  std::vector<H> out[2];
  for (bool shifted : {false, true}) {
    kernels::RowOptions opt{Backend::gpu};
    opt.tuning = base;
    opt.tuning.shift_affine = shifted;
    y.fill_bytes(0xff);
    y2.fill_bytes(0xff);
    kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, opt, variant);
    kernels::layernorm_auto(x, w2, b2, y2, stats, rows, cols, 1e-5f, opt, variant);
    out[shifted] = y.download();
    if (shifted) {
      const auto ref2 = reference::layernorm<H>(hx, hw2, hb2, rows, cols, 1e-5);
      const double tol = reference::tolerance<H>();
      EXPECT_LE(reference::worst_element<H>(y2.download(), ref2, 4 * tol, 4 * tol), 1.0) << "the second call's w and b";
    }
  }
  EXPECT_TRUE(same_bits(out[1], out[0])) << "y changes with w and b read from shifted copies";
  const auto ref = reference::layernorm<H>(hx, hw, hb, rows, cols, 1e-5);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::worst_element<H>(out[1], ref, 4 * tol, 4 * tol), 1.0);
}

TEST_F(Gpu, ShiftedCopiesOfWAndBGiveTheSameBits) {
  check_shifted_affine<bfloat16>(300, 3597, RowVariant::one_program);
  check_shifted_affine<float>(200, 7375, RowVariant::one_program);
  check_shifted_affine<half>(77, 9001, RowVariant::one_program);  // pieces past the strided kernel's widest
  check_shifted_affine<bfloat16>(300, 20853, RowVariant::looped);
  check_shifted_affine<float>(130, 18179, RowVariant::looped);
  kernels::Tuning cluster;
  cluster.looped_cluster = 4;
  check_shifted_affine<bfloat16>(300, 20853, RowVariant::looped, cluster);  // rows shared by clusters of 4
  check_shifted_affine<half>(300, 75541, RowVariant::staged);     // a cluster of stages per row
  check_shifted_affine<bfloat16>(260, 129309, RowVariant::staged);
  check_shifted_affine<half>(300, 9001, RowVariant::staged);      // one stage per row
}

}  // namespace
