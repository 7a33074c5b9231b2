// Rows of every alignment: the sample row kernels read a row whose width is not a whole number of 16-byte
// vectors through its aligned window (kernels/rows/programs.hpp, RowWindow). In the interpreter, every
// variant that peels (one program, looped, split) matches float64 with the window and without it, at
// widths that leave each row a different offset into its vector; and the generated CUDA of the peeled
// kernels moves 16 bytes per access where the unpeeled kernels go element by element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/launchers.hpp"
#include "kernels/softmax/softmax.hpp"
#include "kernels/tune/tuner.hpp"
#include "tests/common/fake_memory.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;
using kernels::RowVariant;
using test::occurrences;

namespace {

kernels::RowOptions interpreter(bool peel) {
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning.peel = peel;
  return opt;
}

// interpreter(peel) with narrow rows several per program (LayerNorm's rule is one per program), each row
// read on its own (through its window with peel), or with `stage` the program's rows as one run through
// shared memory (StagedRows, the rule for rows that are not whole vectors).
kernels::RowOptions packed(bool peel, bool stage = false) {
  kernels::RowOptions opt = interpreter(peel);
  opt.tuning.pack_rows = true;
  opt.tuning.stage_rows = stage;
  return opt;
}

// Softmax `variant` (split: over 3 programs per row) of rows x cols in the interpreter against float64.
template <class H>
void check_softmax(std::int64_t rows, std::int64_t cols, RowVariant variant, bool peel, bool pack = true, bool stage = false) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("softmax ") + kernels::variant_name(variant) + (peel ? " peeled " : " unpeeled ") + std::to_string(rows) +
               "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, 0.f, 3.f);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  if (variant == RowVariant::split) {
    kernels::SplitScratch<std::vector<float>> scratch{std::vector<float>(rows * 3), std::vector<float>(rows * 3)};
    kernels::softmax_split(x, y, scratch, rows, cols, 3, pack ? packed(peel, stage) : interpreter(peel));
  } else {
    kernels::softmax_auto(x, y, rows, cols, pack ? packed(peel, stage) : interpreter(peel), variant);
  }
  const auto ref = reference::softmax<H>(x, rows, cols);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(y, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

// LayerNorm `variant` (split: over 3 programs per row) in the interpreter against float64, mean and rstd
// included; `mean` shifts the rows (f32 rows are summed shifted by their first element, which the
// window must find at the row's start, not the window's).
template <class H>
void check_layernorm(std::int64_t rows, std::int64_t cols, RowVariant variant, bool peel, float mean = 0.f, bool pack = false,
                     bool stage = false, std::optional<bool> rows_ahead = std::nullopt) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(std::string("layernorm ") + kernels::variant_name(variant) + (peel ? " peeled " : " unpeeled ") + std::to_string(rows) +
               "x" + std::to_string(cols) + " seed " + std::to_string(seed) +
               (rows_ahead ? (*rows_ahead ? " rows ahead" : " rows not ahead") : ""));
  kernels::RowOptions opt = pack ? packed(peel, stage) : interpreter(peel);
  opt.tuning.rows_ahead = rows_ahead;
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, mean, 1.f);
  auto w = reference::random_vector<H>(static_cast<std::size_t>(cols), seed + 1);
  auto b = reference::random_vector<H>(static_cast<std::size_t>(cols), seed + 2);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows, std::nanf("")), std::vector<float>(rows, std::nanf(""))};
  if (variant == RowVariant::split) {
    kernels::NormSplitScratch<std::vector<float>> scratch{std::vector<float>(rows * 3), std::vector<float>(rows * 3)};
    kernels::layernorm_split(x, w, b, y, stats, scratch, rows, cols, 3, 1e-5f, opt);
  } else {
    kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, opt, variant);
  }
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(x, w, b, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  const double tol = reference::tolerance<H>();
  EXPECT_LE(reference::relative_error<H>(y, ref), tol);
  EXPECT_LE(reference::worst_element<H>(y, ref, 4 * tol, 4 * tol), 1.0);
  EXPECT_LE(reference::worst_element<float>(stats.mean, mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(stats.rstd, rstd_ref), 1e-4);
}

// Widths that start consecutive rows at every offset into a 16-byte vector of halves (odd) and of floats
// (1 and 3 mod 4), narrow and past one warp's tile.
const std::int64_t kOddWidths[] = {1, 3, 9, 33, 257, 1001};
const RowVariant kPeeling[] = {RowVariant::one_program, RowVariant::looped, RowVariant::split};

// The specialization of a launch on rows of odd width: every pointer 16-byte aligned, the row stride and
// width odd (a split's chunk stays a multiple of its loop piece).
Specialization odd_rows(const Program& p) {
  Specialization s = p.default_specialization();
  for (std::size_t i = 0; i < s.divisibility.size(); ++i)
    for (const char* odd : {"stride", "n_cols", "n", "tail", "n_rows"})
      if (p.ir().params[i].name == odd) s.divisibility[i] = 1;
  return s;
}

}  // namespace

TEST(RowsAlignment, SoftmaxEveryOffsetIntoAVector) {
  for (RowVariant v : kPeeling)
    for (std::int64_t cols : kOddWidths)
      for (bool peel : {true, false}) {
        check_softmax<half>(9, cols, v, peel);
        check_softmax<float>(5, cols, v, peel);
      }
  check_softmax<bfloat16>(3, 4099, RowVariant::looped, true);  // a window of two loop pieces
}

TEST(RowsAlignment, LayerNormEveryOffsetIntoAVector) {
  for (RowVariant v : kPeeling)
    for (std::int64_t cols : kOddWidths)
      for (bool peel : {true, false}) {
        check_layernorm<bfloat16>(9, cols, v, peel);
        check_layernorm<float>(5, cols, v, peel);
      }
  check_layernorm<float>(4, 1001, RowVariant::one_program, true, 1e4f);  // the shift is the row's first element
  check_layernorm<float>(4, 4099, RowVariant::looped, true, 1e4f);
  check_layernorm<half>(3, 4099, RowVariant::split, true);
}

TEST(RowsAlignment, RowsAsPiecesMatchFloat64) {
  // Rows held as three, five or seven pieces (with_pieces), from their start and through their windows:
  // only the pieces at the row's ends are masked, the first one (peeled) below the row's first column.
  const kernels::RowOptions opt = interpreter(true);
  const std::pair<std::int64_t, const char*> softmax_f32[] = {{4105, "softmax_peeled_1024x5"}, {4256, "softmax_1024x5"},
                                                              {3261, "softmax_peeled_512x7"}, {5423, "softmax_peeled_2048x3"}};
  for (const auto& [cols, name] : softmax_f32)
    EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f32, cols, opt).at(0)->name(), name);
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 13192, opt).at(0)->name(), "softmax_2048x7");
  for (std::int64_t cols : {1025, 2223, 3261, 4105, 4256, 5423, 13192}) {
    for (bool peel : {true, false}) {
      check_softmax<half>(3, cols, RowVariant::one_program, peel, false);
      check_softmax<float>(3, cols, RowVariant::one_program, peel, false);
      check_layernorm<bfloat16>(3, cols, RowVariant::one_program, peel);
      check_layernorm<float>(3, cols, RowVariant::one_program, peel);
    }
  }
  check_layernorm<float>(3, 4105, RowVariant::one_program, false, 1e4f);  // shifted by the row's first element
  check_layernorm<half>(3, 4105, RowVariant::one_program, true, 1e4f);
}

TEST(RowsAlignment, WindowsEndingBeforeTheirLastPieceTakeOneTile) {
  // A row through its window holds from cols - V + 1 columns of the window (its head 0) to cols + V - 1:
  // where the window needs five (seven) pieces but the row can end inside the fourth (sixth), those whole,
  // unmasked pieces would reach past it into the next row. Rows of every head (odd widths), both limits
  // of every block; the interpreter fails any access outside the buffers.
  for (std::int64_t block = 2048; block <= kernels::kSoftmaxMaxCols; block *= 2)
    for (std::int64_t cols : {block / 2 - 1, 3 * block / 4 - 1}) {
      SCOPED_TRACE(cols);
      check_softmax<half>(9, cols, RowVariant::one_program, true);
      check_softmax<float>(5, cols, RowVariant::one_program, true);
      check_layernorm<bfloat16>(9, cols, RowVariant::one_program, true);
    }
  // 16383 halves: five pieces of 4096 would end at 16384 for a row of head 0; one tile of 32768.
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 16383, interpreter(true)).at(0)->name(),
            "softmax_peeled_32768");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 16385, interpreter(true)).at(0)->name(),
            "softmax_peeled_4096x5");
}

TEST(RowsAlignment, WindowsWiderThanOneProgramFallBackToTheRow) {
  // 32767 f16 columns: the window (32774) is past the one-program tile, so the row is read from its start.
  const auto programs = kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 32767, interpreter(true));
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0]->name(), "softmax_32768");
  check_softmax<half>(3, 32767, RowVariant::one_program, true);
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 32761, interpreter(true)).at(0)->name(),
            "softmax_peeled_32768");
}

TEST(RowsAlignment, PeeledKernelsMove16BytesPerAccess) {
  // Rows of 3261 halves at an odd stride: the input and output 16-byte aligned, stride and width odd.
  const auto source = [&](bool peel) {
    const Program* p = kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 3261, interpreter(peel)).at(0);
    return p->cuda_source(odd_rows(*p));
  };
  const std::string peeled = source(true), plain = source(false);
  // The window (3268 columns) as seven pieces of 512, one run of 8 halves per thread and piece.
  EXPECT_NE(peeled.find("tilefuse_softmax_peeled_512x7"), std::string::npos);
  EXPECT_EQ(occurrences(peeled, "tf_load_vec<unsigned, 4"), 7u) << peeled;   // 8 halves per load
  EXPECT_EQ(occurrences(peeled, "tf_store_vec<unsigned, 4"), 7u) << peeled;
  EXPECT_EQ(occurrences(plain, "tf_load_vec<"), 0u) << plain;                // element by element
  // The unpeeled kernel's threads take neighbouring elements (runs of 1), not runs of 8 read one by one.
  EXPECT_NE(plain.find("in runs of 1"), std::string::npos) << plain;
  // LayerNorm: x in and y out in 16-byte runs; w and b, off the window's alignment, element by element
  // (one row per program), or staged once per program at the offset its rows share and read back 16 bytes
  // at a time (strided over rows, the rule for windows of several pieces). Strided with rows ahead
  // (Tuning::rows_ahead), x too goes through a stage: 16-byte asynchronous copies, the last piece's run that holds the
  // row's end as a prefix of one, then read back 16 bytes at a time.
  for (int mode : {0, 1, 2}) {
    const bool stride = mode > 0, ahead = mode == 2;
    kernels::RowOptions opt = interpreter(true);
    opt.tuning.stride_rows = stride;
    opt.tuning.rows_ahead = ahead;
    const Program* ln = kernels::layernorm_programs(RowVariant::one_program, ir::DType::bf16, 3261, opt).at(0);
    EXPECT_EQ(ln->name(), ahead ? "layernorm_strided_ahead_512x7" : stride ? "layernorm_strided_512x7" : "layernorm_peeled_512x7");
    const std::string ln_src = ln->cuda_source(odd_rows(*ln));
    EXPECT_EQ(occurrences(ln_src, "tf_load_vec<unsigned, 4, 1>"), ahead ? 0u : 7u) << ln_src;  // x, with the streaming hint
    EXPECT_EQ(occurrences(ln_src, "tf_store_vec<unsigned, 4, 1>"), 7u) << ln_src;
    EXPECT_EQ(occurrences(ln_src, "tf_load_vec<unsigned, 4>(reinterpret_cast<const unsigned*>(tf_stage"), ahead ? 21u : stride ? 14u : 0u)
        << ln_src;  // w, b (and x)
    EXPECT_EQ(occurrences(ln_src, "tf_copy_async<16>("), ahead ? 14u : 0u) << ln_src;  // a program's first row, then each next
    EXPECT_EQ(occurrences(ln_src, "tf_copy_async_prefix<16>("), ahead ? 2u : 0u) << ln_src;
    // x - mean, zero outside the row's window: one test of a run's bits, a select per lane only where the
    // window's ends cut the run.
    EXPECT_GE(occurrences(ln_src, "if (run == tf_run_all(8)) {"), 1u) << ln_src;
  }
  for (RowVariant v : {RowVariant::looped, RowVariant::split}) {
    for (const Program* p : kernels::softmax_programs(v, ir::DType::f16, 30001, interpreter(true), 4)) {
      const std::string src = p->cuda_source(odd_rows(*p));
      EXPECT_NE(p->name().find("peeled"), std::string::npos) << p->name();
      EXPECT_GE(occurrences(src, "tf_load_vec<unsigned, 4"), 1u) << p->name() << "\n" << src;
    }
  }
}

TEST(RowsAlignment, NarrowRowsGoSeveralToAProgram) {
  // Rows of a tile of at most 512 bytes: R rows per program as one 2D tile (8 KB), the last program's
  // rows past the matrix masked off; aligned and odd widths, every dtype, against float64.
  const kernels::RowOptions opt = packed(true);
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f32, 128, opt).at(0)->name(), "softmax_rows_16x128");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 47, opt).at(0)->name(), "softmax_rows_64x64_peeled");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 256, opt).at(0)->name(), "layernorm_rows_16x256");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f32, 129, opt).at(0)->name(), "softmax_peeled_256");
  for (std::int64_t cols : {1, 2, 8, 16, 40, 47, 64, 79, 120, 128, 155, 249}) {
    check_softmax<half>(70, cols, RowVariant::one_program, true);
    check_softmax<float>(37, cols, RowVariant::one_program, true);
    for (bool pack : {true, false}) {
      check_layernorm<bfloat16>(70, cols, RowVariant::one_program, true, 0.f, pack);
      check_layernorm<float>(37, cols, RowVariant::one_program, false, 0.f, pack);
    }
  }
  check_layernorm<float>(40, 33, RowVariant::one_program, true, 1e4f, true);  // shifted by each row's first element
}

TEST(RowsAlignment, StagedNarrowRowsMatchFloat64) {
  // Rows that are not whole vectors, the program's rows as one run through shared memory (StagedRows):
  // runs that start anywhere in a vector, the last program's rows past the matrix, widths from 1 column
  // to a 512-byte tile, every dtype; LayerNorm's f32 rows shifted by their first element, taken from the
  // tile.
  const kernels::RowOptions opt = packed(false, true);
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 47, opt).at(0)->name(), "softmax_staged_rows_64x64");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::f32, 3, opt).at(0)->name(), "layernorm_staged_rows_512x4");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 64, opt).at(0)->name(), "softmax_rows_64x64");  // whole vectors
  for (std::int64_t cols : {1, 3, 5, 25, 47, 79, 155, 249}) {
    check_softmax<half>(203, cols, RowVariant::one_program, false, true, true);
    check_softmax<bfloat16>(70, cols, RowVariant::one_program, false, true, true);
    check_softmax<float>(37, cols, RowVariant::one_program, false, true, true);
    check_layernorm<half>(203, cols, RowVariant::one_program, false, 0.f, true, true);
    check_layernorm<bfloat16>(70, cols, RowVariant::one_program, false, 0.f, true, true);
    check_layernorm<float>(37, cols, RowVariant::one_program, false, 0.f, true, true);
  }
  check_layernorm<float>(40, 33, RowVariant::one_program, false, 1e4f, true, true);
}

TEST(RowsAlignment, RowsReadRowByRowWrittenThroughAStageMatchFloat64) {
  // Tuning::stage_stores: packed rows read row by row, the result scattered to its place in the program's
  // run in a stage, which goes out as whole 16-byte vectors but for its two ends; the last program's rows
  // past the matrix. Offered to the tuner for packed rows that are not whole vectors.
  kernels::RowOptions opt = packed(false);
  opt.tuning.stage_stores = true;
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 85, opt).at(0)->name(), "softmax_rows_32x128_staged_store");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 65, opt).at(0)->name(), "layernorm_rows_32x128_staged_store");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 64, opt).at(0)->name(), "softmax_rows_64x64");  // whole vectors
  const Program* p = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 85, opt).at(0);
  const std::string src = p->cuda_source(odd_rows(*p));
  EXPECT_EQ(occurrences(src, "tf_store_vec<tf_u16, 8>"), 3u) << src;  // the run's whole vectors out, and its ends
  for (std::int64_t cols : {1, 5, 47, 85, 155, 249}) {
    const auto seed = std::random_device{}();
    SCOPED_TRACE(std::to_string(cols) + " columns, seed " + std::to_string(seed));
    const std::int64_t rows = 75;
    auto x = reference::random_vector<bfloat16>(static_cast<std::size_t>(rows * cols), seed, 0.f, 3.f);
    std::vector<bfloat16> y(x.size(), reference::from_float<bfloat16>(std::nanf("")));
    kernels::softmax_auto(x, y, rows, cols, opt);
    EXPECT_LE(reference::relative_error<bfloat16>(y, reference::softmax<bfloat16>(x, rows, cols)), reference::tolerance<bfloat16>());
    auto w = reference::random_vector<bfloat16>(static_cast<std::size_t>(cols), seed + 1);
    auto b = reference::random_vector<bfloat16>(static_cast<std::size_t>(cols), seed + 2);
    std::vector<bfloat16> z(x.size(), reference::from_float<bfloat16>(std::nanf("")));
    kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows), std::vector<float>(rows)};
    kernels::layernorm_auto(x, w, b, z, stats, rows, cols, 1e-5f, opt);
    const auto ref = reference::layernorm<bfloat16>(x, w, b, rows, cols, 1e-5);
    EXPECT_LE(reference::relative_error<bfloat16>(z, ref), reference::tolerance<bfloat16>());
    EXPECT_LE(reference::worst_element<bfloat16>(z, ref, 4 * reference::tolerance<bfloat16>(), 4 * reference::tolerance<bfloat16>()), 1.0);
  }
  // The tuner's space offers both ways of staging odd packed rows, and only for them.
  auto offers = [](const std::vector<kernels::RowConfig>& space, auto pred) {
    return std::any_of(space.begin(), space.end(), [&](const kernels::RowConfig& c) { return pred(c.tuning); });
  };
  const kernels::RowOptions interp{Backend::interpreter};
  auto stores = [](const kernels::Tuning& t) { return t.stage_stores.value_or(false); };
  auto unstaged = [](const kernels::Tuning& t) { return t.stage_rows == std::optional<bool>(false); };
  EXPECT_TRUE(offers(kernels::softmax_space(1000, 85, 2, interp), stores));
  EXPECT_TRUE(offers(kernels::layernorm_space(1000, 85, 2, interp), stores));
  EXPECT_TRUE(offers(kernels::softmax_space(1000, 25, 2, interp), unstaged));  // staged by the rule
  EXPECT_FALSE(offers(kernels::softmax_space(1000, 64, 2, interp), stores));   // whole vectors
  EXPECT_FALSE(offers(kernels::softmax_space(1000, 4097, 2, interp), stores));
}

TEST(RowsAlignment, LayerNormDefaultsFollowTheRowBytes) {
  // Unless tuned: odd rows of every dtype through windows from 2 KB (half windows up to 8192 columns by
  // programs striding over rows), shorter rows element by element; several rows per
  // program as packed_rows says (f32 rows that are not whole vectors through shared memory), one per
  // program above.
  const kernels::RowOptions opt{Backend::interpreter};
  auto name = [&](ir::DType t, std::int64_t cols) { return kernels::layernorm_programs(RowVariant::one_program, t, cols, opt).at(0)->name(); };
  // Windows of up to 8 KB copy each next row ahead (rows_ahead_pays).
  EXPECT_EQ(name(ir::DType::bf16, 3261), "layernorm_strided_ahead_512x7");  // 6.5 KB, its window in eighths of 4096
  EXPECT_EQ(name(ir::DType::f16, 1025), "layernorm_strided_ahead_256x5");   // 2050 bytes
  EXPECT_EQ(name(ir::DType::bf16, 5587), "layernorm_strided_2048x3");       // 11 KB
  EXPECT_EQ(name(ir::DType::f16, 1900), "layernorm_strided_ahead_2048");  // a window past 7/8 of its tile: one piece
  EXPECT_EQ(name(ir::DType::bf16, 3597), "layernorm_strided_ahead_4096");  // 7 KB in one piece
  EXPECT_EQ(name(ir::DType::f16, 7375), "layernorm_peeled_8192");        // 14.4 KB in one piece: one row a program
  EXPECT_EQ(name(ir::DType::f16, 9001), "layernorm_peeled_2048x5");   // a window past kNormStridedMaxCols
  EXPECT_EQ(name(ir::DType::f16, 1023), "layernorm_1024");           // 2046 bytes
  EXPECT_EQ(name(ir::DType::f32, 3261), "layernorm_peeled_512x7");    // f32 rows of 2 KB and more too
  EXPECT_EQ(name(ir::DType::f32, 4105), "layernorm_peeled_1024x5");
  EXPECT_EQ(name(ir::DType::f32, 5423), "layernorm_peeled_2048x3");
  EXPECT_EQ(name(ir::DType::f32, 511), "layernorm_512");              // 2044 bytes
  EXPECT_EQ(name(ir::DType::bf16, 47), "layernorm_rows_64x64");         // a 128-byte tile
  EXPECT_EQ(name(ir::DType::f16, 40), "layernorm_rows_64x64");          // whole vectors
  EXPECT_EQ(name(ir::DType::f32, 31), "layernorm_staged_rows_64x32");   // f32, not whole vectors: staged
  EXPECT_EQ(name(ir::DType::f32, 53), "layernorm_staged_rows_32x64");   // staged, packed up to 512 bytes
  // The looped kernel follows the same rule.
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::looped, ir::DType::f32, 18179, opt).at(0)->name(), "layernorm_looped_peeled");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::looped, ir::DType::f32, 16383, opt).at(0)->name(), "layernorm_looped_peeled");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::looped, ir::DType::f32, 509, opt).at(0)->name(), "layernorm_looped");
  EXPECT_EQ(name(ir::DType::f16, 136), "layernorm_256");              // a 512-byte tile
  EXPECT_EQ(name(ir::DType::bf16, 85), "layernorm_rows_32x128");       // a 256-byte tile
  EXPECT_EQ(name(ir::DType::bf16, 155), "layernorm_rows_16x256");      // a 512-byte tile, not whole vectors
  // What Tuning says wins over the defaults.
  kernels::RowOptions tuned = opt;
  tuned.tuning.peel = false;
  tuned.tuning.pack_rows = true;
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::bf16, 3261, tuned).at(0)->name(), "layernorm_512x7");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 136, tuned).at(0)->name(), "layernorm_rows_16x256");
}

TEST(RowsAlignment, NarrowRowsAreHeldSeveralToAProgramWhereOneWarpARowHoldsLessThanAVectorALane) {
  // The rule of both families (packed_rows): rows whose tile is under 512 bytes go several to a program
  // (a one-warp program would hold less than one 16-byte vector a lane); at 512 bytes only rows that are
  // not whole vectors do (one to a program, their ends go element by element); wider tiles never.
  const kernels::RowOptions opt{Backend::interpreter};
  auto softmax = [&](ir::DType t, std::int64_t cols) { return kernels::softmax_programs(RowVariant::one_program, t, cols, opt).at(0)->name(); };
  auto layernorm = [&](ir::DType t, std::int64_t cols) { return kernels::layernorm_programs(RowVariant::one_program, t, cols, opt).at(0)->name(); };
  EXPECT_EQ(softmax(ir::DType::f32, 40), "softmax_rows_32x64");
  EXPECT_EQ(layernorm(ir::DType::f32, 40), "layernorm_rows_32x64");
  EXPECT_EQ(softmax(ir::DType::f16, 65), "softmax_rows_32x128");  // its window: 72 columns
  EXPECT_EQ(layernorm(ir::DType::f16, 65), "layernorm_rows_32x128");
  EXPECT_EQ(softmax(ir::DType::f32, 72), "softmax_128");          // whole vectors, a 512-byte tile
  EXPECT_EQ(layernorm(ir::DType::f32, 72), "layernorm_128");
  EXPECT_EQ(softmax(ir::DType::f16, 136), "softmax_256");
  EXPECT_EQ(layernorm(ir::DType::f16, 136), "layernorm_256");
  EXPECT_EQ(softmax(ir::DType::bf16, 151), "softmax_rows_16x256");  // not whole vectors, a 512-byte tile
  EXPECT_EQ(layernorm(ir::DType::bf16, 151), "layernorm_rows_16x256");
  EXPECT_EQ(softmax(ir::DType::bf16, 257).find("_rows_"), std::string::npos);  // wider tiles
  EXPECT_EQ(layernorm(ir::DType::bf16, 257).find("_rows_"), std::string::npos);
  // The tuners' spaces hold the other way for every tile that may be packed.
  struct Case {
    std::int64_t cols;
    int element_bytes;
    bool other;  // the pack_rows of the other way
  };
  for (const Case& c : {Case{40, 4, false}, Case{72, 4, true}, Case{151, 2, false}}) {
    for (const auto& space : {kernels::softmax_space(1000, c.cols, c.element_bytes, opt), kernels::layernorm_space(1000, c.cols, c.element_bytes, opt)}) {
      bool found = false;
      for (const kernels::RowConfig& config : space)
        found = found || (config.variant == RowVariant::one_program && config.tuning.pack_rows == c.other);
      EXPECT_TRUE(found) << c.cols << " columns of " << c.element_bytes << " bytes";
    }
  }
}

TEST(RowsAlignment, StridedLayerNormMatchesFloat64) {
  // Half rows through windows of several pieces or of one tile (1900: a window of one 2048 tile): 16
  // programs on the interpreter, each striding over rows 16 apart (which share a window's offset), w and b
  // staged once per program; row counts that leave programs with different numbers of rows, and fewer
  // rows than programs.
  // Both ways: each row loaded as the program reaches it, and copied into a stage while the row before
  // it is finished (Tuning::rows_ahead; the last program's next row is past the matrix and copies nothing).
  for (bool ahead : {false, true}) {
    for (std::int64_t cols : {1025, 1900, 2223, 3261}) {
      check_layernorm<half>(53, cols, RowVariant::one_program, true, 0.f, false, false, ahead);
      check_layernorm<bfloat16>(19, cols, RowVariant::one_program, true, 2.f, false, false, ahead);
    }
    check_layernorm<half>(5, 2223, RowVariant::one_program, true, 0.f, false, false, ahead);
  }
  const Program* p = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 2223, interpreter(true)).at(0);
  EXPECT_EQ(p->name(), "layernorm_strided_ahead_512x5");
}

TEST(RowsAlignment, RowsCopiedAheadWaitOnlyForTheirOwnStage) {
  // The strided LayerNorm with rows ahead: in its loop over rows, one wait (before x's stage is first read),
  // then the next row's copies, issued once the mean is known, and no wait after them: w's and b's stages,
  // read for every piece as it is stored, have nothing in flight (they were copied element by element, off
  // the vector boundary, before the loop). Once more after the loop (the last copies, past the matrix).
  kernels::RowOptions opt = interpreter(true);
  opt.tuning.rows_ahead = true;
  const Program* p = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 2223, opt).at(0);
  EXPECT_EQ(p->name(), "layernorm_strided_ahead_512x5");
  const std::string src = p->cuda_source(odd_rows(*p));
  const std::size_t loop = src.find("  for (int v"), end = src.rfind("\n  }\n");
  ASSERT_NE(loop, std::string::npos) << src;
  const std::string body = src.substr(loop, end - loop);
  EXPECT_EQ(occurrences(body, "tf_copy_wait();"), 1u) << body;
  EXPECT_EQ(occurrences(src, "tf_copy_wait();"), 2u) << src;
  const std::size_t copies = body.find("tf_copy_async<16>("), mean = body.find("= sum "), w = body.find("stage_load @0");
  EXPECT_LT(body.find("tf_copy_wait();"), copies) << body;
  EXPECT_LT(mean, copies) << body;
  EXPECT_LT(copies, w) << body;
  EXPECT_EQ(body.find("tf_copy_wait();", copies), std::string::npos) << body;
  // The copy overwrites x's stage with no barrier after the reads: sound only while every stage, x's
  // included, is owned (each thread copies into exactly what it reads back).
  EXPECT_EQ(occurrences(src, "each thread reads back only what it wrote (no barriers)"), 3u) << src;
}

TEST(RowsAlignment, PeeledLayerNormKeepsItsRowsInFlight) {
  // LayerNorm's half rows through windows of one tile, one row a program (Tuning::stride_rows off), ask
  // for 1024 resident threads (kNormPeeledResident): every such tile must then fit in 64 registers,
  // spilling at most a few (32 bytes: held as interval bits, their masks take a quarter fewer instructions
  // and leave ptxas one to six registers short, stored and reloaded once a row; whole tiles spilled used to
  // cost hundreds of bytes and time). Programs striding over rows (the rule up to kNormStridedMaxCols, one
  // tile or pieces) ask for 640 (kNormStridedResident), with the same bound on spills.
  using kernels::layernorm_launch::kNormStridedResident;
  for (bool stride : {false, true}) {
    kernels::RowOptions opt{Backend::interpreter};
    opt.tuning.stride_rows = stride;
    for (ir::DType t : {ir::DType::f16, ir::DType::bf16})
      for (std::int64_t cols : {1900, 3700, 7500, 16377, 1025, 2223, 3261, 5587, 9001}) {  // tiles of 2048 ... 16384, then pieces
        const Program* p = kernels::layernorm_programs(RowVariant::one_program, t, cols, opt).at(0);
        EXPECT_NE(p->name().find(stride ? "strided" : "peeled"), std::string::npos) << p->name();
        const auto info = p->compile(odd_rows(*p), "sm_90");
        EXPECT_LE(info.spill_bytes, 32) << p->name() << " " << ir::dtype_name(t) << "\n" << info.ptxas_log;
        if (stride) {
          EXPECT_LE(info.registers, 65536 / kNormStridedResident) << p->name() << " " << ir::dtype_name(t);
        } else if (p->name().find('x') == std::string::npos) {
          EXPECT_LE(info.registers, 64) << p->name() << " " << ir::dtype_name(t);
        }
      }
  }
}

TEST(RowsAlignment, LayerNormRowsReadElementByElementKeepMoreProgramsResident) {
  // LayerNorm's packed half rows that are not whole vectors, read row by row (the rule for tiles wider
  // than a thread's row), ask for 768 resident threads (kNormRowByRowResident): six 128-thread programs
  // an SM at least, so every tile must fit in 85 registers without spilling. Whole-vector rows and staged
  // ones keep ptxas's choice.
  const kernels::RowOptions opt{Backend::interpreter};
  const std::string bounded = "__launch_bounds__(128, " + std::to_string(kernels::layernorm_launch::kNormRowByRowResident / 128) + ")";
  for (ir::DType t : {ir::DType::f16, ir::DType::bf16})
    for (std::int64_t cols : {47, 65, 85, 151, 249}) {
      const Program* p = kernels::layernorm_programs(RowVariant::one_program, t, cols, opt).at(0);
      SCOPED_TRACE(p->name() + " " + ir::dtype_name(t) + " " + std::to_string(cols) + " columns");
      EXPECT_EQ(p->name().find("layernorm_rows_"), 0u);
      const auto info = p->compile(odd_rows(*p), "sm_90");
      EXPECT_NE(info.source.find(bounded), std::string::npos);
      EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
      EXPECT_LE(info.registers * 768, 65536) << info.registers << " registers";
    }
  const Program* whole = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 120, opt).at(0);
  EXPECT_EQ(whole->name(), "layernorm_rows_32x128");
  EXPECT_EQ(whole->cuda_source(whole->default_specialization()).find(bounded), std::string::npos);
  const Program* staged = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 25, opt).at(0);
  EXPECT_EQ(staged->name(), "layernorm_staged_rows_128x32");
  EXPECT_EQ(staged->cuda_source(odd_rows(*staged)).find(bounded), std::string::npos);
}

TEST(RowsAlignment, PeeledSoftmaxAsksForTheResidencyOfWholeVectorRowsWhereItChangesSomething) {
  // The softmax's rows read through windows ask for 1024 (f16/bf16) or 1536 (f32) threads per SM
  // (kSoftmaxPeeledResident*), the residency of whole-vector rows, only where ptxas's own registers fall
  // short of it and meeting it spills nothing: no window tile spills, a tile that keeps the request fits
  // that many threads, and one that does not fits them without it or could not without spilling.
  const kernels::RowOptions opt{Backend::interpreter};
  struct Expected { ir::DType dtype; std::int64_t cols; bool bounded; int max_registers; };
  // 8192 f32 tiles took 45 registers (two 512-thread programs an SM, not three), 2048x3 bf16 71; the 512x5
  // f16 tile's 56 fit 1024 threads already.
  for (const Expected& e : {Expected{ir::DType::f32, 7375, true, 40}, Expected{ir::DType::bf16, 5587, true, 64},
                            Expected{ir::DType::f16, 2223, false, 64}}) {
    const Program* p = kernels::softmax_programs(RowVariant::one_program, e.dtype, e.cols, opt).at(0);
    const auto info = p->compile(odd_rows(*p), "sm_90");
    const int threads = 32 * p->num_warps();
    EXPECT_EQ(info.source.find("__launch_bounds__(" + std::to_string(threads) + ")") == std::string::npos, e.bounded)
        << p->name() << " " << ir::dtype_name(e.dtype) << " " << info.registers << " registers";
    EXPECT_LE(info.registers, e.max_registers) << p->name();
    EXPECT_EQ(info.spill_bytes, 0) << p->name() << "\n" << info.ptxas_log;
  }
  for (ir::DType t : {ir::DType::f32, ir::DType::f16, ir::DType::bf16})
    for (std::int64_t cols : {1025, 1901, 3261, 3537, 4105, 9001, 16377}) {
      const Program* p = kernels::softmax_programs(RowVariant::one_program, t, cols, opt).at(0);
      SCOPED_TRACE(p->name() + " " + ir::dtype_name(t) + " " + std::to_string(cols) + " columns");
      EXPECT_NE(p->name().find("peeled"), std::string::npos);
      const auto info = p->compile(odd_rows(*p), "sm_90");
      EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
      const int threads = 32 * p->num_warps();
      const int wanted = t == ir::DType::f32 ? kernels::softmax_launch::kSoftmaxPeeledResidentF32
                                             : kernels::softmax_launch::kSoftmaxPeeledResidentHalf;
      if (info.source.find("__launch_bounds__(" + std::to_string(threads) + ")") == std::string::npos) {
        EXPECT_LE((info.registers + 7) / 8 * 8 * (wanted / threads) * threads, 65536) << info.registers << " registers";
      }
    }
}

TEST(RowsAlignment, PackedOddRowsPutNeighbouringLanesOnNeighbouringElements) {
  // The softmax's rule for packed rows that are not whole vectors: each row from its own start, in the
  // blocked layout with runs of one element (lanes on neighbouring columns, as many as leave a thread 8
  // columns of a row), so that a warp's element-by-element access reads one contiguous piece per row.
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning.pack_rows = true;
  opt.tuning.stage_rows = false;  // (by default rows of 64-column half tiles go through a stage)
  const Program* p = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 47, opt).at(0);
  EXPECT_EQ(p->name(), "softmax_rows_64x64");
  const std::string src = p->cuda_source(odd_rows(*p));
  EXPECT_NE(src.find("[64x64] reg(0,8)(0,16)(0,32)(16,0)(32,0) lane(0,1)(0,2)(0,4)(1,0)(2,0)"), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, "tf_load_vec<"), 0u) << src;
  // Wider tiles put up to 32 lanes on a row's neighbouring columns before a thread's other columns: a
  // warp's access is 32 (128 columns) or 64 (256) contiguous bytes of a row, not 16-byte pieces 128 bytes
  // apart; each thread still holds 8 columns of a row (a reduction's shuffles as many as before).
  struct Wide {
    std::int64_t cols;
    const char* name;
    const char* layout;
  };
  for (const Wide& w : {Wide{85, "softmax_rows_32x128", "[32x128] reg(0,16)(0,32)(0,64)(8,0)(16,0) lane(0,1)(0,2)(0,4)(0,8)(1,0) warp(2,0)(4,0)"},
                        Wide{151, "softmax_rows_16x256", "[16x256] reg(0,32)(0,64)(0,128)(4,0)(8,0) lane(0,1)(0,2)(0,4)(0,8)(0,16) warp(1,0)(2,0)"}}) {
    const Program* wide = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, w.cols, opt).at(0);
    EXPECT_EQ(wide->name(), w.name);
    const std::string wide_src = wide->cuda_source(odd_rows(*wide));
    EXPECT_NE(wide_src.find(w.layout), std::string::npos) << wide_src;
  }
  // Whole vectors keep their 16-byte runs.
  const Program* whole = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 64, opt).at(0);
  const std::string aligned = whole->cuda_source(whole->default_specialization());
  EXPECT_NE(aligned.find("reg(0,1)(0,2)(0,4)"), std::string::npos) << aligned;
  EXPECT_EQ(occurrences(aligned, "tf_load_vec<tf_u16, 8>"), 1u) << aligned;
  // Tiles narrower than a vector per lane of a row (32 columns of halves: four lanes a row after a thread's
  // vector) still put a vector's worth of lanes on neighbouring columns, so that a warp's access covers 16
  // contiguous bytes of each row it touches, not 8; the thread's other columns go as far as the row does.
  const Program* narrow = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 25, packed(false)).at(0);
  EXPECT_EQ(narrow->name(), "layernorm_rows_128x32");
  const std::string narrow_src = narrow->cuda_source(odd_rows(*narrow));
  EXPECT_NE(narrow_src.find("[128x32] reg(0,8)(0,16)(16,0)(32,0)(64,0) lane(0,1)(0,2)(0,4)(1,0)(2,0) warp(4,0)(8,0)"), std::string::npos)
      << narrow_src;
  for (std::int64_t cols : {3, 25, 47, 65, 155, 249}) {
    const auto seed = std::random_device{}();
    SCOPED_TRACE("softmax " + std::to_string(cols) + " columns, seed " + std::to_string(seed));
    auto x = reference::random_vector<bfloat16>(static_cast<std::size_t>(75 * cols), seed, 0.f, 3.f);
    std::vector<bfloat16> y(x.size(), reference::from_float<bfloat16>(std::nanf("")));
    kernels::softmax_auto(x, y, 75, cols, opt);
    EXPECT_LE(reference::relative_error<bfloat16>(y, reference::softmax<bfloat16>(x, 75, cols)), reference::tolerance<bfloat16>());
  }
}

TEST(RowsAlignment, PackedLayerNormKeepsRowValuesWhereTheRowsAre) {
  // A packed LayerNorm program's per-row and per-column values never cross layouts through shared memory:
  // the f32 shift (each row's first element) is a row reduction of the tile, like the mean, and w and b
  // are loaded in the layout the rows use them in (lane-spaced for rows that are not whole vectors).
  // Shared memory and barriers are left to the staged rows, which move through a stage by design.
  struct Case {
    ir::DType dtype;
    std::int64_t cols;
    const char* name;
  };
  for (const Case& c : {Case{ir::DType::f32, 40, "layernorm_rows_32x64"}, Case{ir::DType::f32, 33, "layernorm_rows_32x64"},
                        Case{ir::DType::bf16, 47, "layernorm_rows_64x64"}, Case{ir::DType::f16, 136, "layernorm_rows_16x256"}}) {
    const Program* p = kernels::layernorm_programs(RowVariant::one_program, c.dtype, c.cols, packed(false)).at(0);
    EXPECT_EQ(p->name(), c.name);
    const std::string src = p->cuda_source(c.cols % 8 ? odd_rows(*p) : p->default_specialization());
    EXPECT_EQ(occurrences(src, "through shared memory"), 0u) << src;
    EXPECT_EQ(occurrences(src, "__syncthreads()"), 0u) << src;
  }
  // Staged f32 rows take their shift from the tile too: the only barriers are the stage's own.
  const Program* s = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f32, 53, packed(false, true)).at(0);
  const std::string staged = s->cuda_source(odd_rows(*s));
  EXPECT_EQ(occurrences(staged, "through shared memory"), 0u) << staged;
}

TEST(RowsAlignment, PackedHalfRowsLoadAndRoundEachElementOnce) {
  // Packed odd half rows go element by element: the mask picks the loaded half or `other` before one
  // widening (no branch around the load, no select after it), and the output cast, only stored, leaves
  // the rounding to the store (no round trip through bf16 before the store rounds again). 16% fewer
  // instructions at 85 bf16 columns.
  const Program* p = kernels::layernorm_programs(RowVariant::one_program, ir::DType::bf16, 85, packed(false)).at(0);
  const std::string src = p->cuda_source(odd_rows(*p));
  EXPECT_NE(src.find("tf_w[0] = v"), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, ") tf_w[0] = *"), 0u) << src;  // no `if (mask) tf_w[0] = *p`
  EXPECT_EQ(occurrences(src, "= tf_round_bf16("), 0u) << src;
  EXPECT_EQ(occurrences(src, "/* rounded by its stores */"), 1u) << src;
  const auto info = p->compile(odd_rows(*p), "sm_90");
  EXPECT_GT(info.sass_instructions, 0);
  EXPECT_LT(info.sass_instructions, 1150) << "1224 with a branch per element and the output rounded twice";
}

TEST(RowsAlignment, NarrowRowKernelsMove16BytesPerAccess) {
  for (std::int64_t cols : {47, 64}) {  // odd rows through their windows; whole vectors as they are
    const Program* p = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, cols, packed(true)).at(0);
    const std::string src = p->cuda_source(cols % 8 ? odd_rows(*p) : p->default_specialization());
    EXPECT_EQ(occurrences(src, "tf_load_vec<tf_u16, 8>"), 1u) << src;
    EXPECT_EQ(occurrences(src, "tf_store_vec<tf_u16, 8>"), 1u) << src;
  }
  // Staged: the run copied into the stage and written out of it 16 bytes at a time (LayerNorm's w and b
  // read so too, every row at column 0 of the tile); rows gathered from the stage element by element. The
  // copy: the window's whole vectors; what is left before the matrix's end is loaded (at once where it is
  // a whole vector) and stored over them; out of the stage: the run's whole vectors, then its first and
  // last vector (each at once where all of it is the run's).
  for (std::int64_t cols : {47, 79}) {
    const Program* s = kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, cols, packed(false, true)).at(0);
    const std::string staged = s->cuda_source(odd_rows(*s));
    EXPECT_EQ(occurrences(staged, "tf_copy_async<16>("), 1u) << staged;
    EXPECT_EQ(occurrences(staged, "tf_load_vec<tf_u16, 8>"), 4u) << staged;
    EXPECT_EQ(occurrences(staged, "tf_store_vec<tf_u16, 8>"), 3u) << staged;
    const Program* n = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, cols, packed(false, true)).at(0);
    const std::string norm = n->cuda_source(odd_rows(*n));
    EXPECT_EQ(occurrences(norm, "tf_copy_async<16>("), 1u) << norm;
    EXPECT_EQ(occurrences(norm, "tf_load_vec<tf_u16, 8>"), 6u) << norm;
    EXPECT_EQ(occurrences(norm, "tf_store_vec<tf_u16, 8>"), 3u) << norm;
    const auto info = n->compile(odd_rows(*n), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  }
  // LayerNorm of odd rows: x and y in 16-byte runs; w and b follow each row's head, element by element.
  const Program* ln = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 79, packed(true)).at(0);
  const std::string src = ln->cuda_source(odd_rows(*ln));
  EXPECT_EQ(occurrences(src, "tf_load_vec<tf_u16, 8>"), 1u) << src;
  EXPECT_EQ(occurrences(src, "tf_store_vec<tf_u16, 8>"), 1u) << src;
  const auto info = ln->compile(odd_rows(*ln), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(RowsAlignment, StagedRowsAreWholeInAThreadWhereNothingIsBroadcastAlongThem) {
  // The softmax's narrow rows that are not whole vectors and whose tile gives every row a thread (64-byte
  // tiles: up to 32 halves) or two go through a stage by default, gathered whole into each thread: no
  // shuffles. f32 rows (staged at every packed width) take as much of a row per thread as the threads
  // allow. The run is copied into the stage without registers (cp.async, whole 16-byte vectors but for
  // what is left before the matrix's end) and written out as whole vectors but for its two ends.
  kernels::RowOptions opt{Backend::interpreter};
  const Program* p = kernels::softmax_programs(RowVariant::one_program, ir::DType::f16, 25, opt).at(0);
  EXPECT_EQ(p->name(), "softmax_staged_rows_128x32");
  std::string src = p->cuda_source(odd_rows(*p));
  EXPECT_NE(src.find("[128x32] reg(0,1)(0,2)(0,4)(0,8)(0,16) lane(1,0)(2,0)(4,0)(8,0)(16,0) warp(32,0)(64,0)"), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, "__shfl"), 0u) << src;
  // The run moves through the stage as storage words (no widening and rounding of what only passes
  // through), and the result's cast leaves its rounding to the stage's scatter.
  EXPECT_EQ(occurrences(src, "tf_copy_async<16>("), 1u) << src;  // the whole vectors (the rest goes through registers)
  EXPECT_EQ(occurrences(src, "tf_copy_wait();"), 1u) << src;
  EXPECT_EQ(occurrences(src, "tf_store_vec<tf_u16, 8>"), 3u) << src;  // the run's whole vectors out, and its ends
  EXPECT_EQ(occurrences(src, "/* rounded by its stores */"), 1u) << src;
  // The rows' stage offsets are clamped to where they provably lie: the [R, C] gather and scatter test
  // no bounds; the one test is the rest's store, whose offsets lie past the stage where the run fills it.
  EXPECT_EQ(occurrences(src, "< 4096u && v"), 1u) << src;
  const auto info = p->compile(odd_rows(*p), "sm_90");
  EXPECT_GT(info.sass_instructions, 0);
  EXPECT_LT(info.sass_instructions, 950) << "1384 with the run loaded into registers and stored back element-wise at its ends, "
                                            "masks per element and bounds tests per gathered element";
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 17, opt).at(0)->name(), "softmax_staged_rows_128x32");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 47, opt).at(0)->name(), "softmax_staged_rows_64x64");
  EXPECT_EQ(kernels::softmax_programs(RowVariant::one_program, ir::DType::bf16, 85, opt).at(0)->name(), "softmax_rows_32x128");
  const Program* f = kernels::softmax_programs(RowVariant::one_program, ir::DType::f32, 19, opt).at(0);
  EXPECT_EQ(f->name(), "softmax_staged_rows_64x32");
  src = f->cuda_source(odd_rows(*f));
  EXPECT_NE(src.find("[64x32] reg(0,1)(0,2)(0,4)(0,8) lane(0,16)(1,0)"), std::string::npos) << src;
  // LayerNorm broadcasts w and b along its rows. With the width an argument (as here) their masks do not
  // fold, and held per thread, each thread would hold every slot of them: its staged rows keep the
  // blocked layout of 16-byte runs (with the width compiled in, see
  // LayerNormRowsWholeInAThreadTakeTheirWidthCompiledIn), and only its half rows of 64-byte tiles go
  // through a stage.
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 25, opt).at(0)->name(), "layernorm_staged_rows_128x32");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::one_program, ir::DType::bf16, 47, opt).at(0)->name(), "layernorm_rows_64x64");
  const Program* n = kernels::layernorm_programs(RowVariant::one_program, ir::DType::f16, 25, packed(false, true)).at(0);
  EXPECT_EQ(n->name(), "layernorm_staged_rows_128x32");
  src = n->cuda_source(odd_rows(*n));
  EXPECT_NE(src.find("[128x32] reg(0,1)(0,2)(0,4)(32,0)(64,0) lane(0,8)(0,16)(1,0)"), std::string::npos) << src;
  for (std::int64_t cols : {1, 3, 17, 25, 31}) {
    check_softmax<half>(300, cols, RowVariant::one_program, false, false);  // the default rule
    check_softmax<bfloat16>(129, cols, RowVariant::one_program, false, false);
  }
}

TEST(RowsAlignment, StagedRowsOfEveryAlignment) {
  // One program per row (up to 32 KB of stage), and clusters of programs over wider rows, each piece
  // copied from the vector boundary before it.
  for (std::int64_t cols : {3, 2049, 8193, 20001, 44547})
    for (bool peel : {true, false}) {
      check_softmax<half>(3, cols, RowVariant::staged, peel);
      check_softmax<float>(2, cols, RowVariant::staged, peel);
    }
  // LayerNorm's staged rows: a head and a ragged piece, heads of every alignment over the rows, a window
  // that spans one more piece than the row, and clusters of 2 to 6 (32 KB stages: 16384 halves or 8192
  // floats per program).
  for (std::int64_t cols : {3, 2049, 4095, 8193, 20001, 44547})
    for (bool peel : {true, false}) {
      check_layernorm<bfloat16>(9, cols, RowVariant::staged, peel);
      check_layernorm<float>(5, cols, RowVariant::staged, peel);
    }
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::staged, ir::DType::f16, 20001, interpreter(true)).at(0)->name(),
            "layernorm_staged2_12288_peeled");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::staged, ir::DType::f32, 8192, interpreter(true)).at(0)->name(), "layernorm_staged1_8192");
  const Program* p = kernels::softmax_programs(RowVariant::staged, ir::DType::f16, 44547, interpreter(true)).at(0);
  EXPECT_EQ(p->name(), "softmax_staged3_16384_peeled");
  // Rows copied through windows take four warps, whole vectors two (staged_warps_rule).
  EXPECT_EQ(p->num_warps(), 4);
  EXPECT_EQ(kernels::softmax_programs(RowVariant::staged, ir::DType::f16, 44544, interpreter(true)).at(0)->num_warps(), 2);
  const std::string src = p->cuda_source(odd_rows(*p));
  // Every pass is three loops (for_row_pieces): the piece with the row's head, the whole pieces, the
  // ragged last piece. Whole runs: 16-byte asynchronous copies, stage reads and stores.
  EXPECT_EQ(occurrences(src, "tf_copy_async<16>("), 3u) << src;
  EXPECT_EQ(occurrences(src, "tf_load_vec<unsigned, 4>(reinterpret_cast<const unsigned*>(tf_stage0"), 9u) << src;  // three passes
  EXPECT_EQ(occurrences(src, "tf_store_vec<unsigned, 4"), 3u) << src;
  // The whole pieces go unmasked and untested: no mask per run, no stage bounds test.
  EXPECT_NE(src.find("for (int e0 = 0; e0 < 16; e0 += 8) tf_copy_async<16>("), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, "16384u"), 0u) << src;
}

namespace {

// The kernel a GPU launch of the family's automatic choice on `rows` x `cols` of `t` compiles (no GPU and
// no memory touched: InspectLaunches, the pointers 16-byte aligned fakes).
Inspection inspect_rows(bool layernorm, ir::DType t, std::int64_t rows, std::int64_t cols, const kernels::Tuning& tuning) {
  test::FakeDeviceMemory mem;
  kernels::RowOptions opt{Backend::gpu};
  opt.tuning = tuning;
  InspectLaunches capture;
  if (layernorm)
    kernels::detail::layernorm(RowVariant::automatic,
                               {mem(t, rows * cols), mem(t, cols), mem(t, cols), mem(t, rows * cols), mem(ir::DType::f32, rows),
                                mem(ir::DType::f32, rows), rows, cols},
                               opt);
  else
    kernels::detail::softmax(RowVariant::automatic, {mem(t, rows * cols), mem(t, rows * cols), rows, cols}, opt);
  return capture.launches().at(0);
}

}  // namespace

TEST(RowsAlignment, LayerNormRowsWholeInAThreadTakeTheirWidthCompiledIn) {
  // LayerNorm's staged half rows whole in a thread, as the automatic choice launches them (the width
  // compiled in): the masks of w and b fold to the row's columns, so each thread holds 25 of each, not
  // 32, and the kernel takes fewer registers than with the rows over four lanes (80) and no shuffles.
  // Rows over two threads (f32, 128-byte tiles) keep the blocked layout, as does the width an argument.
  const Inspection i = inspect_rows(true, ir::DType::f16, 1089876, 25, {});
  EXPECT_EQ(i.kernel, "layernorm_staged_rows_128x32");
  EXPECT_NE(i.cuda.find("[128x32] reg(0,1)(0,2)(0,4)(0,8)(0,16) lane(1,0)(2,0)(4,0)(8,0)(16,0) warp(32,0)(64,0)"), std::string::npos);
  EXPECT_EQ(occurrences(i.cuda, "__shfl"), 0u);
  EXPECT_EQ(i.compiled.spill_bytes, 0);
  EXPECT_LE(i.compiled.registers, 64);
  if (i.compiled.sass_instructions > 0) {
    EXPECT_LT(i.compiled.sass_instructions, 900) << "1120 with the rows over four lanes each";
  }
  kernels::Tuning argument;
  argument.constant_cols = false;
  const Inspection a = inspect_rows(true, ir::DType::f16, 1089876, 25, argument);
  EXPECT_NE(a.cuda.find("[128x32] reg(0,1)(0,2)(0,4)(32,0)(64,0) lane(0,8)(0,16)(1,0)"), std::string::npos);
  const Inspection f = inspect_rows(true, ir::DType::f32, 1433270, 19, {});
  EXPECT_EQ(f.kernel, "layernorm_staged_rows_64x32");
  EXPECT_EQ(f.cuda.find("[64x32] reg(0,1)(0,2)(0,4)(0,8) lane(0,16)(1,0)"), std::string::npos);
}

TEST(RowsAlignment, PackedRowsWithTheirWidthCompiledInFoldTheTilesPadding) {
  // Tuning::constant_cols (the rule: yes): the packed kernels compile the width in
  // (KernelOptions::constant_params), so the columns of a power-of-two tile past it, the masks against it
  // and the divisions by it fold away: fewer registers (and, where nvdisasm counts them, fewer
  // instructions) for row-by-row and staged rows than with the width an argument.
  struct Case { bool layernorm; ir::DType dtype; std::int64_t rows, cols; const char* kernel; const char* width; };
  for (const Case& c : {Case{true, ir::DType::bf16, 665251, 151, "layernorm_rows_16x256", "n"},
                        Case{false, ir::DType::bf16, 665251, 151, "softmax_rows_16x256", "n_cols"},
                        Case{true, ir::DType::f16, 172035, 65, "layernorm_rows_32x128", "n"},
                        Case{false, ir::DType::f16, 1089876, 25, "softmax_staged_rows_128x32", "n_cols"}}) {
    SCOPED_TRACE(std::string(c.kernel) + " " + std::to_string(c.cols) + " columns");
    kernels::Tuning on, off;
    on.constant_cols = true;
    off.constant_cols = false;
    const Inspection argument = inspect_rows(c.layernorm, c.dtype, c.rows, c.cols, off);
    const Inspection constant = inspect_rows(c.layernorm, c.dtype, c.rows, c.cols, on);
    const Inspection rule = inspect_rows(c.layernorm, c.dtype, c.rows, c.cols, {});
    EXPECT_EQ(rule.key, constant.key);
    EXPECT_EQ(argument.kernel, c.kernel);
    EXPECT_EQ(constant.kernel, c.kernel);
    EXPECT_NE(argument.key.find(std::string(" ") + c.width + ":div1 "), std::string::npos) << argument.key;
    EXPECT_NE(constant.key.find(std::string(" ") + c.width + "=" + std::to_string(c.cols) + " "), std::string::npos) << constant.key;
    EXPECT_NE(constant.cuda.find(std::to_string(c.cols) + " /* compiled in */;"), std::string::npos);
    EXPECT_EQ(argument.cuda.find("compiled in"), std::string::npos);
    EXPECT_EQ(constant.compiled.spill_bytes, 0);
    EXPECT_LT(constant.compiled.registers, argument.compiled.registers);
    if (argument.compiled.sass_instructions > 0) {
      EXPECT_LT(constant.compiled.sass_instructions, argument.compiled.sass_instructions);
    }
    // Another width of the same tile: the same kernel, another specialization.
    const Inspection next = inspect_rows(c.layernorm, c.dtype, c.rows, c.cols + 2, on);
    EXPECT_EQ(next.kernel, c.kernel);
    EXPECT_NE(next.key, constant.key);
    EXPECT_NE(next.cache_key, constant.cache_key);
  }
}
