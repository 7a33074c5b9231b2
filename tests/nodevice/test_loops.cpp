// Loops with carried state: tracing, IR form, every pass, the interpreter and NVRTC; the looped
// (online) softmax against float64 at widths past the one-program limit.
#include <gtest/gtest.h>

#include <cmath>

#include <random>

#include "backend/codegen/cuda.hpp"
#include "backend/nvrtc/nvrtc.hpp"
#include "kernels/reference.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/rows/programs.hpp"
#include "kernels/rows/rules.hpp"
#include "kernels/softmax/programs.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/softmax_check.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

// Row sums over column blocks of 64: a carried f32 tile (per-lane partial sums) and a carried i32 count.
void block_sum(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> sums, tl::Ptr<tl::i32> blocks, tl::Scalar<tl::i32> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<64>();
  auto init = std::tuple{tl::full<tl::f32, 64>(0.0), tl::scalar<tl::i32>(0)};
  auto [acc, count] = tl::for_range(0, n, 64, init, [&](auto start, auto acc, auto count) {
    auto idx = start + cols;
    return std::tuple{acc + tl::load(x + row * n + idx, idx < n), count + 1};
  });
  tl::store(sums + row, tl::sum(acc));
  tl::store(blocks + row, count);
}

// out[i][j] = i * 10 + j for a 3 x 5 grid written by nested loops, with a swap of two carried scalars.
void nested(tl::Ptr<tl::i32> out, tl::Ptr<tl::i32> swapped) {
  tl::for_range(0, 3, 1, [&](auto i) {
    tl::for_range(0, 5, 1, [&](auto j) { tl::store(out + i * 5 + j, i * 10 + j); });
  });
  auto [a, b] = tl::for_range(0, 3, 1, std::tuple{tl::scalar<tl::i32>(1), tl::scalar<tl::i32>(2)},
                              [&](auto, auto a, auto b) { return std::tuple{b, a}; });  // odd count: swapped
  tl::store(swapped, a * 10 + b);
}

// Doubles a row in pieces of 256: the mask `from + cols < n` against the loop's own end.
void piecewise_double(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<256>();
  tl::for_range(0, n, 256, [&](auto from) {
    auto idx = from + cols;
    tl::store(out + idx, tl::load(in + idx, idx < n) * 2.0, idx < n);
  });
}

// kernels::for_row_pieces_ahead, the whole pieces loaded one ahead: the row's sum (forward), and
// out[i] = in[i] + the number of pieces visited before i's (last piece first, the looped kernels' second
// pass), over columns [head, head + n) of a buffer of exactly head + n elements, pieces from 0: neither
// the end pieces nor a look-ahead past the whole pieces may read outside the row.
void pieces_forward_and_back(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Ptr<tl::f32> sum, tl::Scalar<tl::i32> head,
                             tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<64>();
  auto zero = tl::scalar<tl::i32>(0);
  auto end = head + n;
  auto load = [&](tl::Scalar<tl::i32> from, const auto& mask) { return tl::load(in + from + cols, mask); };
  auto [acc] = kernels::for_row_pieces_ahead<64, true>(zero, head, end, load, std::tuple{tl::full<tl::f32, 64>(0.0)},
                                                       [&](auto, auto piece, const auto& in_row, auto acc) {
                                                         return std::tuple{acc + in_row.in_row(piece, 0.0)};
                                                       });
  tl::store(sum, tl::sum(acc));
  kernels::for_row_pieces_ahead<64, true, true>(zero, head, end, load, std::tuple{tl::scalar<tl::i32>(0)},
                                                [&](auto from, auto piece, const auto& in_row, auto visited) {
                                                  auto y = piece + tl::cast<tl::f32>(visited);
                                                  in_row.access([&](const auto&... mask) { tl::store(out + from + cols, y, mask...); });
                                                  return std::tuple{visited + 1};
                                                });
}

}  // namespace

TEST(Loops, PiecesLoadedOneAheadReadNothingPastTheRange) {
  Kernel<&pieces_forward_and_back> k("pieces_forward_and_back", {.num_warps = 2, .param_names = {"in", "out", "sum", "head", "n"}});
  for (int head : {0, 5})
    for (int n : {1, 58, 59, 63, 64, 65, 200, 251, 256}) {
      const int total = head + n;
      auto x = reference::random_vector<float>(total, 7);
      std::vector<float> out(total, std::nanf("")), sum(1, std::nanf(""));
      k.launch({{1}, Backend::interpreter}, x, out, sum, head, n);  // the interpreter throws on any access outside a buffer
      double want = 0;
      for (int i = head; i < total; ++i) want += x[i];
      EXPECT_NEAR(sum[0], want, 1e-4) << "head=" << head << " n=" << n;
      const int pieces = (total + 63) / 64;
      for (int i = 0; i < head; ++i) EXPECT_TRUE(std::isnan(out[i])) << "head=" << head << " n=" << n << " i=" << i;
      for (int i = head; i < total; ++i)
        EXPECT_EQ(out[i], x[i] + static_cast<float>(pieces - 1 - i / 64)) << "head=" << head << " n=" << n << " i=" << i;
    }
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(Loops, MasksAgainstTheLoopEndFoldWhereEveryPieceIsWhole) {
  // With n a multiple of the step, every piece the loop visits ends at or before n: the mask is true
  // throughout and disappears; with n only a multiple of 8 the last piece is ragged and the mask stays.
  Kernel<&piecewise_double> k("piecewise_double", {.num_warps = 2, .param_names = {"in", "out", "n"}});
  const std::string whole = k.program().cuda_source(Specialization{{16, 16, integer_divisibility(1024)}});
  EXPECT_EQ(test::occurrences(whole, "if (v"), 0u) << whole;
  const std::string ragged = k.program().cuda_source(Specialization{{16, 16, 8}});
  EXPECT_EQ(test::occurrences(ragged, "if (v"), 2u) << ragged;  // the load's and the store's run tests
  for (int n : {0, 5, 256, 1000, 1024}) {  // same results either way
    auto x = reference::random_vector<float>(std::max(1, n), 3);
    std::vector<float> y(std::max(1, n), -1.f);
    k.launch({{1}, Backend::interpreter}, x, y, n);
    for (int c = 0; c < n; ++c) EXPECT_EQ(y[c], 2 * x[c]) << "n=" << n << " c=" << c;
  }
}

TEST(Loops, CarriedTileAndScalar) {
  Kernel<&block_sum> k("block_sum", {.num_warps = 2, .param_names = {"x", "sums", "blocks", "n"}});
  for (int n : {0, 1, 63, 64, 65, 1000}) {
    const int rows = 3;
    auto x = reference::random_vector<float>(std::max(1, rows * n), 5);
    std::vector<float> sums(rows, -1.f);
    std::vector<std::int32_t> blocks(rows, -1);
    k.launch({{rows}, Backend::interpreter}, x, sums, blocks, n);
    for (int r = 0; r < rows; ++r) {
      double want = 0;
      for (int c = 0; c < n; ++c) want += x[r * n + c];
      EXPECT_NEAR(sums[r], want, 1e-4) << "n=" << n;
      EXPECT_EQ(blocks[r], (n + 63) / 64) << "n=" << n;
    }
  }
}

TEST(Loops, NestedLoopsAndSwappedCarries) {
  Kernel<&nested> k("nested", {.num_warps = 1});
  std::vector<std::int32_t> out(15, -1), swapped(1, -1);
  k.launch({{1}, Backend::interpreter}, out, swapped);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(out[i * 5 + j], i * 10 + j);
  EXPECT_EQ(swapped[0], 21);
}

TEST(Loops, IrPrintsRegionsAndVerifies) {
  Kernel<&block_sum> k("block_sum", {.num_warps = 2});
  const std::string text = ir::print(k.program().ir());
  EXPECT_NE(text.find(" = loop %"), std::string::npos) << text;
  EXPECT_NE(text.find("    yield %"), std::string::npos) << text;
  ir::verify(k.program().ir());
  // A body value used after the loop is an error.
  ir::Function bad = k.program().ir();
  for (auto& in : bad.body)
    if (in.op == ir::Op::loop) {
      ir::Instr use;
      use.op = ir::Op::neg;
      use.args = {in.body.back().result};
      bad.append(use, &bad.values[in.body.back().result]);
      break;
    }
  EXPECT_THROW(ir::verify(bad), std::logic_error);
}

TEST(Loops, GeneratedCodeCompilesWithoutSpills) {
  Kernel<&block_sum> k("block_sum", {.num_warps = 2});
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  EXPECT_NE(src.find("for (int v"), std::string::npos) << src;
  const auto c = nvrtc::compile(src, codegen::kernel_symbol(k.program().ir()), nvrtc::options_for("sm_90"));
  EXPECT_EQ(c.spill_stores + c.spill_loads, 0) << c.log;
  for (auto dtype : {ir::DType::f32, ir::DType::bf16}) {
    const Program* p = kernels::softmax_programs(kernels::RowVariant::looped, dtype, 20000, test::kInterpreter).at(0);
    const auto info = p->compile(p->default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
    EXPECT_EQ(info.stack_bytes, 0) << info.ptxas_log;
  }
}

// The looped kernels read a row's first pass under the L2's evict-last policy and the second pass
// streaming (Tuning::keep_rows_in_l2, rule yes); the split kernels' partials only when asked (rule no:
// measured slower); without, the same programs compile plain loads. The one-program kernel reads once.
TEST(Loops, FirstPassesKeepTheirRowsInL2) {
  using kernels::RowVariant;
  auto evict_last_loads = [](const Program* p) {
    EXPECT_NE(ir::print(p->ir()).find("load evict_last"), std::string::npos) << p->ir().name;  // the program asks
    return test::occurrences(p->cuda_source(p->default_specialization()), ", 3>(");  // the options decide
  };
  kernels::RowOptions keep = test::kInterpreter, plain = test::kInterpreter;
  keep.tuning.keep_rows_in_l2 = true;
  plain.tuning.keep_rows_in_l2 = false;
  for (auto dtype : {ir::DType::f32, ir::DType::bf16}) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    EXPECT_GT(evict_last_loads(kernels::softmax_programs(RowVariant::looped, dtype, 200000, test::kInterpreter).at(0)), 0u);
    EXPECT_GT(evict_last_loads(kernels::layernorm_programs(RowVariant::looped, dtype, 200000, test::kInterpreter).at(0)), 0u);
    EXPECT_EQ(evict_last_loads(kernels::softmax_programs(RowVariant::split, dtype, 200000, test::kInterpreter, 8).at(0)), 0u);
    EXPECT_EQ(evict_last_loads(kernels::layernorm_programs(RowVariant::split, dtype, 200000, test::kInterpreter, 8).at(0)), 0u);
    EXPECT_GT(evict_last_loads(kernels::softmax_programs(RowVariant::split, dtype, 200000, keep, 8).at(0)), 0u);
    EXPECT_GT(evict_last_loads(kernels::layernorm_programs(RowVariant::split, dtype, 200000, keep, 8).at(0)), 0u);
    EXPECT_EQ(evict_last_loads(kernels::softmax_programs(RowVariant::looped, dtype, 200000, plain).at(0)), 0u);
    EXPECT_EQ(evict_last_loads(kernels::layernorm_programs(RowVariant::looped, dtype, 200000, plain).at(0)), 0u);
    // The combine kernel rereads streaming; the one-program kernel reads once.
    const std::string combine = kernels::softmax_programs(RowVariant::split, dtype, 200000, keep, 8).at(1)->ir().name;
    EXPECT_EQ(ir::print(kernels::softmax_programs(RowVariant::split, dtype, 200000, keep, 8).at(1)->ir()).find("evict_last"), std::string::npos) << combine;
    EXPECT_EQ(ir::print(kernels::softmax_programs(RowVariant::one_program, dtype, 4096, test::kInterpreter).at(0)->ir()).find("evict_last"),
              std::string::npos);
  }
}

namespace {
// The max of each 128-column block of a row: a reduction inside a loop, over 4 warps.
void block_max(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> blocks) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<128>();
  tl::for_range(0, n, 128, [&](auto start) {
    auto idx = start + cols;
    tl::store(out + row * blocks + start / 128, tl::max(tl::load(x + row * n + idx, idx < n, -tl::inf)));
  });
}
}  // namespace

TEST(Loops, ReductionInALoopWaitsBeforeTheNextIteration) {
  Kernel<&block_max> k("block_max", {.num_warps = 4});
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  // Each iteration reuses the reduction's shared slots: a barrier follows the reads.
  EXPECT_NE(src.find("acc = fmaxf(acc, tf_red"), std::string::npos) << src;
  const auto after_reads = src.find("\n", src.find("acc = fmaxf(acc, tf_red"));
  const std::string next_line = src.substr(after_reads + 1, src.find('\n', after_reads + 1) - after_reads - 1);
  EXPECT_EQ(next_line.find_first_not_of(' '), next_line.find("__syncthreads();")) << next_line;
  const int rows = 2, n = 300, blocks = 3;
  auto x = reference::random_vector<float>(rows * n, 9);
  std::vector<float> out(rows * blocks);
  k.launch({{rows}, Backend::interpreter}, x, out, n, blocks);
  for (int r = 0; r < rows; ++r)
    for (int b = 0; b < blocks; ++b) {
      float want = -INFINITY;
      for (int c = b * 128; c < std::min(n, (b + 1) * 128); ++c) want = std::max(want, x[r * n + c]);
      EXPECT_EQ(out[r * blocks + b], want);
    }
  const auto c = nvrtc::compile(src, codegen::kernel_symbol(k.program().ir()), nvrtc::options_for("sm_90"));
  EXPECT_EQ(c.spill_stores + c.spill_loads, 0);
}

TEST(Loops, LoopedSoftmaxMatchesFloat64) {
  for (std::int64_t cols : {1, 7, 4096, 5000, 20000}) test::check_softmax_interpreter<float>(3, cols, kernels::RowVariant::looped);
  test::check_softmax_interpreter<bfloat16>(2, 131072, kernels::RowVariant::looped);
  test::check_softmax_interpreter<half>(2, 9000, kernels::RowVariant::looped);
}

// Rows shared by clusters of 2, 3 and 8 programs (Tuning::looped_cluster), the clusters striding over
// rows (two of them in the interpreter): chunks ragged or empty, rows through windows; the kernel
// compiles for sm_90 without spilling.
TEST(Loops, LoopedClusterSoftmaxMatchesFloat64) {
  for (int k : {2, 3, 8}) {
    kernels::Tuning t;
    t.looped_cluster = k;
    for (std::int64_t rows : {1, 2, 5}) test::check_softmax_interpreter<float>(rows, 9000, kernels::RowVariant::looped, 0, t);
    test::check_softmax_interpreter<float>(3, 7, kernels::RowVariant::looped, 0, t);  // every program but the first idle
    test::check_softmax_interpreter<bfloat16>(3, 40001, kernels::RowVariant::looped, 0, t);  // through windows
    test::check_softmax_interpreter<half>(2, 9001, kernels::RowVariant::looped, 0, t);
    kernels::RowOptions opt = test::kInterpreter;
    opt.tuning = t;
    const Program& p = *kernels::softmax_programs(kernels::RowVariant::looped, ir::DType::bf16, 40001, opt).at(0);
    EXPECT_EQ(p.name(), "softmax_looped_cluster" + std::to_string(k) + "_peeled");
    const auto info = p.compile(p.default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  }
  kernels::Tuning nine;
  nine.looped_cluster = 9;
  EXPECT_THROW(kernels::validate(nine), std::invalid_argument);
}

// Rows shared by resident groups of 2, 3 and 5 programs (Tuning::looped_groups; 1: the L2's count, 2 in
// the interpreter), two groups striding over the rows: chunks ragged or empty, rows through windows; the
// program is the looped cluster one with resident groups, and compiles for sm_90 without spilling.
TEST(Loops, LoopedGroupsSoftmaxMatchesFloat64) {
  for (int k : {1, 2, 3, 5}) {
    kernels::Tuning t;
    t.looped_groups = k;
    for (std::int64_t rows : {1, 2, 5}) test::check_softmax_interpreter<float>(rows, 9000, kernels::RowVariant::looped, 0, t);
    test::check_softmax_interpreter<float>(3, 7, kernels::RowVariant::looped, 0, t);  // every program but the first idle
    test::check_softmax_interpreter<bfloat16>(3, 40001, kernels::RowVariant::looped, 0, t);  // through windows
    test::check_softmax_interpreter<half>(2, 9001, kernels::RowVariant::looped, 0, t);
  }
  kernels::RowOptions opt = test::kInterpreter;
  opt.tuning.looped_groups = 3;
  const Program& p = *kernels::softmax_programs(kernels::RowVariant::looped, ir::DType::bf16, 40001, opt).at(0);
  EXPECT_EQ(p.name(), "softmax_looped_groups_peeled");
  const std::string src = p.cuda_source(p.default_specialization());
  EXPECT_NE(src.find("tf_group_combine("), std::string::npos) << "combines through global memory";
  EXPECT_EQ(src.find("__cluster_dims__"), std::string::npos);
  const auto info = p.compile(p.default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  kernels::Tuning too_many;
  too_many.looped_groups = 4097;
  EXPECT_THROW(kernels::validate(too_many), std::invalid_argument);
}

TEST(Loops, AutomaticVariantTakesEveryWidth) {
  // One program, staged in 32 KB and in 64 KB stages, looped.
  EXPECT_TRUE(kernels::softmax_staged_fits(2, 65536, 4, Backend::interpreter));
  EXPECT_TRUE(kernels::softmax_staged_fits(2, 131072, 4, Backend::interpreter));
  EXPECT_FALSE(kernels::softmax_staged_fits(2, 131073, 4, Backend::interpreter));
  EXPECT_TRUE(kernels::softmax_staged_fits(2, 262144, 2, Backend::interpreter));
  EXPECT_FALSE(kernels::softmax_staged_fits(2, 262144, 4, Backend::interpreter));
  for (std::int64_t cols : {300, 16384, 16385, 32768, 32769, 40000, 131072, 131073}) {
    const auto seed = std::random_device{}();
    SCOPED_TRACE("softmax_auto 2x" + std::to_string(cols) + " seed " + std::to_string(seed));
    auto x = reference::random_vector<float>(2 * cols, seed, 0.f, 3.f);
    std::vector<float> y(x.size(), std::nanf(""));
    kernels::softmax_auto(x, y, 2, cols, {Backend::interpreter});
    EXPECT_LE(reference::relative_error<float>(y, reference::softmax<float>(x, 2, cols)), reference::tolerance<float>());
  }
  // Asking for the one-program kernel above its limit is the clear error that names the alternatives.
  std::vector<float> x(kernels::kSoftmaxMaxCols + 1), y(x.size());
  try {
    kernels::softmax_auto(x, y, 1, kernels::kSoftmaxMaxCols + 1, {Backend::interpreter}, kernels::RowVariant::one_program);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("softmax_auto"), std::string::npos) << e.what();
  }
  // The looped kernel on a narrow row, on request.
  std::vector<float> a(300, 1.f), b(300);
  kernels::softmax_auto(a, b, 1, 300, {Backend::interpreter}, kernels::RowVariant::looped);
  EXPECT_FLOAT_EQ(b[0], 1.f / 300);
  // The cluster kernel on request, and its clear error above eight programs of 16384.
  kernels::softmax_auto(a, b, 1, 300, {Backend::interpreter}, kernels::RowVariant::cluster);
  EXPECT_FLOAT_EQ(b[299], 1.f / 300);
  std::vector<float> wide(131073), wide_out(131073);
  EXPECT_THROW(kernels::softmax_auto(wide, wide_out, 1, 131073, {Backend::interpreter}, kernels::RowVariant::cluster),
               std::invalid_argument);
}

TEST(Loops, LoopedSoftmaxOfAllMinusInfinityRowIsNaNFree) {
  // Masked lanes and -inf inputs must not turn the running sums into NaN.
  std::vector<float> x(5000, -1e30f), y(5000);
  x[4999] = 0.f;
  kernels::softmax_looped(x, y, 1, 5000, {Backend::interpreter});
  EXPECT_EQ(y[4999], 1.f);
  EXPECT_EQ(y[0], 0.f);
}

TEST(Loops, LoopedSoftmaxTakesMinusInfinityInputs) {
  // -inf elements (a causal mask's) leave a lane's running max and sum as they were, also before any
  // finite element has been seen: the one-exp update must not form -inf - -inf.
  std::vector<float> x(9000, -INFINITY), y(9000);
  x[8999] = 0.f;
  x[100] = std::log(3.f);
  kernels::softmax_looped(x, y, 1, 9000, {Backend::interpreter});
  EXPECT_FLOAT_EQ(y[100], 0.75f);
  EXPECT_FLOAT_EQ(y[8999], 0.25f);
  EXPECT_EQ(y[0], 0.f);
  EXPECT_EQ(y[8998], 0.f);
}

TEST(Loops, LoopedSoftmaxProgramsStrideOverTheRows) {
  // Fewer programs than rows (what Tuning::looped_programs_per_sm asks for on the GPU): program p takes
  // rows p, p + 2, p + 4, ...
  const std::int64_t rows = 5, cols = 5000;
  auto x = reference::random_vector<float>(rows * cols, 77, 0.f, 3.f);
  std::vector<float> y(x.size(), std::nanf(""));
  Kernel<&kernels::softmax_looped_program<tl::f32, 4096>> looped("softmax_looped", {.num_warps = 8});
  looped.launch({{2}, Backend::interpreter}, x, y, cols, cols, rows);
  EXPECT_LE(reference::relative_error<float>(y, reference::softmax<float>(x, rows, cols)), reference::tolerance<float>());
}

namespace {
template <class H>
void check_split(std::int64_t rows, std::int64_t cols, std::int64_t splits) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax_split " + std::to_string(rows) + "x" + std::to_string(cols) + " splits " +
               std::to_string(splits) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(rows * cols, seed, 0.f, 3.f);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::SplitScratch<std::vector<float>> scratch{std::vector<float>(rows * splits), std::vector<float>(rows * splits)};
  kernels::softmax_split(x, y, scratch, rows, cols, splits, {Backend::interpreter});
  const auto ref = reference::softmax<H>(x, rows, cols);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(y, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}
}  // namespace

TEST(Loops, SplitRowSoftmaxMatchesFloat64) {
  check_split<float>(3, 1, 1);
  check_split<float>(3, 5000, 2);
  check_split<float>(2, 20001, 3);   // a width that is not a multiple of the split or the piece
  check_split<float>(2, 9000, 8);    // more splits than pieces: some programs get no columns
  check_split<bfloat16>(2, 131072, 16);
}

TEST(Loops, SplitRowSoftmaxRejectsBadSplits) {
  std::vector<float> x(100), y(100);
  kernels::SplitScratch<std::vector<float>> scratch{std::vector<float>(2000), std::vector<float>(2000)};
  try {
    kernels::softmax_split(x, y, scratch, 1, 100, 2000, {Backend::interpreter});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("argument splits: expected 1 to 1024, got 2000"), std::string::npos) << e.what();
  }
}

TEST(Loops, SplitRowKernelsCompileWithoutSpills) {
  // The partials kernel and the combine kernel at its widest (1024 splits).
  const auto programs = kernels::softmax_programs(kernels::RowVariant::split, ir::DType::bf16, 1 << 22, test::kInterpreter, 1024);
  ASSERT_EQ(programs.size(), 2u);
  EXPECT_EQ(programs[1]->name(), "softmax_combine_1024");
  for (const Program* p : programs) {
    const auto info = p->compile(p->default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
    EXPECT_EQ(info.stack_bytes, 0) << info.ptxas_log;
  }
}
