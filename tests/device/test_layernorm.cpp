// Device tier, LayerNorm and RMSNorm: every variant on the GPU against the interpreter and float64, on
// fresh random inputs with poisoned outputs, every element checked; large means; ragged widths.
#include <gtest/gtest.h>

#include <random>

#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "tests/common/gpu.hpp"
#include "tests/common/programs.hpp"

namespace {

using namespace tilefuse;
using test::Gpu;
using kernels::RowVariant;

// LayerNorm `variant` (split and cluster over `splits` programs per row) on the GPU and in the
// interpreter, against float64 and against each other; `mean` and `stddev` shape the random rows;
// `tuning` holds the knobs both runs take.
template <class H>
void check_layernorm(std::int64_t rows, std::int64_t cols, float mean = 0.f, RowVariant variant = RowVariant::one_program,
                     std::int64_t splits = 1, float stddev = 1.f, const kernels::Tuning& tuning = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("layernorm ") + kernels::variant_name(variant) + " splits " + std::to_string(splits) + " " +
               std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed) +
               (tuning.constant_cols ? (*tuning.constant_cols ? " width compiled in" : " width an argument") : "") +
               (tuning.rows_ahead ? (*tuning.rows_ahead ? " rows ahead" : " rows not ahead") : "") +
               (tuning.stride_stages.value_or(false) ? " strided stages" : "") +
               (tuning.looped_cluster ? " looped_cluster " + std::to_string(*tuning.looped_cluster) : ""));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed, mean, stddev);
  auto hw = reference::random_vector<H>(cols, seed + 1);
  auto hb = reference::random_vector<H>(cols, seed + 2);
  DeviceBuffer<H> x(hx), w(hw), b(hb), y(n);
  kernels::RowStats<DeviceBuffer<float>> stats{DeviceBuffer<float>(rows), DeviceBuffer<float>(rows)};
  y.fill_bytes(0xff);
  stats.mean.fill_bytes(0xff);
  stats.rstd.fill_bytes(0xff);
  std::vector<H> interp(n, reference::from_float<H>(std::nanf("")));
  kernels::RowStats<std::vector<float>> istats{std::vector<float>(rows), std::vector<float>(rows)};
  kernels::NormSplitScratch<DeviceBuffer<float>> scratch{DeviceBuffer<float>(rows * splits), DeviceBuffer<float>(rows * splits)};
  kernels::NormSplitScratch<std::vector<float>> iscratch{std::vector<float>(rows * splits), std::vector<float>(rows * splits)};
  const kernels::RowOptions gpu_opt{Backend::gpu, nullptr, tuning}, interp_opt{Backend::interpreter, nullptr, tuning};
  if (variant == RowVariant::split) {
    kernels::layernorm_split(x, w, b, y, stats, scratch, rows, cols, splits, 1e-5f, gpu_opt);
    kernels::layernorm_split(hx, hw, hb, interp, istats, iscratch, rows, cols, splits, 1e-5f, interp_opt);
  } else if (variant == RowVariant::cluster) {
    kernels::layernorm_cluster(x, w, b, y, stats, rows, cols, 1e-5f, gpu_opt, splits);
    kernels::layernorm_cluster(hx, hw, hb, interp, istats, rows, cols, 1e-5f, interp_opt, splits);
  } else {
    kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, gpu_opt, variant);
    kernels::layernorm_auto(hx, hw, hb, interp, istats, rows, cols, 1e-5f, interp_opt, variant);
  }
  const bool looped = test::layernorm_reads_twice(variant, rows, cols, sizeof(H), Backend::gpu);
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(hx, hw, hb, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  const double tol = reference::tolerance<H>();
  const auto gpu = y.download();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), tol);
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * tol, 4 * tol), 1.0);
  // the mean is near 0 for N(0, 1) rows: an absolute floor, as x[0] + mean(x - x[0]) rounds at |x[0]|
  EXPECT_LE(reference::worst_element<float>(stats.mean.download(), mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(stats.rstd.download(), rstd_ref), looped ? 1e-4 : 1e-5);
  std::vector<double> interp_d(n);
  for (std::size_t i = 0; i < n; ++i) interp_d[i] = reference::to_float(interp[i]);
  EXPECT_LE(reference::worst_element<H>(gpu, interp_d, 4 * tol, 4 * tol), 1.0);
}

template <class H>
void check_rmsnorm(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("rmsnorm " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  auto hx = reference::random_vector<H>(n, seed);
  auto hw = reference::random_vector<H>(cols, seed + 1);
  DeviceBuffer<H> x(hx), w(hw), y(n);
  y.fill_bytes(0xff);
  kernels::rmsnorm(x, w, y, rows, cols, 1e-6f, {Backend::gpu});
  const auto ref = reference::rmsnorm<H>(hx, hw, rows, cols, 1e-6);
  const auto gpu = y.download();
  EXPECT_LE(reference::relative_error<H>(gpu, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(gpu, ref, 4 * reference::tolerance<H>(), 4 * reference::tolerance<H>()), 1.0);
}

TEST_F(Gpu, LayerNormAllDtypesAndWidths) {
  for (std::int64_t cols : {1, 7, 128, 700, 768, 1000, 1001, 3000, 4096, 12288, 16384, 20001, 24576, 28001, 32768}) {
    check_layernorm<float>(37, cols);
    check_layernorm<half>(19, cols);
    check_layernorm<bfloat16>(19, cols);
  }
  check_layernorm<float>(20000, 64);  // 32 rows per program
}

// Narrow rows, several per program as one 2D tile (the last program's rows past the matrix masked off),
// at widths that are whole vectors and widths that are not (read through their aligned windows, w and b
// following each row's).
TEST_F(Gpu, LayerNormNarrowRowsSeveralPerProgram) {
  for (std::int64_t cols : {1, 8, 16, 40, 47, 64, 79, 128, 155, 249}) {
    check_layernorm<bfloat16>(10007, cols);
    check_layernorm<float>(3001, cols);
  }
  check_layernorm<float>(3001, 33, 1e4f);  // shifted by each row's first element
  check_layernorm<half>(100003, 47);
}

// The packed kernels both ways Tuning::constant_cols holds them: the width compiled in (one kernel per
// width, the tile's columns past it folded away; the rule) and the width an argument (one kernel for
// every width); staged, row by row and whole-vector rows, and the last program's rows past the matrix.
TEST_F(Gpu, LayerNormNarrowRowsWithTheirWidthCompiledIn) {
  for (const bool compiled_in : {true, false}) {
    kernels::Tuning constant;
    constant.constant_cols = compiled_in;
    for (std::int64_t cols : {1, 8, 16, 25, 47, 64, 65, 79, 151, 155, 249, 256}) {
      check_layernorm<bfloat16>(10007, cols, 0.f, RowVariant::one_program, 1, 1.f, constant);
      check_layernorm<half>(3001, cols, 0.f, RowVariant::one_program, 1, 1.f, constant);
    }
    for (std::int64_t cols : {5, 33, 100, 127})  // shifted by each row's first element
      check_layernorm<float>(3001, cols, 1e4f, RowVariant::one_program, 1, 1.f, constant);
  }
}

TEST_F(Gpu, ClusterLayerNormReadsOnce) {
  check_layernorm<bfloat16>(64, 12288, 0.f, RowVariant::cluster, 3);
  check_layernorm<float>(7, 20001, 0.f, RowVariant::cluster, 0);
  check_layernorm<float>(5, 20001, 1e4f, RowVariant::cluster, 3);
  check_layernorm<half>(4, 50000, 0.f, RowVariant::cluster, 0);
  check_layernorm<bfloat16>(8, 131072, 0.f, RowVariant::cluster, 0);
}

TEST_F(Gpu, SplitRowLayerNorm) {
  check_layernorm<float>(7, 20001, 0.f, RowVariant::split, 3);  // not a multiple of the split or the piece
  check_layernorm<float>(5, 9000, 0.f, RowVariant::split, 8);   // more splits than pieces
  check_layernorm<float>(4, 20000, 1e4f, RowVariant::split, 4);
  check_layernorm<bfloat16>(16, 131072, 0.f, RowVariant::split, 16);
  check_layernorm<half>(6, 12288, 0.f, RowVariant::split, 3);
}

// The split's second kernel with rows sharing w and b (Tuning::split_combine_rows): rows a vector apart
// through windows, neighbours for whole vectors, spare slots, a large mean.
TEST_F(Gpu, SplitLayerNormCombineRows) {
  kernels::Tuning four;
  four.split_combine_rows = 4;
  check_layernorm<half>(32, 9001, 0.f, RowVariant::split, 3, 1.f, four);
  check_layernorm<half>(35, 20001, 0.f, RowVariant::split, 5, 1.f, four);
  check_layernorm<bfloat16>(48, 40001, 3.f, RowVariant::split, 16, 1.f, four);
  check_layernorm<float>(8, 20000, 1e4f, RowVariant::split, 4, 1.f, four);
  check_layernorm<float>(16, 40001, 0.f, RowVariant::split, 6, 1.f, four);
}

// Rows whose width is not a whole number of 16-byte vectors, read through their aligned windows (w and b
// then off the window's alignment): every row starts at another offset into its vector.
TEST_F(Gpu, LayerNormRowsOfEveryAlignment) {
  for (std::int64_t cols : {3, 9, 33, 257, 1001, 3261, 16377}) {
    check_layernorm<bfloat16>(41, cols);
    check_layernorm<float>(23, cols);
  }
  check_layernorm<float>(7, 1001, 1e4f);  // the shift is the row's first element, not the window's
  for (std::int64_t cols : {5, 4099, 30001}) {
    check_layernorm<half>(9, cols, 0.f, RowVariant::looped);
    check_layernorm<float>(5, cols, 1e3f, RowVariant::looped);
  }
  check_layernorm<bfloat16>(5, 40001, 0.f, RowVariant::split, 7);
  check_layernorm<float>(3, 9, 0.f, RowVariant::split, 2);
}

// Half rows through windows of one tile or of several pieces, more rows than the GPU keeps programs: each
// program strides over rows that share a window's offset, w and b staged once (layernorm_strided_program);
// ragged counts of rows per program, every offset into a vector.
// Both ways: each row loaded as the program reaches it, or copied into a stage while the row before it
// is finished (Tuning::rows_ahead), with as many programs as their stages leave room for.
TEST_F(Gpu, LayerNormStridedProgramsShareWAndB) {
  for (bool ahead : {false, true}) {
    kernels::Tuning t;
    t.rows_ahead = ahead;
    check_layernorm<half>(7001, 2223, 0.f, RowVariant::one_program, 1, 1.f, t);
    check_layernorm<bfloat16>(4099, 3261, 0.f, RowVariant::one_program, 1, 1.f, t);
    check_layernorm<bfloat16>(1003, 5587, 3.f, RowVariant::one_program, 1, 1.f, t);
    check_layernorm<bfloat16>(3001, 3597, 0.f, RowVariant::one_program, 1, 1.f, t);  // one tile of 4096
    kernels::Tuning strided = t;  // a tile of 8192 strides only where tuned to (strided_window)
    strided.stride_rows = true;
    check_layernorm<half>(2003, 7375, 2.f, RowVariant::one_program, 1, 1.f, strided);  // one tile of 8192
    check_layernorm<half>(5, 7001, 0.f, RowVariant::one_program, 1, 1.f, t);  // fewer rows than programs, a wide window
  }
}

// Half rows through windows of one tile past 8 KB, one row a program: w and b from their shifted copies,
// written by a kernel just before (f16 tiles at kNormShiftedF16Resident threads an SM, bf16 at
// kNormPeeledResident); and the same rows below 256, which read w and b in place.
TEST_F(Gpu, LayerNormShiftedCopiesOfOneTile) {
  check_layernorm<half>(2003, 7375, 0.f);
  check_layernorm<bfloat16>(1001, 7307, 2.f);
  check_layernorm<half>(700, 15405, 0.f);
  check_layernorm<half>(97, 7375, 0.f);
}

// Programs (clusters) striding over rows through two stages in turn (Tuning::stride_stages), against
// float64 and the interpreter.
TEST_F(Gpu, LayerNormStridedStagedReadsOnce) {
  kernels::Tuning t;
  t.stride_stages = true;
  check_layernorm<float>(3001, 2049, 0.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<bfloat16>(201, 57481, 0.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<half>(64, 131072, 3.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<half>(7, 20001, 0.f, RowVariant::staged, 1, 1.f, t);
}

// Rows shared by clusters of 2 to 8 programs (Tuning::looped_cluster), the clusters striding over more
// rows than the L2 lets into flight at once: against float64 and the interpreter, through windows (w and b
// from shifted copies for the 300 half rows), at a large mean, few rows.
TEST_F(Gpu, LayerNormLoopedCluster) {
  for (int k : {2, 3, 8}) {
    kernels::Tuning t;
    t.looped_cluster = k;
    check_layernorm<float>(600, 9000, 0.f, RowVariant::looped, 1, 1.f, t);
    if (k == 2) check_layernorm<half>(300, 100001, 0.f, RowVariant::looped, 1, 1.f, t);  // the L2 lets 240 rows into flight
    check_layernorm<bfloat16>(40, 131075, 3.f, RowVariant::looped, 1, 1.f, t);
    check_layernorm<float>(3, 588615, 1e3f, RowVariant::looped, 1, 1.f, t);
  }
}

// Rows shared by resident groups of programs (Tuning::looped_groups: 1, the L2's count, or 3 and 40), the
// groups striding over rows in one cooperative launch: few wide rows, through windows (w and b read in
// place: the copies' kernel would need an overlapping launch), at a large mean.
TEST_F(Gpu, LayerNormLoopedGroups) {
  for (int k : {1, 3, 40}) {
    kernels::Tuning t;
    t.looped_groups = k;
    check_layernorm<float>(5, 855125, 0.f, RowVariant::looped, 1, 1.f, t);
    check_layernorm<half>(300, 100001, 0.f, RowVariant::looped, 1, 1.f, t);
    check_layernorm<bfloat16>(40, 131075, 3.f, RowVariant::looped, 1, 1.f, t);
    check_layernorm<float>(3, 588615, 1e3f, RowVariant::looped, 1, 1.f, t);
  }
}

// Few wide rows, as layernorm_auto takes them: split over the GPU with the library's workspace, in groups
// of rows that fit 80% of the L2 (13 rows of 2^20 f32: groups of 7 and 6 on an H200).
TEST_F(Gpu, LayerNormFewWideRowsSplitAutomatically) {
  check_layernorm<float>(5, 300001, 0.f, RowVariant::automatic);
  check_layernorm<float>(13, 1 << 20, 1e3f, RowVariant::automatic);
  check_layernorm<bfloat16>(3, 1 << 20, 0.f, RowVariant::automatic);
  check_layernorm<half>(100, 20001, 0.f, RowVariant::automatic);
}

TEST_F(Gpu, LayerNormLargeMeanTwoPass) { check_layernorm<float>(64, 4096, 1e4f); }
// Half rows are summed unshifted: at mean 1e4 they still match float64 on the rounded inputs.
TEST_F(Gpu, LayerNormHalvesAtALargeMean) {
  check_layernorm<half>(64, 4096, 1e4f, RowVariant::one_program, 1, 30.f);
  check_layernorm<bfloat16>(64, 8192, 1e4f, RowVariant::one_program, 1, 300.f);
  check_layernorm<half>(16, 3000, -1e4f, RowVariant::one_program, 1, 30.f);
}

TEST_F(Gpu, LayerNormLoopedWideRows) {
  for (std::int64_t cols : {1, 4096, 20000, 131072}) check_layernorm<float>(9, cols, 0.f, RowVariant::looped);
  check_layernorm<float>(8, 20000, 1e4f, RowVariant::looped);
  check_layernorm<bfloat16>(8, 65536, 0.f, RowVariant::looped);
}

// Half rows of 64-byte tiles that are not whole vectors go through a stage by default (StagedRows), as
// f32 rows do at every packed width; the last program's rows past the matrix.
TEST_F(Gpu, LayerNormStagedHalfRows) {
  for (std::int64_t cols : {1, 3, 17, 25, 31}) {
    check_layernorm<half>(100003, cols);
    check_layernorm<bfloat16>(4001, cols);
  }
}

TEST_F(Gpu, StagedLayerNormReadsOnce) {
  for (std::int64_t cols : {1, 7, 1000, 2048, 2049, 8192, 12288, 20000, 32768}) {
    check_layernorm<float>(13, cols, 0.f, RowVariant::staged);
    check_layernorm<half>(11, cols, 0.f, RowVariant::staged);
    check_layernorm<bfloat16>(64, cols, 0.f, RowVariant::staged);
  }
  check_layernorm<float>(8, 12288, 1e4f, RowVariant::staged);
}

// Clusters of 9 and 16 programs a row (Tuning::staged_cluster: Hopper's non-portable cluster sizes, stages
// up to 40960 columns): the sweep's widest half rows, rows through windows (w and b from shifted copies
// where there are enough rows), a large mean, f32 stages of 144 KB.
TEST_F(Gpu, LayerNormStagedClustersOfSixteen) {
  kernels::Tuning t;
  t.staged_cluster = 16;
  check_layernorm<half>(5, 588615, 0.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<bfloat16>(300, 100003, 0.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<float>(5, 20001, 1e3f, RowVariant::staged, 1, 1.f, t);
  t.staged_cluster = 9;
  check_layernorm<float>(7, 300001, 0.f, RowVariant::staged, 1, 1.f, t);
  check_layernorm<bfloat16>(3, 131072, 3.f, RowVariant::staged, 1, 1.f, t);
}

// Rows over resident groups, read once and two-pass: one cooperative launch per wave of rows; with
// Tuning::stride_stages, one launch whose groups stride over the rows through two stages in turn.
TEST_F(Gpu, ResidentLayerNormReadsOnce) {
  check_layernorm<float>(5, 855125, 0.f, RowVariant::resident);
  check_layernorm<bfloat16>(9, 1222495, 0.f, RowVariant::resident);
  check_layernorm<half>(700, 40001, 0.f, RowVariant::resident);
  check_layernorm<float>(7, 300001, 1e4f, RowVariant::resident);  // two-pass at a large mean
  kernels::Tuning t;
  t.stride_stages = true;
  check_layernorm<float>(5, 855125, 0.f, RowVariant::resident, 1, 1.f, t);
  check_layernorm<half>(242, 588615, 0.f, RowVariant::resident, 1, 1.f, t);
  check_layernorm<bfloat16>(700, 40001, 0.f, RowVariant::resident, 1, 1.f, t);
  check_layernorm<float>(7, 300001, 1e4f, RowVariant::resident, 1, 1.f, t);
}

// Every entry of the variant table that needs no scratch, at a width past one program where it allows.

TEST_F(Gpu, EveryLayerNormVariantOfTheTable) {
  for (const auto& v : kernels::layernorm_variants()) {
    if (v.needs_scratch) continue;
    const std::int64_t widest = v.max_cols;
    check_layernorm<float>(3, widest == 0 ? 40000 : std::min<std::int64_t>(widest, 40000), 0.f, v.variant, 0);
  }
}

TEST_F(Gpu, LayerNormAutomaticChoiceAtTheLimits) {
  // These few rows: the one-program kernel below 8192 columns, split over the GPU from 8192 on (with more
  // rows: one program up to 32768 columns, staged or looped past it). Both sides of each limit.
  for (std::int64_t cols : {1000, 16384, 16385, 32768, 32769, 70000}) {
    check_layernorm<float>(5, cols, 0.f, RowVariant::automatic);
    check_layernorm<half>(3, cols, 0.f, RowVariant::automatic);
  }
}

TEST_F(Gpu, RmsNormAllDtypes) {
  for (std::int64_t cols : {1, 100, 1024, 4096, 12288}) {
    check_rmsnorm<float>(33, cols);
    check_rmsnorm<half>(33, cols);
    check_rmsnorm<bfloat16>(33, cols);
  }
}

}  // namespace
