// LayerNorm (two-pass) and RMSNorm in the interpreter against float64, every dtype, ragged widths; the
// two-pass variance survives a mean of 1e4 where the one-pass E[x^2] - E[x]^2 visibly fails; every
// normalization kernel compiles for sm_90 with no spills.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/layernorm/wide_programs.hpp"
#include "kernels/reference.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;
using test::occurrences;

namespace {

using kernels::RowVariant;

// LayerNorm `variant` (split and cluster over `splits` programs per row) in the interpreter against
// float64; `mean` and `stddev` shape the random rows.
template <class H>
void check_layernorm(std::int64_t rows, std::int64_t cols, float mean = 0.f, float stddev = 1.f,
                     RowVariant variant = RowVariant::one_program, std::int64_t splits = 1, const kernels::Tuning& tuning = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("layernorm ") + kernels::variant_name(variant) + " splits " + std::to_string(splits) + " " +
               std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(rows * cols, seed, mean, stddev);
  auto w = reference::random_vector<H>(cols, seed + 1);
  auto b = reference::random_vector<H>(cols, seed + 2);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows, std::nanf("")), std::vector<float>(rows, std::nanf(""))};
  kernels::NormSplitScratch<std::vector<float>> scratch{std::vector<float>(rows * splits, std::nanf("")),
                                                        std::vector<float>(rows * splits, std::nanf(""))};
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning = tuning;
  if (variant == RowVariant::split) kernels::layernorm_split(x, w, b, y, stats, scratch, rows, cols, splits, 1e-5f, opt);
  else if (variant == RowVariant::cluster) kernels::layernorm_cluster(x, w, b, y, stats, rows, cols, 1e-5f, opt, splits);
  else kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, opt, variant);
  const bool looped = test::layernorm_reads_twice(variant, rows, cols, sizeof(H), Backend::interpreter);  // (cluster and staged are two-pass)
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(x, w, b, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(y, ref), tol);
  EXPECT_LE(reference::worst_element<H>(y, ref, 4 * tol, 4 * tol), 1.0);
  // the mean is near 0 for N(0, 1) rows: an absolute floor, as x[0] + mean(x - x[0]) rounds at |x[0]|
  EXPECT_LE(reference::worst_element<float>(stats.mean, mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(stats.rstd, rstd_ref), looped ? 1e-4 : 1e-5);
}

template <class H>
void check_rmsnorm(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("rmsnorm " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(rows * cols, seed);
  auto w = reference::random_vector<H>(cols, seed + 1);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::rmsnorm(x, w, y, rows, cols, 1e-6f, {Backend::interpreter});
  const auto ref = reference::rmsnorm<H>(x, w, rows, cols, 1e-6);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
}

// 700 and 3000: three pieces with a ragged last one; 768 and 12288: three whole pieces.
const std::int64_t kWidths[] = {1, 7, 128, 700, 768, 1000, 3000, 4096, 12288};

}  // namespace

TEST(LayerNormInterp, F32) {
  for (auto c : kWidths) check_layernorm<float>(c >= 4096 ? 2 : 5, c);
}
TEST(LayerNormInterp, F16) {
  for (auto c : kWidths) check_layernorm<half>(2, c);
}
TEST(LayerNormInterp, Bf16) {
  for (auto c : kWidths) check_layernorm<bfloat16>(2, c);
}

// Half rows are summed unshifted: at |mean| = 1e4 the inputs' own spacing (8 in f16, 64 in bf16) is far
// above what the f32 sums lose, so the result still matches float64 on the rounded inputs.
TEST(LayerNormInterp, HalvesNeedNoShiftAtALargeMean) {
  check_layernorm<half>(4, 4096, 1e4f, 30.f);
  check_layernorm<bfloat16>(4, 4096, 1e4f, 300.f);
  check_layernorm<half>(4, 3000, -1e4f, 30.f);
}

TEST(LayerNormInterp, TwoPassSurvivesALargeMeanWhereOnePassFails) {
  const std::int64_t rows = 8, cols = 4096;
  auto x = reference::random_vector<float>(rows * cols, 11, 1e4f, 1.f);
  std::vector<float> w(cols, 1.f), b(cols, 0.f), y(x.size()), y1(x.size());
  kernels::RowStats<std::vector<float>> s{std::vector<float>(rows), std::vector<float>(rows)},
      s1{std::vector<float>(rows), std::vector<float>(rows)};
  kernels::layernorm(x, w, b, y, s, rows, cols, 1e-5f, {Backend::interpreter});
  kernels::layernorm(x, w, b, y1, s1, rows, cols, 1e-5f, {Backend::interpreter}, /*one_pass=*/true);
  const auto ref = reference::layernorm<float>(x, w, b, rows, cols, 1e-5);
  const double two_pass = reference::relative_error<float>(y, ref);
  const double one_pass = reference::relative_error<float>(y1, ref);
  EXPECT_LE(two_pass, 1e-5);  // shifted two-pass: as good as at mean 0
  EXPECT_GE(one_pass, 0.1) << "the one-pass formula should lose the variance at mean 1e4";
}

TEST(RmsNormInterp, AllDtypes) {
  for (auto c : {1, 100, 4096}) {
    check_rmsnorm<float>(3, c);
    check_rmsnorm<half>(3, c);
    check_rmsnorm<bfloat16>(3, c);
  }
}

TEST(LayerNormInterp, WideRowsAndSmallBuffersAreClearErrors) {
  const std::int64_t cols = kernels::kNormMaxCols + 1;
  std::vector<float> x(cols), w(cols), b(cols), y(cols);
  kernels::RowStats<std::vector<float>> s{std::vector<float>(1), std::vector<float>(1)};
  try {
    kernels::layernorm(x, w, b, y, s, 1, cols, 1e-5f, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row limit of " + std::to_string(kernels::kNormMaxCols)), std::string::npos) << e.what();
  }
  std::vector<float> short_w(10);
  try {
    kernels::layernorm(x, short_w, b, y, s, 1, 100, 1e-5f, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument w holds 10 elements, expected at least 100"), std::string::npos) << e.what();
  }
}

namespace {
void compile_all_norms(ir::DType dtype) {
  for (std::int64_t block = 1; block <= kernels::kNormMaxCols; block *= 2) {
    std::vector<const Program*> programs{&test::layernorm_program(dtype, block)};
    if (block <= kernels::kRmsNormMaxCols) programs.push_back(kernels::rmsnorm_programs(dtype, block, test::kInterpreter).at(0));
    for (const Program* p : programs) {
      const auto info = p->compile(p->default_specialization(), "sm_90");
      EXPECT_EQ(info.spill_bytes, 0) << p->name() << "\n" << info.ptxas_log;
      EXPECT_EQ(info.stack_bytes, 0) << p->name() << "\n" << info.ptxas_log;
    }
  }
}
}  // namespace

TEST(NormNvrtc, RaggedRowsKeepOnePredicatePerRun) {
  // bf16 rows of 12288 in a 16384 tile (the bench's 4096x12288): with one predicate per 8-element run the
  // kernel fits two 512-thread programs per SM (64 registers); with one mask register per element it took
  // 108 and ran at half the speed (bench/NOTES.md). A register count above 64 is that regression.
  const auto& p = test::layernorm_program(ir::DType::bf16, 16384);
  // x, w, b, y, mean, rstd (16-byte aligned), stride, n and tail = 12288, eps
  const int d = integer_divisibility(12288);
  const auto info = p.compile(Specialization{{16, 16, 16, 16, 16, 16, d, d, d, 1}}, "sm_90");
  EXPECT_LE(info.registers, 64) << info.ptxas_log;
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(NormNvrtc, RowsOfThreeQuarterTilesTakeThreeWholePieces) {
  // layernorm() holds a 12288-column row as 3 x 4096 (a 16384 tile would mask a quarter of every thread's
  // elements): with n a multiple of 4096 the last piece is whole too, and no mask or select is left.
  EXPECT_EQ(test::layernorm_program(ir::DType::bf16, 12288).name(), "layernorm_4096x3");
  EXPECT_EQ(test::layernorm_program(ir::DType::bf16, 16384).name(), "layernorm_16384");
  EXPECT_EQ(test::layernorm_program(ir::DType::f32, 700).name(), "layernorm_256x3");
  const auto& p = test::layernorm_program(ir::DType::bf16, 12288);
  const int d = integer_divisibility(12288);
  const Specialization spec{{16, 16, 16, 16, 16, 16, d, d, integer_divisibility(4096), 1}};
  const std::string src = p.cuda_source(spec);
  const std::string body = src.substr(src.find("__global__"));
  EXPECT_EQ(occurrences(body, " ? "), 0u) << src;  // no select, no masked load
  EXPECT_EQ(occurrences(body, "if (v"), 0u) << src;
  // 256 threads of 48 elements each; at most 80 registers keeps three rows per SM.
  EXPECT_EQ(p.num_warps(), 8);
  const auto info = p.compile(spec, "sm_90");
  EXPECT_LE(info.registers, 80) << info.ptxas_log;
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

// A row of one piece launches as every other row kernel does (a 64-column f32 row: one packed warp of 16
// per thread, as the softmax has); three pieces of 256 f32 take two warps of 4 per piece.
TEST(NormNvrtc, OnePieceRowsLaunchAsRowKernelsDo) {
  EXPECT_EQ(test::layernorm_program(ir::DType::f32, 64).num_warps(), test::softmax_program(ir::DType::f32, 64).num_warps());
  EXPECT_EQ(test::layernorm_program(ir::DType::f32, 64).num_warps(), 1);
  EXPECT_EQ(test::layernorm_program(ir::DType::bf16, 8192).num_warps(), 8);
  EXPECT_EQ(test::layernorm_program(ir::DType::f32, 768).num_warps(), 2);
}

TEST(NormNvrtc, CompileWithoutSpillsF32) { compile_all_norms(ir::DType::f32); }
TEST(NormNvrtc, CompileWithoutSpillsF16) { compile_all_norms(ir::DType::f16); }
TEST(NormNvrtc, CompileWithoutSpillsBf16) { compile_all_norms(ir::DType::bf16); }

namespace {
// LayerNorm `variant` on rows read through windows with w and b from their shifted copies and element by
// element (Tuning::shift_affine true and false): the same bits (the same values meet the same
// arithmetic), and float64's values. Rows of an odd width start at every offset from their windows.
template <class H>
void check_shifted_affine(std::int64_t rows, std::int64_t cols, RowVariant variant, const kernels::Tuning& base = {}) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("layernorm shifted w and b ") + kernels::variant_name(variant) + " " + std::to_string(rows) + "x" +
               std::to_string(cols) + " seed " + std::to_string(seed) + " looped_cluster " + std::to_string(base.looped_cluster.value_or(1)));
  auto x = reference::random_vector<H>(rows * cols, seed);
  auto w = reference::random_vector<H>(cols, seed + 1);
  auto b = reference::random_vector<H>(cols, seed + 2);
  std::vector<H> y[2];
  std::vector<float> mean[2], rstd[2];
  for (bool shifted : {false, true}) {
    y[shifted].assign(x.size(), reference::from_float<H>(std::nanf("")));
    kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows, std::nanf("")), std::vector<float>(rows, std::nanf(""))};
    kernels::RowOptions opt{Backend::interpreter};
    opt.tuning = base;
    opt.tuning.shift_affine = shifted;
    kernels::layernorm_auto(x, w, b, y[shifted], stats, rows, cols, 1e-5f, opt, variant);
    mean[shifted] = stats.mean;
    rstd[shifted] = stats.rstd;
  }
  EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(H)), 0);
  EXPECT_EQ(std::memcmp(mean[0].data(), mean[1].data(), mean[0].size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(rstd[0].data(), rstd[1].data(), rstd[0].size() * sizeof(float)), 0);
  const auto ref = reference::layernorm<H>(x, w, b, rows, cols, 1e-5);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::worst_element<H>(y[1], ref, 4 * tol, 4 * tol), 1.0);
}
}  // namespace

TEST(LayerNormInterp, ShiftedCopiesOfWAndBGiveTheSameBits) {
  check_shifted_affine<float>(37, 1001, RowVariant::one_program);      // a window of one 1024 tile
  check_shifted_affine<half>(37, 1031, RowVariant::one_program);       // one 2048 tile (not strided)
  check_shifted_affine<bfloat16>(37, 9001, RowVariant::one_program);   // pieces past the strided kernel's widest
  check_shifted_affine<float>(37, 5003, RowVariant::looped);
  check_shifted_affine<bfloat16>(37, 20001, RowVariant::looped);
  check_shifted_affine<half>(5, 40001, RowVariant::staged);   // chunks over a cluster, each from its own head's copy
  check_shifted_affine<bfloat16>(3, 9001, RowVariant::staged);  // one program per row
}

TEST(LayerNormInterp, LoopedAnyWidth) {
  for (std::int64_t cols : {1, 7, 4096, 5000, 20000}) check_layernorm<float>(3, cols, 0.f, 1.f, RowVariant::looped);
  check_layernorm<float>(2, 20000, 1e4f, 1.f, RowVariant::looped);  // large mean: the shift keeps the variance
  for (std::int64_t cols : {1000, 16384, 16385, 32768, 32769}) check_layernorm<float>(2, cols, 0.f, 1.f, RowVariant::automatic);
  check_layernorm<bfloat16>(2, 65536, 0.f, 1.f, RowVariant::looped);
  check_layernorm<half>(2, 12288, 0.f, 1.f, RowVariant::looped);
}

// Rows shared by clusters of 2, 3 and 8 programs (Tuning::looped_cluster), the clusters striding over
// rows (two of them in the interpreter): chunks ragged or empty, rows through windows, a large mean (each
// chunk shifts by the row's first element), w and b from their shifted copies.
TEST(LayerNormInterp, LoopedClusterMatchesFloat64) {
  for (int k : {2, 3, 8}) {
    kernels::Tuning t;
    t.looped_cluster = k;
    for (std::int64_t rows : {1, 2, 5}) check_layernorm<float>(rows, 9000, 0.f, 1.f, RowVariant::looped, 1, t);
    check_layernorm<float>(3, 7, 0.f, 1.f, RowVariant::looped, 1, t);  // every program but the first idle
    check_layernorm<float>(3, 20000, 1e4f, 1.f, RowVariant::looped, 1, t);
    check_layernorm<half>(3, 12289, 0.f, 1.f, RowVariant::looped, 1, t);  // through windows
    check_shifted_affine<bfloat16>(37, 20001, RowVariant::looped, t);
  }
}

// Rows shared by resident groups of 2, 3 and 5 programs (Tuning::looped_groups; 1: the L2's count, 2 in
// the interpreter): chunks ragged or empty, rows through windows (w and b read in place, no copies), a
// large mean.
TEST(LayerNormInterp, LoopedGroupsMatchFloat64) {
  for (int k : {1, 2, 3, 5}) {
    kernels::Tuning t;
    t.looped_groups = k;
    for (std::int64_t rows : {1, 2, 5}) check_layernorm<float>(rows, 9000, 0.f, 1.f, RowVariant::looped, 1, t);
    check_layernorm<float>(3, 7, 0.f, 1.f, RowVariant::looped, 1, t);  // every program but the first idle
    check_layernorm<float>(3, 20000, 1e4f, 1.f, RowVariant::looped, 1, t);
    check_layernorm<half>(3, 12289, 0.f, 1.f, RowVariant::looped, 1, t);  // through windows
  }
  kernels::RowOptions opt = test::kInterpreter;
  opt.tuning.looped_groups = 3;
  opt.tuning.shift_affine = true;  // not taken: the copies' launch cannot overlap a cooperative one
  const auto programs = kernels::layernorm_programs(RowVariant::looped, ir::DType::bf16, 40001, opt);
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0]->name(), "layernorm_looped_groups_peeled");
  const auto info = programs[0]->compile(programs[0]->default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(LayerNormInterp, SplitRowAnyWidth) {
  check_layernorm<float>(3, 1, 0.f, 1.f, RowVariant::split, 1);
  check_layernorm<float>(3, 5000, 0.f, 1.f, RowVariant::split, 2);
  check_layernorm<float>(2, 20001, 0.f, 1.f, RowVariant::split, 3);   // not a multiple of the split or the piece
  check_layernorm<float>(2, 9000, 0.f, 1.f, RowVariant::split, 8);    // more splits than pieces: idle programs
  check_layernorm<float>(2, 20000, 1e4f, 1.f, RowVariant::split, 4);  // large mean: every chunk shifts by x[row, 0]
  check_layernorm<bfloat16>(2, 131072, 0.f, 1.f, RowVariant::split, 16);
  check_layernorm<half>(3, 12288, 0.f, 1.f, RowVariant::split, 3);
}

// The split's second kernel with several rows a program sharing w and b (Tuning::split_combine_rows):
// rows through windows take rows a vector apart (same offset into it), whole-vector rows neighbours; a
// program's spare slots normalize its first row again.
TEST(LayerNormInterp, SplitCombineRowsShareWAndB) {
  kernels::Tuning four, two;
  four.split_combine_rows = 4;
  two.split_combine_rows = 2;
  check_layernorm<half>(32, 9001, 0.f, 1.f, RowVariant::split, 3, four);      // 8 programs of 4 rows 8 apart
  check_layernorm<half>(35, 9001, 0.f, 1.f, RowVariant::split, 3, four);      // 2 a program (4 would redo 9 rows)
  check_layernorm<bfloat16>(16, 20001, 3.f, 1.f, RowVariant::split, 5, two);  // shifted sums of a large mean
  check_layernorm<float>(8, 20000, 0.f, 1.f, RowVariant::split, 2, four);     // whole vectors: neighbours
  check_layernorm<float>(6, 20000, 1e4f, 1.f, RowVariant::split, 4, four);    // 2 a program; large mean
  check_layernorm<float>(9, 20001, 0.f, 1.f, RowVariant::split, 3, four);     // through windows of 4: 2 a program
}

TEST(LayerNormInterp, ClusterReadsOnceTwoPass) {
  check_layernorm<float>(3, 100, 0.f, 1.f, RowVariant::cluster, 0);        // one program per row
  check_layernorm<bfloat16>(3, 12288, 0.f, 1.f, RowVariant::cluster, 3);   // 3 x 4096, no ragged piece
  check_layernorm<float>(2, 20001, 0.f, 1.f, RowVariant::cluster, 0);      // 2 pieces, the last one short
  check_layernorm<float>(2, 20001, 1e4f, 1.f, RowVariant::cluster, 3);     // large mean: exact like the one-program kernel
  check_layernorm<half>(2, 50000, 0.f, 1.f, RowVariant::cluster, 0);       // 4 pieces
  check_layernorm<bfloat16>(2, 131072, 0.f, 1.f, RowVariant::cluster, 0);  // 8 pieces
  std::vector<float> x(200000), w(200000), b(200000), y(200000);
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(1), std::vector<float>(1)};
  EXPECT_THROW(kernels::layernorm_cluster(x, w, b, y, stats, 1, 131073, 1e-5f, {Backend::interpreter}), std::invalid_argument);
  EXPECT_THROW(kernels::layernorm_cluster(x, w, b, y, stats, 1, 40000, 1e-5f, {Backend::interpreter}, 2), std::invalid_argument);
}

TEST(LayerNormInterp, SplitRowRejectsBadSplits) {
  std::vector<float> x(100), w(100), b(100), y(100);
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(1), std::vector<float>(1)};
  kernels::NormSplitScratch<std::vector<float>> scratch{std::vector<float>(2000), std::vector<float>(2000)};
  try {
    kernels::layernorm_split(x, w, b, y, stats, scratch, 1, 100, 2000, 1e-5f, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layernorm_split: argument splits: expected 1 to 1024, got 2000"), std::string::npos)
        << e.what();
  }
  kernels::NormSplitScratch<std::vector<float>> small{std::vector<float>(3), std::vector<float>(4)};
  try {
    kernels::layernorm_split(x, w, b, y, stats, small, 1, 100, 4, 1e-5f, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument scratch.partial_s1 holds 3 elements, expected at least 4"), std::string::npos)
        << e.what();
  }
}

TEST(NormNvrtc, LoopedLayerNormCompilesWithoutSpills) {
  Kernel<&kernels::layernorm_looped_program<tl::f32, 4096>> f32("layernorm_looped", {.num_warps = 8});
  Kernel<&kernels::layernorm_looped_program<tl::bf16, 4096>> bf16("layernorm_looped", {.num_warps = 8});
  Kernel<&kernels::layernorm_partials_program<tl::bf16, 4096>> partials("layernorm_partials", {.num_warps = 8});
  Kernel<&kernels::layernorm_combine_program<tl::bf16, 4096, 1024>> combine("layernorm_combine", {.num_warps = 8});
  KernelOptions cluster_options{16, {}, 0, 3};
  Kernel<&kernels::layernorm_cluster_program<tl::bf16, 4096>> cluster("layernorm_cluster", cluster_options);
  for (Program* p : {&f32.program(), &bf16.program(), &partials.program(), &combine.program(), &cluster.program()}) {
    const auto info = p->compile(p->default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
    EXPECT_EQ(info.stack_bytes, 0) << info.ptxas_log;
  }
}

TEST(LayerNormInterp, StagedMatchesFloat64) {
  for (std::int64_t cols : {1, 7, 1000, 2048, 2049, 4097, 12288}) {
    check_layernorm<float>(2, cols, 0.f, 1.f, RowVariant::staged);
    check_layernorm<half>(2, cols, 0.f, 1.f, RowVariant::staged);
    check_layernorm<bfloat16>(2, cols, 0.f, 1.f, RowVariant::staged);
  }
  check_layernorm<bfloat16>(1, kernels::kStageMaxCols, 0.f, 1.f, RowVariant::staged);
  // Clusters of 9 and 16 programs a row (Tuning::staged_cluster: Hopper's non-portable sizes), rows
  // through windows and whole vectors, and a large mean (two-pass over the cluster).
  kernels::Tuning t;
  for (int k : {9, 16}) {
    t.staged_cluster = k;
    check_layernorm<float>(3, 20001, 0.f, 1.f, RowVariant::staged, 1, t);
    check_layernorm<half>(2, 40000, 0.f, 1.f, RowVariant::staged, 1, t);
    check_layernorm<bfloat16>(2, 33333, 0.f, 1.f, RowVariant::staged, 1, t);
    check_layernorm<float>(2, 16383, 1e4f, 1.f, RowVariant::staged, 1, t);
  }
}

// The resident LayerNorm: rows over groups of 32 KB stages, in the interpreter's waves of two rows.
TEST(LayerNormInterp, ResidentMatchesFloat64) {
  check_layernorm<float>(5, 20000, 0.f, 1.f, RowVariant::resident);
  check_layernorm<half>(3, 40001, 0.f, 1.f, RowVariant::resident);
  check_layernorm<bfloat16>(2, 33000, 0.f, 1.f, RowVariant::resident);
  check_layernorm<float>(3, 16383, 1e4f, 1.f, RowVariant::resident);  // two-pass at a large mean, through windows
  check_layernorm<float>(2, 5, 0.f, 1.f, RowVariant::resident);
}

// The resident LayerNorm with Tuning::stride_stages: one launch whose two groups (the interpreter's)
// stride over the rows through two stages in turn.
TEST(LayerNormInterp, ResidentStridedMatchesFloat64) {
  kernels::Tuning t;
  t.stride_stages = true;
  for (std::int64_t rows : {1, 3, 6}) check_layernorm<float>(rows, 20000, 0.f, 1.f, RowVariant::resident, 1, t);
  check_layernorm<half>(5, 40001, 0.f, 1.f, RowVariant::resident, 1, t);
  check_layernorm<float>(3, 16383, 1e4f, 1.f, RowVariant::resident, 1, t);  // two-pass at a large mean, through windows
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning = t;
  const auto programs = kernels::layernorm_programs(RowVariant::resident, ir::DType::bf16, 40001, opt);
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0]->name().rfind("layernorm_resident_strided", 0), 0u) << programs[0]->name();
  const auto info = programs[0]->compile(programs[0]->default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(LayerNormInterp, StagedIsTwoPassAtLargeMeans) { check_layernorm<float>(3, 5000, 1e4f, 1.f, RowVariant::staged); }

// Programs (clusters) striding over rows through two stages in turn (Tuning::stride_stages): two of them
// in the interpreter, so rows end on either stage; the rows past the matrix write no mean, rstd or y.
TEST(LayerNormInterp, StridedStagedMatchesFloat64) {
  kernels::Tuning t;
  t.stride_stages = true;
  for (std::int64_t rows : {1, 2, 3, 6}) {
    check_layernorm<float>(rows, 2049, 0.f, 1.f, RowVariant::staged, 1, t);
    check_layernorm<half>(rows, 12287, 0.f, 1.f, RowVariant::staged, 1, t);  // through windows
  }
  check_layernorm<bfloat16>(5, 40001, 0.f, 1.f, RowVariant::staged, 1, t);  // a cluster of chunks through windows
  check_layernorm<float>(3, 5000, 1e4f, 1.f, RowVariant::staged, 1, t);     // two-pass at a large mean
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning = t;
  const Program& p = *kernels::layernorm_programs(RowVariant::staged, ir::DType::bf16, 40001, opt).at(0);
  EXPECT_EQ(p.name().rfind("layernorm_staged_strided", 0), 0u) << p.name();
  const auto info = p.compile(p.default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  EXPECT_EQ(test::occurrences(info.source, "tf_copy_wait_groups<"), 2u) << info.source;
}

// Every entry of the variant table in the interpreter, at a width past one program where it allows (the
// split-row variant with its scratch): a new variant is tested by being listed.
TEST(LayerNormInterp, EveryVariantOfTheTable) {
  for (const auto& v : kernels::layernorm_variants()) {
    const std::int64_t widest = v.max_cols;
    check_layernorm<float>(2, widest == 0 ? 20000 : std::min<std::int64_t>(widest, 20000), 0.f, 1.f, v.variant, v.needs_scratch ? 3 : 0);
  }
}
