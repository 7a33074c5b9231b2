// Shared-memory stages: tracing and IR, the interpreter's semantics (bounds, masks, unwritten elements),
// the generated code (barriers only where threads read each other's elements, asynchronous copies and one
// wait for them), NVRTC, and the staged softmax against float64 in the interpreter (the staged LayerNorm's
// checks sit with the other LayerNorm variants in test_layernorm_interp.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <random>

#include "backend/interp/interp.hpp"
#include "kernels/reference.hpp"
#include "tests/common/fake_memory.hpp"
#include "tests/common/op_kernels.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/softmax_check.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

// Reads a stage nobody wrote.
void unwritten_program(tl::Ptr<tl::f32> y) {
  auto cols = tl::arange<64>();
  tl::Stage<tl::f32, 64> stage;
  tl::store(y + cols, stage.load<64>(0));
}

KernelOptions stage_options() { return KernelOptions{2, {"x", "y", "z", "n", "at"}}; }

// x's whole 4-element vectors below n copied into a stage (the rest of it zero-filled), then what is left
// below n into the vector after them: with `second_copy` by a second copy (the two copies' writes to that
// vector race on the GPU), else loaded into registers and stored over the zeros (the store waits for the
// copy). The stage goes out whole as y.
template <bool SECOND_COPY>
void copy_then_rest_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::i32> n) {
  auto idx = tl::arange<64>();
  auto rest = tl::arange<4>();
  auto whole = (n / 4) * 4;
  tl::Stage<tl::f32, 64> stage;
  if constexpr (SECOND_COPY) {
    stage.copy(0, x + idx, idx < whole);
    stage.copy(whole, x + whole + rest, rest < n - whole);
  } else {
    auto tail = tl::load(x + whole + rest, rest < n - whole);
    stage.copy(0, x + idx, idx < whole);
    stage.store(whole, tail, rest < n - whole);
  }
  tl::store(y + idx, stage.load<64>(0));
}

}  // namespace

TEST(Stage, IrListsStagesAndVerifiesAccesses) {
  Kernel<&testkit::stage_program> k("stage", stage_options());
  const std::string ir = ir::print(k.program().ir());
  EXPECT_NE(ir.find("stage @0 : f32[512]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("stage_copy @0"), std::string::npos) << ir;
  EXPECT_NE(ir.find("stage_store @0"), std::string::npos) << ir;
  EXPECT_EQ(test::occurrences(ir, "stage_load @0"), 2u) << ir;
  // A stage access of another dtype, or of a stage that does not exist, fails verification.
  ir::Function bad = k.program().ir();
  bad.stages[0].dtype = ir::DType::f16;
  EXPECT_THROW(ir::verify(bad), std::logic_error);
  bad.stages.clear();
  EXPECT_THROW(ir::verify(bad), std::logic_error);
}

TEST(Stage, InterpreterCopiesStoresAndLoadsWithBounds) {
  Kernel<&testkit::stage_program> k("stage", stage_options());
  auto x = reference::random_vector<float>(256, 11);
  for (int n : {0, 100, 200, 256})
    for (int at : {0, 64, 256, 384, 448, 512, -64}) {
      SCOPED_TRACE("n " + std::to_string(n) + " at " + std::to_string(at));
      std::vector<float> y(256, std::nanf("")), z(128, std::nanf(""));
      k.launch({{1}, Backend::interpreter}, x, y, z, n, at);
      std::vector<double> ry, rz;
      testkit::stage_reference(x, n, at, ry, rz);
      for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], static_cast<float>(ry[i])) << "y[" << i << "]";
      for (int j = 0; j < 128; ++j) ASSERT_EQ(z[j], static_cast<float>(rz[j])) << "z[" << j << "]";
    }
}

TEST(Stage, CopiesInProgramsWith2DTilesTestEachRunOnce) {
  // Through the tile emitter, with `at` a multiple of 16 and n unknown: runs of 4 floats, each tested
  // against the stage's bounds once (a run lies wholly inside or outside it), copied at once where all of
  // it is below n, else element by element with no second bounds test.
  Kernel<&testkit::stage_copy_2d_program> k("stage_copy_2d", KernelOptions{2, {"x", "y", "w", "n", "at"}});
  const std::string src = k.program().cuda_source(Specialization{{16, 16, 16, 1, 16}});
  const std::size_t from = src.find("stage_copy @0"), to = src.find("tf_copy_wait();  //");
  ASSERT_LT(from, to) << src;
  const std::string copy = src.substr(from, to - from);
  EXPECT_NE(copy.find("tf_copy_async<16>("), std::string::npos) << copy;
  EXPECT_EQ(test::occurrences(copy, "< 512u"), 1u) << copy;
  auto x = reference::random_vector<float>(256, 12);
  for (int n : {0, 99, 256})
    for (int at : {0, 256, 448, -64, 510}) {
      SCOPED_TRACE("n " + std::to_string(n) + " at " + std::to_string(at));
      std::vector<float> y(512, std::nanf("")), w(256, std::nanf(""));
      k.launch({{1}, Backend::interpreter}, x, y, w, n, at);
      const auto ref = testkit::stage_copy_2d_reference(x, n, at);
      for (int i = 0; i < 512; ++i) ASSERT_EQ(y[i], static_cast<float>(ref[i])) << "y[" << i << "]";
      EXPECT_EQ(w, x);
    }
}

TEST(Stage, UnwrittenElementsReadAsNaNInTheInterpreter) {
  // Shared memory holds garbage until written; the interpreter makes such reads visible.
  Kernel<&unwritten_program> k("unwritten", KernelOptions{1, {"y"}});
  std::vector<float> y(64, 0.f);
  k.launch({{1}, Backend::interpreter}, y);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
}

TEST(Stage, BarriersOnlyWhereThreadsShareElements) {
  // stage_program reads 128-element tiles of a stage written in 256-element tiles: a barrier before
  // every access; its copy is waited for before the next access.
  Kernel<&testkit::stage_program> k("stage", stage_options());
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  EXPECT_NE(src.find("extern __shared__ __align__(16) unsigned char tf_shared[];"), std::string::npos) << src;
  EXPECT_NE(src.find("read across threads (a barrier before each access)"), std::string::npos) << src;
  EXPECT_EQ(test::occurrences(src, "  __syncthreads();\n"), 4u) << src;
  EXPECT_EQ(test::occurrences(src, "  tf_copy_wait();\n"), 1u) << src;
  // `at` is only known to be a multiple of 16 here, so each element is tested against the stage's bounds
  // and copied on its own (4 bytes, still asynchronous).
  EXPECT_NE(src.find("tf_copy_async<4>("), std::string::npos) << src;
  EXPECT_NE(src.find("(unsigned)(v4 + tid * 4 + e0) < 512u"), std::string::npos) << src;
  // The staged LayerNorm moves 2048-column tiles at multiples of 2048: every thread reads back only what it
  // copied, so its only barriers are its two block reductions, and it waits for the copies once, before
  // the first pass over the stage.
  const Program& ln = *kernels::layernorm_programs(kernels::RowVariant::staged, ir::DType::bf16, 12288, test::kInterpreter).at(0);
  const std::string lsrc = ln.cuda_source(ln.default_specialization());
  EXPECT_NE(lsrc.find("each thread reads back only what it wrote (no barriers)"), std::string::npos) << lsrc;
  EXPECT_EQ(test::occurrences(lsrc, "__syncthreads();"), 2u) << lsrc;
  EXPECT_EQ(test::occurrences(lsrc, "  tf_copy_wait();\n"), 1u) << lsrc;
  EXPECT_LT(lsrc.find("  tf_copy_wait();\n"), lsrc.find("stage_load")) << lsrc;
  EXPECT_NE(lsrc.find("tf_copy_async<16>("), std::string::npos) << lsrc;
  // Its loops run to min(n, 12288): every piece lies inside the stage (no bounds test) and, with n a
  // multiple of the 2048-column piece, no piece is ragged (no mask either, in the loop of the ragged last
  // piece, which then never runs).
  EXPECT_EQ(test::occurrences(lsrc, "12288u"), 0u) << lsrc;  // no `(unsigned)... < 12288u` test
  const int d = integer_divisibility(12288);
  const std::string whole = ln.cuda_source(Specialization{{16, 16, 16, 16, 16, 16, d, d, d, 1, 1}});  // chunk = n, one program
  EXPECT_EQ(test::occurrences(whole.substr(whole.find("__global__")), " ? "), 0u) << whole;
  EXPECT_EQ(test::occurrences(whole, "12288u"), 0u) << whole;
  // sm_90 compiles both; the LayerNorm (rows of whole vectors: 2 warps, staged_warps_rule) stays small
  // enough for the 9 programs per SM that 24 KB stages allow.
  EXPECT_EQ(k.program().compile(k.program().default_specialization(), "sm_90").spill_bytes, 0);
  EXPECT_EQ(ln.num_warps(), 2);
  const auto info = ln.compile(ln.default_specialization(), "sm_90");
  EXPECT_LE(info.registers, 65536 / (9 * 64)) << info.ptxas_log;
  EXPECT_LE(info.spill_bytes, 32) << info.ptxas_log;
}

TEST(Stage, StageBytesAreAlignedPerStage) {
  EXPECT_EQ(ir::stage_bytes({{ir::DType::bf16, 12288}}), 24576);
  EXPECT_EQ(ir::stage_bytes({{ir::DType::f16, 3}, {ir::DType::f32, 4}}), 32);
  EXPECT_EQ(ir::stage_offset({{ir::DType::f16, 3}, {ir::DType::f32, 4}}, 1), 16);
}

TEST(Stage, StagedSoftmaxMatchesFloat64) {
  // One program per row up to 8192 f32 / 16384 bf16 columns (32 KB stages), clusters above.
  for (std::int64_t cols : {1, 100, 2049, 8192, 20001}) test::check_softmax_interpreter<float>(2, cols, kernels::RowVariant::staged);
  test::check_softmax_interpreter<bfloat16>(2, 40000, kernels::RowVariant::staged);
  test::check_softmax_interpreter<half>(1, 16385, kernels::RowVariant::staged);
  test::check_softmax_interpreter<float>(2, 5000, kernels::RowVariant::staged, 3);  // explicit splits, the last program's piece ragged
}

TEST(Stage, StagedClustersOfSixteen) {
  // Tuning::staged_cluster past 8 programs a row: Hopper's non-portable clusters, in the interpreter
  // against float64 (whole-vector rows and rows through windows), and explicit splits of 12.
  kernels::Tuning t;
  for (int k : {9, 16}) {
    t.staged_cluster = k;
    test::check_softmax_interpreter<float>(2, 20001, kernels::RowVariant::staged, 0, t);
    test::check_softmax_interpreter<bfloat16>(3, 30000, kernels::RowVariant::staged, 0, t);
    test::check_softmax_interpreter<half>(2, 33333, kernels::RowVariant::staged, 0, t);
  }
  test::check_softmax_interpreter<half>(2, 50000, kernels::RowVariant::staged, 12);
  // As the GPU would launch the widest rows it is for (242 x 588615 f16: a 16th of a row is 36789 columns,
  // past the 32768 of the clusters of 8): 16 programs a row, stages of 36864 halves (72 KB, three
  // programs an SM), the non-portable cluster compiled in, no spills in either family.
  t.staged_cluster = 16;
  test::FakeDeviceMemory mem;
  kernels::RowOptions gpu{Backend::gpu};
  gpu.tuning = t;
  const std::int64_t rows = 242, cols = 588615;
  for (bool layernorm : {false, true}) {
    SCOPED_TRACE(layernorm ? "layernorm" : "softmax");
    InspectLaunches capture;
    const ir::DType h = ir::DType::f16;
    if (layernorm)
      kernels::detail::layernorm(kernels::RowVariant::staged,
                                 {mem(h, rows * cols), mem(h, cols), mem(h, cols), mem(h, rows * cols), mem(ir::DType::f32, rows),
                                  mem(ir::DType::f32, rows), rows, cols},
                                 gpu);
    else
      kernels::detail::softmax(kernels::RowVariant::staged, {mem(h, rows * cols), mem(h, rows * cols), rows, cols}, gpu);
    const Inspection& i = capture.launches().back();  // (LayerNorm's shifted copies of w and b launch first)
    EXPECT_EQ(i.grid.x, rows * 16) << i.kernel;
    EXPECT_EQ(i.shared_bytes, 36864 * 2) << i.kernel;
    EXPECT_NE(i.cuda.find("__cluster_dims__(16, 1, 1)"), std::string::npos) << i.kernel;
    EXPECT_EQ(i.compiled.spill_bytes, 0) << i.compiled.ptxas_log;
  }
}

TEST(Stage, StridedStagedSoftmaxMatchesFloat64) {
  // Programs (clusters) striding over rows through two stages in turn (Tuning::stride_stages): the
  // interpreter runs two programs or clusters, so odd and even row counts end on either stage, and a
  // cluster's next row past the matrix copies, reads and writes nothing.
  kernels::Tuning t;
  t.stride_stages = true;
  for (std::int64_t rows : {1, 2, 3, 6})
    for (std::int64_t cols : {100, 2049, 20001}) test::check_softmax_interpreter<float>(rows, cols, kernels::RowVariant::staged, 0, t);
  test::check_softmax_interpreter<bfloat16>(5, 40001, kernels::RowVariant::staged, 0, t);  // a cluster, chunks through windows
  test::check_softmax_interpreter<half>(3, 1027, kernels::RowVariant::staged, 0, t);
  test::check_softmax_interpreter<float>(5, 5000, kernels::RowVariant::staged, 3, t);  // explicit splits, the last piece ragged
  const Program& p = *kernels::softmax_programs(kernels::RowVariant::staged, ir::DType::bf16, 40001, [&] {
    kernels::RowOptions o = test::kInterpreter;
    o.tuning = t;
    return o;
  }()).at(0);
  EXPECT_EQ(p.name().rfind("softmax_staged_strided", 0), 0u) << p.name();
  const auto info = p.compile(p.default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  // Each stage's first read waits for its own copies only, the other stage's staying in flight.
  EXPECT_EQ(test::occurrences(info.source, "tf_copy_wait_groups<"), 2u) << info.source;
}

TEST(Stage, StagedSoftmaxTakesMinusInfinity) {
  std::vector<float> x(3 * 1000, 0.f), y(x.size(), std::nanf(""));
  for (int i = 0; i < 1000; i += 2) x[i] = -INFINITY;  // row 0: half -inf; row 2: all -inf but one
  for (int i = 2000; i < 3000; ++i) x[i] = i == 2500 ? 1.f : -INFINITY;
  kernels::softmax_staged(x, y, 3, 1000, {Backend::interpreter});
  for (int i = 0; i < 1000; ++i) EXPECT_FLOAT_EQ(y[i], i % 2 ? 1.f / 500 : 0.f);
  for (int i = 2000; i < 3000; ++i) EXPECT_EQ(y[i], i == 2500 ? 1.f : 0.f);
}

TEST(Stage, StagedKernelsRefuseRowsTheyCannotHold) {
  // `call` must throw std::invalid_argument whose message holds each of `texts`.
  auto refused = [](auto&& call, std::initializer_list<const char*> texts) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      for (const char* text : texts) EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  // Past 16 programs of kClusterStageMaxCols (the launch's own plan goes to 16 past 8 of kStageMaxCols).
  std::vector<float> wide(655361), wide_out(655361);
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(1), std::vector<float>(1)};
  refused([&] { kernels::layernorm_staged(wide, wide, wide, wide_out, stats, 1, 655361, 1e-5f, {Backend::interpreter}); },
          {"layernorm_staged: cols = 655361 exceeds the cluster limit of 655360 elements (16 programs of 40960; "
           "kernels::layernorm_looped takes rows of any width)"});
  // 8 programs asked for: at most 8 of kStageMaxCols.
  refused([&] { kernels::layernorm_staged(wide, wide, wide, wide_out, stats, 1, 262145, 1e-5f, {Backend::interpreter}, 8); },
          {"layernorm_staged: cols = 262145 exceeds the cluster limit of 262144 elements (8 programs of 32768"});
  // A cluster of 17, asked for by the splits argument or by Tuning::staged_cluster.
  refused([&] { kernels::layernorm_staged(wide, wide, wide, wide_out, stats, 1, 40000, 1e-5f, {Backend::interpreter}, 17); },
          {"layernorm_staged: argument splits: expected 0 (automatic) or 1 to 16"});
  kernels::RowOptions seventeen{Backend::interpreter};
  seventeen.tuning.staged_cluster = 17;
  refused([&] { kernels::softmax_staged(wide, wide_out, 1, 40000, seventeen); }, {"staged_cluster", "from 1 to 16"});
  refused([&] { kernels::softmax_staged(wide, wide_out, 1, 655361, {Backend::interpreter}); },
          {"softmax_staged: cols = 655361 exceeds the cluster limit of 655360 elements (16 programs of 40960"});
  refused([&] { kernels::softmax_staged(wide, wide_out, 1, 655361, {Backend::interpreter}, 16); },
          {"softmax_staged: cols = 655361 exceeds the cluster limit of 655360 elements (16 programs of 40960"});
}

TEST(Stage, GatherAndScatterInTheInterpreterAndTheGeneratedCode) {
  // 1D: offsets per lane, reversed and shifted past the stage's ends (dropped, read as other).
  Kernel<&testkit::gather_1d_program> g("gather_1d", KernelOptions{4, {"x", "y", "n", "at"}});
  const auto hx = reference::random_vector<float>(256, 5);
  for (int at : {0, 7, -9, 300})
    for (int n : {0, 100, 256}) {
      std::vector<float> y(256, std::nanf(""));
      g.launch({{1}, Backend::interpreter}, hx, y, n, at);
      const auto ref = testkit::gather_1d_reference(hx, n, at);
      for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], static_cast<float>(ref[i])) << "at " << at << " n " << n << " y[" << i << "]";
    }
  const std::string src = g.program().cuda_source(g.program().default_specialization());
  EXPECT_NE(src.find("(unsigned)"), std::string::npos) << src;  // the shifted offsets are tested against the stage
  // 2D (a program with 2D tiles): a transposing gather, a masked scatter back; the run in moves 16 bytes at a time.
  Kernel<&testkit::gather_2d_program<16, 32>> t("gather_2d", KernelOptions{4, {"x", "y", "z", "at"}});
  const auto hx2 = reference::random_vector<float>(512, 6);
  for (int at : {0, 5, -3}) {
    std::vector<float> y(512, std::nanf("")), z(512, std::nanf(""));
    t.launch({{1}, Backend::interpreter}, hx2, y, z, at);
    std::vector<double> ry, rz;
    testkit::gather_2d_reference(hx2, 16, 32, at, ry, rz);
    for (int i = 0; i < 512; ++i) ASSERT_EQ(y[i], static_cast<float>(ry[i])) << "at " << at << " y[" << i << "]";
    for (int i = 0; i < 512; ++i) ASSERT_EQ(z[i], static_cast<float>(rz[i])) << "at " << at << " z[" << i << "]";
  }
  const std::string src2 = t.program().cuda_source(t.program().default_specialization());
  EXPECT_EQ(test::occurrences(src2, "tf_store_vec<float, 4>(tf_stage0"), 1u) << src2;
  EXPECT_EQ(test::occurrences(src2, "__syncthreads();"), 3u) << src2;  // scatter -> gather -> scatter -> gather
  const auto info = t.program().compile(t.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(Stage, TwoStagesInTurnWaitOnlyForTheOneRead) {
  // double_buffer_program: in the loop, each stage's read waits for the older of two groups of copies
  // (the other stage's copy, issued just before, stays in flight); every iteration and the loop's entry
  // close their groups, so the bound holds from either; the kernel ends waiting for what is left.
  Kernel<&test::double_buffer_program> k("double_buffer", KernelOptions{2, {"in", "out", "n"}});
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  const std::size_t loop = src.find("  for (int v"), end = src.rfind("\n  }\n");
  ASSERT_NE(loop, std::string::npos) << src;
  const std::string body = src.substr(loop, end - loop);
  EXPECT_EQ(test::occurrences(body, "tf_copy_wait_groups<1>();"), 2u) << body;
  EXPECT_EQ(test::occurrences(body, "tf_copy_wait();"), 0u) << body;
  EXPECT_EQ(test::occurrences(src, "tf_copy_wait();"), 1u) << src;
  EXPECT_LT(body.find("tf_copy_commit();"), body.find("tf_copy_wait_groups<1>();")) << body;
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  // The interpreter's results: every block doubled, for grids of fewer programs than blocks and more.
  for (int n : {1, 7, 64})
    for (int programs : {1, 3, 100}) {
      auto x = reference::random_vector<float>(static_cast<std::size_t>(n) * 256, n);
      std::vector<float> y(x.size(), std::nanf(""));
      k.launch({{programs}, Backend::interpreter}, x, y, n);
      for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << n << " blocks, " << programs << " programs, element " << i;
    }
}

TEST(Stage, CopiesThatRaceForAnElementAreAnErrorInTheInterpreter) {
  // Two copies into one element with no load or store of the stage between them land in either order on
  // the GPU: the interpreter names the pair where their values differ (here the first copy's 0 and x's
  // value), and runs them where a store of the rest from registers waits for the copy instead.
  auto x = reference::random_vector<float>(64, 12);
  for (float& v : x) v += 10.f;  // never 0
  Kernel<&copy_then_rest_program<true>> racing("copy_then_copy", KernelOptions{1, {"x", "y", "n"}});
  Kernel<&copy_then_rest_program<false>> ordered("copy_then_store", KernelOptions{1, {"x", "y", "n"}});
  for (int n : {0, 4, 5, 7, 40, 43}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> y(64, std::nanf(""));
    if (n % 4 != 0) {
      try {
        racing.launch({{1}, Backend::interpreter}, x, y, n);
        ADD_FAILURE() << "no error";
      } catch (const interp::InterpreterError& e) {
        EXPECT_NE(std::string(e.what()).find("land in either order"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("copy_then_copy"), std::string::npos) << e.what();
      }
    } else {
      racing.launch({{1}, Backend::interpreter}, x, y, n);  // the rest is empty: the second copy writes 0 over 0
    }
    ordered.launch({{1}, Backend::interpreter}, x, y, n);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(y[i], i < n ? x[i] : 0.f) << "y[" << i << "]";
  }
}
