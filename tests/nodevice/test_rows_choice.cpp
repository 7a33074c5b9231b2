// The automatic choice of the row kernels for few wide rows: on a GPU it splits rows over programs when
// the read-once variants would leave it short of programs (fewer than 2 per SM), in launch pairs over
// groups of rows that fit 80% of the L2, with partials in the library's workspace; many rows and narrow
// rows keep their variants, and the interpreter never splits on its own. The choice is checked on an
// inspected sm_90 of 132 SMs and 50 MB of L2, the split-row path itself in the interpreter against float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/runtime/view.hpp"
#include "kernels/layernorm/launchers.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/reference.hpp"
#include "kernels/rows/rules.hpp"
#include "kernels/rows/shapes.hpp"
#include "kernels/rows/workspace.hpp"
#include "tests/common/text.hpp"
#include "kernels/softmax/softmax.hpp"

using namespace tilefuse;
using kernels::RowVariant;

namespace {
const kernels::RowOptions kGpu{Backend::gpu};
const kernels::RowOptions kInterpreter{Backend::interpreter};

/// What layernorm_auto launches for `rows` rows of `cols` elements of H under `opt`, on fake device
/// addresses (nothing runs): each launch inspected as it would compile.
template <class H>
std::vector<Inspection> layernorm_launches(std::int64_t rows, std::int64_t cols, const kernels::RowOptions& opt) {
  auto* base = reinterpret_cast<H*>(std::uintptr_t{0x10000000});
  DeviceView<H> x(base, rows * cols), w(base, cols), y(base + rows * cols, rows * cols);
  auto* f = reinterpret_cast<float*>(base + 2 * rows * cols);
  kernels::RowStats<DeviceView<float>> st{DeviceView<float>(f, rows), DeviceView<float>(f + rows, rows)};
  InspectLaunches h200;
  kernels::layernorm_auto(x, w, w, y, st, rows, cols, 1e-5f, opt);
  return h200.launches();
}
}  // namespace

TEST(RowsChoice, FewWideRowsAreSplitOverTheGpu) {
  InspectLaunches h200;  // an sm_90 with 132 SMs and 50 MB of L2 when no GPU is present
  // 5 rows of 855125 f32: 5 programs on 132 SMs read once, or a split over ~106 programs per row.
  EXPECT_EQ(kernels::softmax_choice(5, 855125, 4, kGpu), RowVariant::split);
  EXPECT_EQ(kernels::layernorm_choice(5, 855125, 4, kGpu), RowVariant::split);
  EXPECT_EQ(kernels::layernorm_choice(200, 20000, 2, kGpu), RowVariant::split);
  // Many rows: one program (or cluster) per row fills the GPU.
  EXPECT_EQ(kernels::softmax_choice(4096, 855125, 4, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(264, 855125, 4, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::softmax_choice(1000, 131072, 2, kGpu), RowVariant::staged);
  // A staged cluster of 4 programs per row counts as 4: 66 rows of 131072 halves make 264 programs.
  EXPECT_EQ(kernels::softmax_choice(66, 131072, 2, kGpu), RowVariant::staged);
  EXPECT_EQ(kernels::softmax_choice(65, 131072, 2, kGpu), RowVariant::split);
  // Few narrow rows: less than two loop pieces a row is not worth a second kernel.
  EXPECT_EQ(kernels::softmax_choice(5, 8191, 4, kGpu), RowVariant::one_program);
  EXPECT_EQ(kernels::layernorm_choice(5, 8191, 2, kGpu), RowVariant::one_program);
  // The interpreter has no SMs to fill.
  EXPECT_EQ(kernels::softmax_choice(5, 855125, 4, kInterpreter), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(5, 855125, 4, kInterpreter), RowVariant::looped);
}

TEST(RowsChoice, WideRowsLoopWhereTheSecondPassFindsThemInTheL2) {
  // The H200 as its driver reports it: 132 SMs, 60 MB of L2, of which the rows in flight may fill 80%
  // (48 MB); the looped kernels' 256-thread programs count 4 a SM, 528 rows in flight.
  const Target sm90{"sm_90", true, 132, true, 232448, 60 << 20};
  InspectLaunches h200("sm_90", &sm90);
  // Rows one program holds (up to 32768 columns) stay one program a row: f32 and whole-vector rows of
  // both families, and the softmax's odd half rows whose window fits seven pieces (up to 28672).
  EXPECT_EQ(kernels::softmax_choice(19269, 20853, 2, kGpu), RowVariant::one_program);
  EXPECT_EQ(kernels::layernorm_choice(19269, 20856, 2, kGpu), RowVariant::one_program);
  EXPECT_EQ(kernels::layernorm_choice(1673, 29263, 4, kGpu), RowVariant::one_program);
  EXPECT_EQ(kernels::softmax_choice(5069, 32768, 2, kGpu), RowVariant::one_program);
  // Odd half rows past 16384 (LayerNorm) and past 28672 (softmax): 528 rows of 41.7 (62.3) KB in flight,
  // 22 (33) MB: the looped kernels read each row again from the L2.
  EXPECT_EQ(kernels::layernorm_choice(19269, 20853, 2, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::softmax_choice(11258, 31139, 2, kGpu), RowVariant::looped);
  // The softmax's rule asks row_pieces: a window just past 24576 whose row is narrower than the seven
  // pieces' unmasked six (24570-24575 halves) takes one tile of 32768, as past 28672; one column more
  // holds the six and takes seven pieces.
  for (std::int64_t cols = 24570; cols <= 24575; ++cols) {
    EXPECT_EQ(kernels::row_pieces(kernels::window_cols(cols, 2), cols), 1) << cols;
    EXPECT_EQ(kernels::softmax_choice(11258, cols, 2, kGpu), RowVariant::looped) << cols;
  }
  EXPECT_EQ(kernels::row_pieces(kernels::window_cols(24577, 2), 24577), 7);
  EXPECT_EQ(kernels::softmax_choice(11258, 24577, 2, kGpu), RowVariant::one_program);
  EXPECT_EQ(kernels::softmax_choice(11258, 28665, 2, kGpu), RowVariant::one_program);  // a window of 28672
  EXPECT_EQ(kernels::softmax_choice(11258, 28666, 2, kGpu), RowVariant::looped);
  // 528 rows of 72 KB in flight (38 MB): the looped kernels read each row again from the L2.
  EXPECT_EQ(kernels::softmax_choice(9000, 36000, 2, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(9000, 36000, 2, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::softmax_choice(845, 44547, 2, kGpu), RowVariant::looped);  // 528 x 89 KB = 47 MB
  // 528 rows of 115 KB (61 MB) are too many: the staged kernels read each row once.
  EXPECT_EQ(kernels::softmax_choice(2158, 57480, 2, kGpu), RowVariant::staged);
  EXPECT_EQ(kernels::layernorm_choice(2158, 57480, 2, kGpu), RowVariant::staged);
  EXPECT_EQ(kernels::layernorm_choice(591, 61744, 2, kGpu), RowVariant::staged);  // 65 MB
  // Fewer rows in flight, as the looped kernels' knobs ask: one program a SM (15 MB), or 512 threads a SM.
  kernels::Tuning one;
  one.looped_programs_per_sm = 1;
  EXPECT_EQ(kernels::softmax_choice(2158, 57480, 2, {Backend::gpu, nullptr, one}), RowVariant::looped);
  kernels::Tuning half;
  half.resident_threads = 512;
  EXPECT_EQ(kernels::layernorm_choice(2158, 57480, 2, {Backend::gpu, nullptr, half}), RowVariant::looped);
  // Rows too few for two looped programs a SM read once: 100 rows of 256 KB (25 MB) as staged clusters of 4.
  EXPECT_EQ(kernels::softmax_choice(100, 131072, 2, kGpu), RowVariant::staged);
  // Rows of 256-512 KB: a cluster of 8 stages of up to 64 KB each, for both families.
  EXPECT_EQ(kernels::layernorm_choice(347, 188871, 2, kGpu), RowVariant::staged);  // 377 KB
  EXPECT_EQ(kernels::softmax_choice(347, 188871, 2, kGpu), RowVariant::staged);
  EXPECT_EQ(kernels::layernorm_choice(1439, 131400, 2, kGpu), RowVariant::staged);  // 263 KB
  EXPECT_EQ(kernels::layernorm_choice(500, 131072, 4, kGpu), RowVariant::staged);   // 512 KB, the most
  // Too wide for a cluster of stages: looped, whatever the L2.
  EXPECT_EQ(kernels::layernorm_choice(500, 131073, 4, kGpu), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(1000, 300000, 4, kGpu), RowVariant::looped);
  // The rule on its own: on an interpreter (no L2) the looped kernels run.
  EXPECT_TRUE(kernels::looped_rereads_fit_l2(sm90, 528, 95000, 8));    // 50.2 MB of 50.3
  EXPECT_FALSE(kernels::looped_rereads_fit_l2(sm90, 528, 96000, 8));   // 50.7 MB
  EXPECT_FALSE(kernels::looped_rereads_fit_l2(sm90, 263, 1000, 8));
  EXPECT_TRUE(kernels::looped_rereads_fit_l2(Target{}, 1, 1 << 30, 8));
  EXPECT_EQ(kernels::softmax_choice(1000, 40000, 2, kInterpreter), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(1000, 40000, 2, kInterpreter), RowVariant::looped);
}

TEST(RowsChoice, OneTileRowsTakeOneProgramWhereItKeepsDramBusy) {
  // A row held as one tile of 32768 (row_pieces 1: whole-vector half rows and f32 rows past 28672) takes
  // a program alone on its SM, its loads and reductions one after the other: one program a row only where
  // the row's load at the SM's share of the bandwidth takes 2 us or more (one_tile_keeps_dram_busy). The
  // H100 and the H200 as their drivers report them (memory clock x 2 x bus width: 3.35 and 4.92 TB/s).
  const Target h100{"sm_90", true, 132, true, 232448, 50 << 20, std::int64_t{2619000} * 1000 * 2 * 5120 / 8};
  const Target h200{"sm_90", true, 132, true, 232448, 60 << 20, std::int64_t{3201000} * 1000 * 2 * 6144 / 8};
  {
    InspectLaunches on("sm_90", &h100);  // half rows of 58-64 KB: 2.3-2.6 us a row
    EXPECT_EQ(kernels::layernorm_choice(4096, 32768, 2, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::layernorm_choice(10899, 29856, 2, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::softmax_choice(10899, 29856, 2, kGpu), RowVariant::one_program);
  }
  {
    InspectLaunches on("sm_90", &h200);  // 1.6-1.8 us: the looped kernels (528 rows of 64 KB in flight, 34 MB)
    EXPECT_EQ(kernels::layernorm_choice(4096, 32768, 2, kGpu), RowVariant::looped);
    EXPECT_EQ(kernels::layernorm_choice(10899, 29856, 2, kGpu), RowVariant::looped);
    EXPECT_EQ(kernels::softmax_choice(10899, 29856, 2, kGpu), RowVariant::looped);
    EXPECT_EQ(kernels::softmax_choice(4096, 32768, 2, kGpu), RowVariant::looped);
    // f32 rows of one tile (115-128 KB: 3.1-3.5 us) and rows held as pieces (16 warps, two programs a SM)
    // stay one program a row.
    EXPECT_EQ(kernels::softmax_choice(4096, 32768, 4, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::layernorm_choice(1673, 29264, 4, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::softmax_choice(734, 16912, 2, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::layernorm_choice(19269, 20856, 2, kGpu), RowVariant::one_program);
    EXPECT_EQ(kernels::softmax_choice(11258, 28665, 2, kGpu), RowVariant::one_program);  // a window of seven pieces
  }
  // The rule alone: a GPU whose bandwidth is unknown and the interpreter keep the tile.
  EXPECT_TRUE(kernels::one_tile_keeps_dram_busy(h100, 28673 * 2));
  EXPECT_FALSE(kernels::one_tile_keeps_dram_busy(h200, 32768 * 2));
  EXPECT_TRUE(kernels::one_tile_keeps_dram_busy(h200, 28673 * 4));
  EXPECT_TRUE(kernels::one_tile_keeps_dram_busy(Target{"sm_90", true, 132, true, 232448, 60 << 20}, 2));
  EXPECT_TRUE(kernels::one_tile_keeps_dram_busy(Target{}, 2));
}

// Rows the looped kernels take whose 528 in flight overfill the L2 go to clusters of 2, 4 or 8 programs
// a row (looped_cluster_rule), the fewest that bring the rows in flight within 80% of the L2 (48 MB).
TEST(RowsChoice, LoopedRowsShareClustersWhereTheL2CannotHoldTheirRows) {
  const Target sm90{"sm_90", true, 132, true, 232448, 60 << 20};
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 19269, 41706, 8), 1);     // 528 x 42 KB = 22 MB
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 1186, 589632, 8), 8);     // 66 x 590 KB = 39 MB
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 1000, 200000, 8), 4);     // 132 x 200 KB = 26 MB (264: 53 MB)
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 1000, 120000, 8), 2);     // 264 x 120 KB = 32 MB
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 1000, 8 << 20, 8), 8);    // none fits: the most
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 263, 8 << 20, 8), 1);     // few rows: a cluster each leaves SMs idle
  EXPECT_EQ(kernels::looped_cluster_rule(Target{}, 1000, 8 << 20, 8), 1);  // the interpreter
  const Target no_clusters{"sm_80", true, 108, false, 166912, 40 << 20};
  EXPECT_EQ(kernels::looped_cluster_rule(no_clusters, 1186, 589632, 8), 1);
  // Fewer rows in flight as the knobs ask: one program a SM holds 132 rows of 200 KB on its own.
  kernels::Tuning one;
  one.looped_programs_per_sm = 1;
  EXPECT_EQ(kernels::looped_cluster_rule(sm90, 1000, 200000, 8, one), 1);
  // LayerNorm's automatic choice takes the looped kernel there (the softmax's takes its staged clusters of
  // 80 KB stages: StagedClustersLeaveTheirFamilysProgramsAnSm); Tuning::looped_cluster overrides the rule
  // (the programs an inspection of one row records: one row alone is few).
  InspectLaunches h200("sm_90", &sm90);
  kernels::RowOptions opt{Backend::gpu};
  EXPECT_EQ(kernels::layernorm_choice(1186, 147408, 4, opt), RowVariant::looped);
  EXPECT_EQ(kernels::softmax_choice(1186, 2000000, 4, opt), RowVariant::looped);  // past 16 stages
  EXPECT_EQ(kernels::softmax_programs(RowVariant::looped, ir::DType::f32, 147408, opt).at(0)->name(), "softmax_looped");
  opt.tuning.looped_cluster = 2;
  EXPECT_EQ(kernels::softmax_programs(RowVariant::looped, ir::DType::f32, 147408, opt).at(0)->name(), "softmax_looped_cluster2");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::looped, ir::DType::f32, 147409, opt).at(0)->name(), "layernorm_looped_cluster2_peeled");
  // Over fewer rows than the GPU holds clusters, a cluster per row: 5 rows in clusters of 4 start 20
  // programs (the rows in clusters, rounded up to one, would start 8: two clusters striding over 5 rows).
  opt.tuning.looped_cluster = 4;
  auto* f = reinterpret_cast<float*>(std::uintptr_t{0x10000000});
  DeviceView<float> x(f, 5 * 147408), y(f + 5 * 147408, 5 * 147408);
  InspectLaunches five("sm_90", &sm90);
  kernels::softmax_looped(x, y, 5, 147408, opt);
  ASSERT_EQ(five.launches().size(), 1u);
  EXPECT_EQ(five.launches()[0].kernel, "softmax_looped_cluster4");
  EXPECT_EQ(five.launches()[0].grid.x, 20);
}

// The staged kernels' own plan (auto_stage_split) and the softmax's choice of it past 8 stages of 64 KB:
// stages counted in programs an SM (stages_per_sm: 228 KB over each stage and the driver's 1 KB), and the
// waves of them the launch runs; LayerNorm keeps 8 stages of at most 64 KB.
TEST(RowsChoice, StagedClustersLeaveTheirFamilysProgramsAnSm) {
  // The automatic choice's stage in clusters of up to 8: the widest of whole granules leaving 3 an SM.
  EXPECT_EQ(kernels::stages_per_sm(65536), 3);
  EXPECT_EQ(kernels::stages_per_sm(69632), 3);   // 68 KB
  EXPECT_EQ(kernels::stages_per_sm(81920), 2);   // 80 KB
  EXPECT_EQ(kernels::stages_per_sm(114688), 2);  // 112 KB
  EXPECT_EQ(kernels::stages_per_sm(131072), 1);  // 128 KB
  EXPECT_EQ(kernels::auto_stage_cols(4, {}), 16384);
  EXPECT_EQ(kernels::auto_stage_cols(2, {}), 32768);
  kernels::Tuning big;
  big.stage_bytes = 98304;
  EXPECT_EQ(kernels::auto_stage_cols(4, big), 24576);
  EXPECT_EQ(kernels::auto_stage_cols(2, big), 32768);
  // The launch's plan: the fewest pieces up to 8; past them 8 while their stages leave 2 an SM, else 16.
  auto plan = [](std::int64_t cols, int bytes, std::int64_t piece, bool peel) {
    const auto p = kernels::auto_stage_split(cols, bytes, piece, peel);
    return std::to_string(p.splits) + "x" + std::to_string(p.stage_cols);
  };
  EXPECT_EQ(plan(1, 4, 8192, false), "1x4096");
  EXPECT_EQ(plan(40000, 4, 8192, false), "5x8192");
  EXPECT_EQ(plan(65536, 4, 8192, false), "8x8192");
  EXPECT_EQ(plan(131072, 4, 8192, false), "8x16384");
  EXPECT_EQ(plan(147408, 4, 8192, false), "8x20480");     // 80 KB: 2 an SM
  EXPECT_EQ(plan(177013, 4, 8192, true), "8x24576");      // a window of 22131: 96 KB
  EXPECT_EQ(plan(229376, 4, 8192, false), "8x28672");     // 112 KB
  EXPECT_EQ(plan(229377, 4, 8192, false), "16x16384");    // 8 would take 128 KB: 1 an SM
  EXPECT_EQ(plan(262144, 4, 8192, false), "16x16384");
  EXPECT_EQ(plan(262144, 2, 16384, false), "8x32768");    // 64 KB halves
  EXPECT_EQ(plan(588615, 2, 16384, true), "16x36864");    // 72 KB
  EXPECT_EQ(plan(655360, 4, 8192, false), "16x40960");
  // The softmax takes that plan where its stages leave 2 an SM and the launch runs 2 waves of them.
  const Target sm90{"sm_90", true, 132, true, 232448, 60 << 20};
  InspectLaunches h200("sm_90", &sm90);
  const kernels::RowOptions gpu{Backend::gpu};
  EXPECT_EQ(kernels::softmax_choice(1186, 147408, 4, gpu), RowVariant::staged);  // 9488 programs, 264 at once
  EXPECT_EQ(kernels::softmax_choice(121, 177013, 4, gpu), RowVariant::staged);   // 968
  EXPECT_EQ(kernels::softmax_choice(66, 147408, 4, gpu), RowVariant::staged);    // 528: two waves
  EXPECT_EQ(kernels::softmax_choice(65, 147408, 4, gpu), RowVariant::split);     // 520: fewer
  EXPECT_EQ(kernels::softmax_choice(59, 175856, 4, gpu), RowVariant::split);
  EXPECT_EQ(kernels::softmax_choice(38, 131649, 4, gpu), RowVariant::split);
  EXPECT_EQ(kernels::softmax_choice(242, 588615, 2, gpu), RowVariant::staged);   // 16 of 72 KB: 3 an SM, 396 at once
  EXPECT_EQ(kernels::softmax_choice(50, 588615, 2, gpu), RowVariant::staged);    // 800 programs
  EXPECT_EQ(kernels::softmax_choice(49, 588615, 2, gpu), RowVariant::split);     // 784
  EXPECT_EQ(kernels::softmax_choice(1024, 262144, 4, gpu), RowVariant::staged);  // 16 of 64 KB
  EXPECT_EQ(kernels::softmax_choice(1024, 655361, 4, gpu), RowVariant::looped);  // past 16 stages
  EXPECT_TRUE(kernels::softmax_staged_fits(121, 177013, 4, Backend::gpu));
  EXPECT_FALSE(kernels::softmax_staged_fits(59, 175856, 4, Backend::gpu));
  // The launches the choice makes: the plan's programs and stages, none spilling at the registers the
  // programs an SM its stages leave give ptxas.
  auto staged_name = [&](ir::DType dtype, std::int64_t cols) {
    const Program& p = *kernels::softmax_programs(RowVariant::staged, dtype, cols, gpu).at(0);
    const auto info = p.compile(p.default_specialization(), "sm_90");
    EXPECT_EQ(info.spill_bytes, 0) << p.name() << "\n" << info.ptxas_log;
    return p.name();
  };
  EXPECT_EQ(staged_name(ir::DType::f32, 147408), "softmax_staged8_20480");
  EXPECT_EQ(staged_name(ir::DType::f32, 177013), "softmax_staged8_24576_peeled");
  EXPECT_EQ(staged_name(ir::DType::f16, 588615), "softmax_staged16_36864_peeled");
  EXPECT_EQ(staged_name(ir::DType::f32, 262144), "softmax_staged16_16384");
  EXPECT_EQ(kernels::layernorm_programs(RowVariant::staged, ir::DType::f32, 262144, gpu).at(0)->name(), "layernorm_staged16_16384");
  // LayerNorm keeps clusters of up to 8 stages of 64 KB; without clusters or a GPU, neither goes wide.
  EXPECT_EQ(kernels::layernorm_choice(1186, 147408, 4, gpu), RowVariant::looped);
  EXPECT_EQ(kernels::layernorm_choice(121, 177013, 4, gpu), RowVariant::split);
  EXPECT_EQ(kernels::softmax_choice(1186, 147408, 4, kInterpreter), RowVariant::looped);
  EXPECT_FALSE(kernels::softmax_staged_fits(1186, 147408, 4, Backend::interpreter));
  const Target no_clusters{"sm_80", true, 108, false, 166912, 40 << 20};
  InspectLaunches a100("sm_80", &no_clusters);
  EXPECT_EQ(kernels::softmax_choice(1186, 147408, 4, gpu), RowVariant::looped);
}

// Tuning::looped_groups = 1 on an inspected sm_90 of 132 SMs and 50 MB of L2 (the looped kernels'
// 256-thread programs count 4 a SM: 528): groups of the fewest programs that keep the rows in flight
// within 80% of the L2, raised where the rows are too few to fill the 528, in one launch of whole groups.
TEST(RowsChoice, LoopedGroupsFillTheGpuWithinTheL2) {
  kernels::RowOptions opt{Backend::gpu};
  opt.tuning.looped_groups = 1;
  auto launch = [&](std::int64_t rows, std::int64_t cols, bool halves) {
    InspectLaunches h100;
    if (halves) {
      auto* h = reinterpret_cast<tilefuse::half*>(std::uintptr_t{0x10000000});
      DeviceView<tilefuse::half> x(h, rows * cols), y(h + rows * cols, rows * cols);
      kernels::softmax_looped(x, y, rows, cols, opt);
    } else {
      auto* f = reinterpret_cast<float*>(std::uintptr_t{0x10000000});
      DeviceView<float> x(f, rows * cols), y(f + rows * cols, rows * cols);
      kernels::softmax_looped(x, y, rows, cols, opt);
    }
    EXPECT_EQ(h100.launches().size(), 1u);
    return h100.launches().at(0);
  };
  // 5 rows of 3.4 MB: 46 programs a row would keep them within the L2, but leave 298 of 528 idle; 105 a row.
  const Inspection few = launch(5, 855125, false);
  EXPECT_EQ(few.kernel, "softmax_looped_groups_peeled");
  EXPECT_EQ(few.group, 105);
  EXPECT_EQ(few.grid.x, 525);
  EXPECT_EQ(few.grid_text(), "525 programs in resident groups of 105");
  // 242 rows of 1.2 MB: 15 programs a row keep 35 rows (41 MB) in flight; 35 groups stride over the 242.
  const Inspection many = launch(242, 588615, true);
  EXPECT_EQ(many.group, 15);
  EXPECT_EQ(many.grid.x, 525);
}

// The split LayerNorm's second kernel with rows sharing w and b: how many a program, how many programs.
TEST(RowsChoice, SplitCombineRowsCoverEachGroupOnce) {
  // 35 rows a vector of halves apart: classes of 5, 5, 5, 4, ...; 4 a program would leave 9 slots spare.
  EXPECT_EQ(kernels::split_combine_programs(35, 8, 4), 11);
  EXPECT_EQ(kernels::split_combine_programs(35, 8, 2), 19);
  EXPECT_EQ(kernels::split_combine_programs(32, 8, 4), 8);
  EXPECT_EQ(kernels::split_combine_programs(5, 8, 1), 5);
  EXPECT_EQ(kernels::split_combine_programs(6, 1, 4), 2);
  kernels::Tuning four;
  four.split_combine_rows = 4;
  EXPECT_EQ(kernels::split_combine_rows({}, 64, 64, 8), 1);  // the rule
  EXPECT_EQ(kernels::split_combine_rows(four, 32, 32, 8), 4);
  EXPECT_EQ(kernels::split_combine_rows(four, 35, 35, 8), 2);
  EXPECT_EQ(kernels::split_combine_rows(four, 32, 9, 8), 1);  // a last group of 9 holds one row a class
  EXPECT_EQ(kernels::split_combine_rows(four, 8, 8, 1), 4);
  EXPECT_EQ(kernels::split_combine_rows(four, 6, 6, 1), 2);
  // For every group size and step, the programs' first rows are distinct rows of the group, and the
  // rows of all their slots (spare ones aside) are each row once.
  for (int step : {1, 4, 8})
    for (int k : {1, 2, 4})
      for (std::int64_t g = 1; g <= 80; ++g) {
        const std::int64_t programs = kernels::split_combine_programs(g, step, k);
        std::vector<int> seen(static_cast<std::size_t>(g), 0);
        for (std::int64_t q = 0; q < programs; ++q) {
          const std::int64_t r0 = q % step + (q / step) * k * step;
          ASSERT_LT(r0, g) << "step " << step << " rows " << k << " group " << g;
          for (int i = 0; i < k; ++i)
            if (r0 + i * step < g) ++seen[static_cast<std::size_t>(r0 + i * step)];
        }
        for (std::int64_t r = 0; r < g; ++r) ASSERT_EQ(seen[static_cast<std::size_t>(r)], 1) << "step " << step << " rows " << k << " group " << g << " row " << r;
      }
  // 242 rows of 588615 halves on an inspected H100: every group's second kernel takes its rows 4 a program
  // (2 where a group's classes hold fewer spare), over 1/4 of the partials' chunks.
  auto* h = reinterpret_cast<tilefuse::half*>(std::uintptr_t{0x10000000});
  const std::int64_t rows = 242, cols = 588615;
  DeviceView<tilefuse::half> x(h, rows * cols), w(h, cols), y(h + rows * cols, rows * cols);
  auto* f = reinterpret_cast<float*>(std::uintptr_t{0x90000000});
  kernels::RowStats<DeviceView<float>> st{DeviceView<float>(f, rows), DeviceView<float>(f + rows, rows)};
  InspectLaunches h100;
  kernels::RowOptions opt = kGpu;
  opt.tuning.split_combine_rows = 4;
  kernels::layernorm_auto(x, w, w, y, st, rows, cols, 1e-5f, opt, RowVariant::split);
  const auto& launches = h100.launches();
  ASSERT_GE(launches.size(), 2u);
  std::int64_t covered = 0;
  for (std::size_t i = 0; i + 1 < launches.size(); i += 2) {
    const Inspection& partials = launches[i];
    const Inspection& combine = launches[i + 1];
    EXPECT_EQ(partials.kernel, "layernorm_partials_peeled");
    const int k = combine.kernel.rfind("layernorm_combine4_rows_peeled_", 0) == 0 ? 4 : 2;
    EXPECT_EQ(combine.kernel.rfind("layernorm_combine" + std::to_string(k) + "_rows_peeled_", 0), 0u) << combine.kernel;
    EXPECT_EQ(combine.grid.x, kernels::split_combine_programs(partials.grid.x, 8, k));
    EXPECT_GT(combine.grid.y, partials.grid.y);  // shorter chunks, whole pieces of them
    covered += partials.grid.x;
  }
  EXPECT_EQ(covered, rows);
}

// Clusters asked of a GPU that has none: an error that names the kernel, the knob and the GPU.
TEST(RowsChoice, LoopedClustersOnAGpuWithoutClustersAreAClearError) {
  const Target sm80{"sm_80", true, 108, false, 166912, 40 << 20};
  InspectLaunches a100("sm_80", &sm80);
  kernels::RowOptions opt{Backend::gpu};
  opt.tuning.looped_cluster = 4;
  for (bool softmax : {true, false}) {
    try {
      softmax ? (void)kernels::softmax_programs(RowVariant::looped, ir::DType::f32, 147408, opt)
              : (void)kernels::layernorm_programs(RowVariant::looped, ir::DType::f32, 147408, opt);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(softmax ? "softmax" : "layernorm"), std::string::npos) << what;
      EXPECT_NE(what.find("looped_cluster = 4"), std::string::npos) << what;
      EXPECT_NE(what.find("sm_80"), std::string::npos) << what;
    }
  }
}

TEST(RowsChoice, SplitGroupsFitTheL2AndTheWorkspace) {
  const Target h200{"sm_90", true, 132, true, 232448, 60 << 20};  // 80% of its L2: 48 MiB a group
  // 16 rows of 2^21 bf16 (4 MiB each, 64 MiB in all): at most 12 rows a group, so two groups of 8 rows,
  // 66 programs per row (528 per launch, 4 per SM).
  auto plan = kernels::split_plan(h200, 16, 1 << 21, 2, 4096, 1024);
  EXPECT_EQ(plan.splits, 66);
  EXPECT_EQ(plan.group, 8);
  // Half of them (32 MiB) are one group.
  EXPECT_EQ(kernels::split_plan(h200, 8, 1 << 21, 2, 4096, 1024).group, 8);
  // 125 rows of 737080 bf16 (1.4 MB each): at most 34 rows a group, so 4 groups of 32 rows, 16 programs
  // per row (512 a launch: 17 would start 544, 16 of them in a second wave).
  plan = kernels::split_plan(h200, 125, 737080, 2, 4096, 1024);
  EXPECT_EQ(plan.group, 32);
  EXPECT_EQ(plan.splits, 16);
  // Tuning::split_programs_per_sm: 16 per SM, 66 programs per row of the 32-row groups.
  kernels::Tuning sixteen;
  sixteen.split_programs_per_sm = 16;
  EXPECT_EQ(kernels::split_plan(h200, 125, 737080, 2, 4096, 1024, sixteen).splits, 66);
  // Tuning::split_group_bytes: groups of at most 6 MB, so 32 groups of 4 rows, 132 programs per row.
  kernels::Tuning six_mb;
  six_mb.split_group_bytes = 6 << 20;
  plan = kernels::split_plan(h200, 125, 737080, 2, 4096, 1024, six_mb);
  EXPECT_EQ(plan.group, 4);
  EXPECT_EQ(plan.splits, 132);
  six_mb.split_group_bytes = 1000;
  EXPECT_THROW(kernels::validate(six_mb), std::invalid_argument);
  // 5 rows of 855125 f32 (17 MB): one group, 105 programs per row (525 of the 528 an SM's 4 hold).
  plan = kernels::split_plan(h200, 5, 855125, 4, 4096, 1024);
  EXPECT_EQ(plan.splits, 105);
  EXPECT_EQ(plan.group, 5);
  // One row wider than the L2's share is a group of its own; splits never exceed whole pieces.
  plan = kernels::split_plan(h200, 3, 1 << 24, 4, 4096, 1024);
  EXPECT_EQ(plan.group, 1);
  EXPECT_EQ(kernels::split_plan(h200, 1, 10000, 4, 4096, 1024).splits, 3);
  // No launch starts more programs than 4 an SM: none waits for a second wave.
  for (std::int64_t rows : {5, 9, 17, 35, 41, 121, 242})
    for (std::int64_t cols : {131649, 588615, 1222495}) {
      const auto p = kernels::split_plan(h200, rows, cols, 2, 4096, 1024);
      EXPECT_LE(p.group * p.splits, 4 * 132) << rows << "x" << cols;
    }
  // Every plan's partials fit the workspace.
  for (std::int64_t rows : {1, 2, 7, 63, 263, 5000})
    for (std::int64_t cols : {8192, 100000, 1 << 22}) {
      const auto p = kernels::split_plan(h200, rows, cols, 2, 4096, 1024);
      EXPECT_LE(p.group * p.splits, kernels::workspace_partials(132)) << rows << "x" << cols;
      EXPECT_GE(p.group, 1);
    }
}

TEST(RowsChoice, SplitLaunchesAPairPerGroup) {
  InspectLaunches h200;
  auto* base = reinterpret_cast<bfloat16*>(std::uintptr_t{0x10000000});
  const std::int64_t rows = 16, cols = 1 << 21;
  DeviceView<bfloat16> x(base, rows * cols), y(base + rows * cols, rows * cols);
  kernels::softmax_auto(x, y, rows, cols, kGpu);
  const auto& launches = h200.launches();
  ASSERT_EQ(launches.size(), 4u);  // two groups of 8 rows (64 MiB, groups of at most 80% of a 50 or 60 MiB L2)
  EXPECT_EQ(launches[0].kernel, "softmax_partials");
  EXPECT_EQ(launches[1].kernel, "softmax_combine_128");  // 66 splits a row
  EXPECT_EQ(launches[2].kernel, "softmax_partials");
  // Every launch after the call's first may overlap the one before; the first waits for the stream.
  EXPECT_FALSE(launches[0].pdl);
  for (std::size_t i = 1; i < launches.size(); ++i) EXPECT_TRUE(launches[i].pdl) << launches[i].kernel;
}

TEST(RowsChoice, SplitLaunchesOverlapUnlessTheKnobSaysNot) {
  auto* base = reinterpret_cast<float*>(std::uintptr_t{0x10000000});
  const std::int64_t rows = 16, cols = 1 << 20;
  DeviceView<float> x(base, rows * cols), w(base, cols), y(base + rows * cols, rows * cols);
  kernels::RowStats<DeviceView<float>> st{DeviceView<float>(base, rows), DeviceView<float>(base + rows, rows)};
  for (bool overlap : {true, false}) {
    InspectLaunches h200;
    kernels::RowOptions opt = kGpu;
    opt.tuning.overlap_launches = overlap;
    kernels::layernorm_auto(x, w, w, y, st, rows, cols, 1e-5f, opt);
    const auto& launches = h200.launches();
    ASSERT_EQ(launches.size(), 4u);
    EXPECT_EQ(launches[0].kernel, "layernorm_partials");
    EXPECT_FALSE(launches[0].pdl);
    for (std::size_t i = 1; i < launches.size(); ++i) EXPECT_EQ(launches[i].pdl, overlap) << launches[i].kernel;
    // The partials wait for the combine kernel before them only to write (every store after the wait);
    // the combine kernel, before it reads anything.
    const std::string& partials = launches[0].cuda;
    const auto wait = partials.find("tf_gdc_wait();");
    ASSERT_NE(wait, std::string::npos);
    EXPECT_LT(partials.find("tf_gdc_launch_dependents();"), wait);
    EXPECT_LT(wait, partials.find("// store"));
    EXPECT_GT(wait, partials.find(" = load "));
    const std::string& combine = launches[1].cuda;
    EXPECT_LT(combine.find("tf_gdc_wait();"), combine.find(" = load "));
  }
}

TEST(RowsChoice, LayerNormRowsThroughWindowsReadShiftedCopiesOfWAndB) {
  // 4096 rows of 3597 bf16 (through windows of 3604), one row a program (Tuning::stride_rows off: the rule
  // strides over rows up to kNormStridedMaxCols, below): a small kernel writes w and b at the 8 offsets a
  // row can start at from its window, then the row kernel (overlapping it) reads them 16 bytes at a time.
  const std::int64_t rows = 4096, cols = 3597;
  kernels::RowOptions one_row = kGpu;
  one_row.tuning.stride_rows = false;
  {
    // Left to the rule, the window of one 4096-column tile goes to programs striding over rows.
    const auto launches = layernorm_launches<bfloat16>(rows, cols, kGpu);
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].kernel, "layernorm_strided_ahead_4096");
  }
  std::size_t vector_loads[2] = {0, 0};
  for (bool shifted : {true, false}) {
    kernels::RowOptions opt = one_row;
    opt.tuning.shift_affine = shifted;
    const auto launches = layernorm_launches<bfloat16>(rows, cols, opt);
    ASSERT_EQ(launches.size(), shifted ? 2u : 1u);
    if (shifted) {
      EXPECT_EQ(launches[0].kernel, "layernorm_shifted_affine");
      EXPECT_FALSE(launches[0].pdl);
      EXPECT_EQ(launches[1].kernel, "layernorm_shifted_4096");
      EXPECT_TRUE(launches[1].pdl);
    } else {
      EXPECT_EQ(launches[0].kernel, "layernorm_peeled_4096");
    }
    vector_loads[shifted] = test::occurrences(launches.back().cuda, "tf_load_vec<");
  }
  // w and b in runs of 8 where x is (a run's 16-byte load when its mask holds throughout), not element by
  // element.
  EXPECT_EQ(vector_loads[0], 1u);
  EXPECT_EQ(vector_loads[1], 3u);
  // Fewer rows than 32 copies' worth read w and b element by element: the copies would cost too much.
  const auto few = layernorm_launches<bfloat16>(255, cols, one_row);
  ASSERT_EQ(few.size(), 1u);
  EXPECT_EQ(few[0].kernel, "layernorm_peeled_4096");
  // f32 rows keep w and b element by element (4 loads per 16 bytes; measured slower with the copies).
  const auto f32 = layernorm_launches<float>(rows, cols, kGpu);
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_EQ(f32[0].kernel.rfind("layernorm_peeled_", 0), 0u) << f32[0].kernel;
}

TEST(RowsChoice, ShiftedF16TilesAskForFewerThreadsAnSm) {
  // 11259 rows of 7375 halves through windows of one 8192 tile (14.7 KB: past what strides over rows),
  // w and b from shifted copies: f16 tiles ask for kNormShiftedF16Resident threads an SM (3 programs of
  // 256), bf16 ones for kNormPeeledResident (4).
  auto launch_bounds = [&]<class H>() {
    const auto launches = layernorm_launches<H>(11259, 7375, kGpu);
    EXPECT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches.back().kernel, "layernorm_shifted_8192");
    const std::string& cuda = launches.back().cuda;
    const std::size_t at = cuda.find("__launch_bounds__(");
    return at == std::string::npos ? std::string() : cuda.substr(at, cuda.find(')', at) + 1 - at);
  };
  using kernels::layernorm_launch::kNormPeeledResident;
  using kernels::layernorm_launch::kNormShiftedF16Resident;
  EXPECT_EQ(launch_bounds.operator()<half>(), "__launch_bounds__(256, " + std::to_string(kNormShiftedF16Resident / 256) + ")");
  EXPECT_EQ(launch_bounds.operator()<bfloat16>(), "__launch_bounds__(256, " + std::to_string(kNormPeeledResident / 256) + ")");
}

TEST(RowsChoice, StagedLayerNormRowsThroughWindowsReadShiftedCopies) {
  // Staged rows of halves through windows (1646 of 75541 f16, a cluster of 5 stages per row; 347 of
  // 188871 f16, 8 stages of 47 KB): the copies are the call's first launch, and the staged kernel, launched
  // to overlap them, waits for them only before its third pass reads w and b 16 bytes at a time.
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{1646, 75541}, {347, 188871}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const auto launches = layernorm_launches<half>(rows, cols, kGpu);
    ASSERT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches[0].kernel, "layernorm_shifted_affine");
    EXPECT_FALSE(launches[0].pdl);
    EXPECT_EQ(launches[1].kernel.rfind("layernorm_staged_shifted", 0), 0u) << launches[1].kernel;
    EXPECT_TRUE(launches[1].pdl);
    const std::string& cuda = launches[1].cuda;
    const auto wait = cuda.find("tf_gdc_wait();");
    ASSERT_NE(wait, std::string::npos);
    EXPECT_GT(wait, cuda.find("tf_copy_async")) << "x's copy into the stage overlaps the copies of w and b";
    EXPECT_LT(wait, cuda.find("ptr_add %2,")) << "b's copy is read only after the wait";
    EXPECT_GE(test::occurrences(cuda.substr(wait), "tf_load_vec<unsigned, 4>(reinterpret_cast<const unsigned*>(v"), 2u)
        << "w and b in 16-byte loads";
  }
}

namespace {

template <class H>
void check_softmax_split(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("softmax split " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, 0.f, 3.f);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::softmax_auto(x, y, rows, cols, kInterpreter, RowVariant::split);  // the library's plan and workspace
  const auto ref = reference::softmax<H>(x, rows, cols);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<H>(y, ref, 1e-7, 4 * reference::tolerance<H>()), 1.0);
}

template <class H>
void check_layernorm_split(std::int64_t rows, std::int64_t cols) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("layernorm split " + std::to_string(rows) + "x" + std::to_string(cols) + " seed " + std::to_string(seed));
  auto x = reference::random_vector<H>(static_cast<std::size_t>(rows * cols), seed, 2.f, 1.f);
  auto w = reference::random_vector<H>(static_cast<std::size_t>(cols), seed + 1);
  auto b = reference::random_vector<H>(static_cast<std::size_t>(cols), seed + 2);
  std::vector<H> y(x.size(), reference::from_float<H>(std::nanf("")));
  kernels::RowStats<std::vector<float>> stats{std::vector<float>(rows, std::nanf("")), std::vector<float>(rows, std::nanf(""))};
  kernels::layernorm_auto(x, w, b, y, stats, rows, cols, 1e-5f, kInterpreter, RowVariant::split);
  std::vector<double> mean_ref, rstd_ref;
  const auto ref = reference::layernorm<H>(x, w, b, rows, cols, 1e-5, &mean_ref, &rstd_ref);
  EXPECT_LE(reference::relative_error<H>(y, ref), reference::tolerance<H>());
  EXPECT_LE(reference::worst_element<float>(stats.mean, mean_ref, 1e-6, 1e-5), 1.0);
  EXPECT_LE(reference::relative_error<float>(stats.rstd, rstd_ref), 1e-4);
}

}  // namespace

TEST(RowsChoice, SplitWithTheLibrarysWorkspaceMatchesFloat64) {
  for (std::int64_t cols : {1, 4096, 9001, 20000}) {
    check_softmax_split<float>(3, cols);
    check_softmax_split<half>(2, cols);
    check_layernorm_split<float>(3, cols);
    check_layernorm_split<bfloat16>(2, cols);
  }
}

TEST(RowsChoice, SplitRowsKeepEveryNaN) {
  // A NaN, a +inf or only -inf in a row makes the whole row NaN (torch's softmax), however many programs
  // share the row: a program's lane that saw the NaN and nothing else (its running max still -inf) once
  // dropped it from the row's sum.
  for (int cols : {20000, 100000})
    for (std::int64_t splits : {2, 5, 25}) {
      SCOPED_TRACE(std::to_string(cols) + " columns, " + std::to_string(splits) + " splits");
      std::vector<float> x(3 * static_cast<std::size_t>(cols)), y(x.size(), 0.f);
      for (int c = 0; c < cols; ++c) {
        const float wave = std::sin(0.37f * static_cast<float>(c));
        x[c] = c == cols / 2 ? std::nanf("") : wave;
        x[cols + c] = c == cols / 3 ? INFINITY : wave;
        x[2 * cols + c] = -INFINITY;
      }
      kernels::SplitScratch<std::vector<float>> scratch{std::vector<float>(3 * splits), std::vector<float>(3 * splits)};
      kernels::softmax_split(x, y, scratch, 3, cols, splits, kInterpreter);
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isnan(y[i])) << "row " << i / cols << " col " << i % cols;
    }
}

TEST(RowsChoice, PackedPlanHoldsNarrowRowsOneWayEach) {
  using kernels::packed_plan;
  const kernels::Tuning rule;
  // Whole vectors under 512-byte tiles: packed, read by vector, never staged.
  auto p = packed_plan(rule, 64, 2, false, false, false);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->width, 64);
  EXPECT_FALSE(p->staged || p->peeled || p->by_element || p->staged_store);
  // Whole vectors of a 512-byte tile: one row a program.
  EXPECT_FALSE(packed_plan(rule, 256, 2, false, false, false));
  // Odd half rows wider than two threads' rows: row by row, element by element; staged stores on request.
  p = packed_plan(rule, 151, 2, false, true, false);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->by_element && !p->staged && !p->peeled && !p->staged_store);
  kernels::Tuning stores;
  stores.stage_stores = true;
  EXPECT_TRUE(packed_plan(stores, 151, 2, false, true, false)->staged_store);
  // Narrow odd rows: staged (the softmax up to two threads a row, LayerNorm one).
  EXPECT_TRUE(packed_plan(rule, 47, 2, false, true, false)->staged);
  EXPECT_FALSE(packed_plan(rule, 47, 2, true, true, true)->staged);
  EXPECT_TRUE(packed_plan(rule, 25, 2, true, true, true)->staged);
  // Through windows when the family peels its packed rows: the tile holds the window.
  p = packed_plan(rule, 47, 2, true, true, true);
  EXPECT_TRUE(p->peeled && !p->by_element);
  EXPECT_EQ(p->width, 54);
  // The packing test takes the window where the family's rule peels rows it does not stage: 250 half
  // columns (a 256-column tile, 512 bytes) have a window of 257, whose tile is 1 KB: one row a program
  // for the softmax; LayerNorm's rule (no window under 2 KB) packs them, row by row.
  EXPECT_FALSE(packed_plan(rule, 250, 2, false, true, false));
  EXPECT_TRUE(packed_plan(rule, 250, 2, true, false, false)->by_element);
  EXPECT_TRUE(packed_plan(rule, 127, 4, false, true, false)->staged);  // staged: tested at its own width
}

TEST(RowsChoice, TheCarveoutKnobReachesEveryRowKernel) {
  const kernels::Tuning rule;
  kernels::Tuning driver;
  driver.shared_carveout = -1;
  // The rule: the most shared memory, staged or not.
  EXPECT_EQ(kernels::row_shape(rule, 2, 4096).carveout, kernels::kRowCarveout);
  EXPECT_EQ(kernels::staged_shape(rule, 32768, 2).carveout, 100);
  // The knob: every shape, held in registers, as pieces, packed, looped, split or staged.
  EXPECT_EQ(kernels::row_shape(driver, 2, 4096).carveout, -1);
  EXPECT_EQ(kernels::pieces_shape(driver, 2, 2048, 3).carveout, -1);
  EXPECT_EQ(kernels::packed_shape(driver, "n").carveout, -1);
  EXPECT_EQ(kernels::looped_shape(driver, 4096).carveout, -1);
  EXPECT_EQ(kernels::split_shape(driver, 4096).carveout, -1);
  EXPECT_EQ(kernels::staged_shape(driver, 32768, 2).carveout, -1);
  // And the kernel options it becomes.
  static constexpr const char* params[] = {"x"};
  EXPECT_EQ(kernels::row_shape(driver, 4, 1024).options(params).shared_carveout, -1);
}
