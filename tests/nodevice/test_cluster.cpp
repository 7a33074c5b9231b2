// Thread-block clusters and resident groups: cluster reductions in the interpreter (programs in
// lockstep), the generated barriers and distributed shared memory reads (or, over resident groups, the
// barrier and values in global memory), cluster reductions inside loops, and the cluster and resident
// softmax and LayerNorm against float64.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/interp/interp.hpp"
#include "dsl/tl.hpp"
#include "kernels/reference.hpp"
#include "kernels/softmax/softmax.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/softmax_check.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

// A program that sums one tile per program and then over its cluster, for the cluster checks below.
void cluster_total_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out) {
  auto pid = tl::program_id(0);
  auto total = tl::cluster_sum(tl::sum(tl::load(in + pid * 32 + tl::arange<32>())));
  auto top = tl::cluster_max(tl::max(tl::load(in + pid * 32 + tl::arange<32>())));
  tl::store(out + pid * 2, total);
  tl::store(out + pid * 2 + 1, top);
}

// Each program of the cluster runs as many iterations as its rank + 1: the programs part at the loop's
// cluster reduction, which the interpreter reports (on the GPU they would wait at the barrier).
void cluster_apart_program(tl::Ptr<tl::f32> out) {
  auto [s] = tl::for_range(0, tl::program_id(0) + 1, 1, std::tuple{tl::scalar<tl::f32>(0.0)}, [&](auto, auto acc) {
    return std::tuple{acc + tl::cluster_sum(tl::scalar<tl::f32>(1.0))};
  });
  tl::store(out + tl::program_id(0), s);
}

// One cluster reduction in a loop (the same slot pair every iteration) over the programs' values of
// `in`, accumulated: with values whose f32 sum depends on the order, the interpreter's rank order shows.
void cluster_loop_sum_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n) {
  auto [s] = tl::for_range(0, n, 1, std::tuple{tl::scalar<tl::f32>(0.0)}, [&](auto, auto acc) {
    return std::tuple{acc + tl::cluster_sum(tl::load(in + tl::program_id(0)))};
  });
  tl::store(out + tl::program_id(0), s);
}
}  // namespace

TEST(Cluster, SoftmaxReadOnceMatchesFloat64) {
  test::check_softmax_interpreter<float>(3, 100, kernels::RowVariant::cluster);      // one program per row: the one-program kernel
  test::check_softmax_interpreter<float>(3, 16385, kernels::RowVariant::cluster);    // two programs per row, pieces of 8200 (the last one shorter)
  test::check_softmax_interpreter<float>(2, 50001, kernels::RowVariant::cluster);    // four programs, a ragged last piece
  test::check_softmax_interpreter<half>(2, 70000, kernels::RowVariant::cluster);     // five programs: cluster sizes need not be powers of two
  test::check_softmax_interpreter<bfloat16>(2, 131072, kernels::RowVariant::cluster);
}

TEST(Cluster, ReductionsCombineTheClustersPrograms) {
  Kernel<&cluster_total_program> k("cluster_total", KernelOptions{1, {"in", "out"}, 0, 4});
  std::vector<float> in(8 * 32), out(16, std::nanf(""));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 32 + (i / 32) * 100);
  k.launch({{8}, Backend::interpreter}, in, out);
  for (int pid = 0; pid < 8; ++pid) {
    const int first = pid / 4 * 4;
    double sum = 0;
    for (int p = first; p < first + 4; ++p) sum += 32 * 100.0 * p + 496;
    EXPECT_EQ(out[2 * pid], static_cast<float>(sum)) << "program " << pid;
    EXPECT_EQ(out[2 * pid + 1], static_cast<float>(31 + 100 * (first + 3))) << "program " << pid;
  }
  // A grid that is not a multiple of the cluster is refused, naming the kernel.
  try {
    k.launch({{6}, Backend::interpreter}, in, out);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'cluster_total': grid x = 6 is not a multiple of its cluster size 4"),
              std::string::npos) << e.what();
  }
  // Clusters of up to 16 programs (Hopper's non-portable sizes) combine the same way; 17 is refused,
  // naming the kernel and the limit.
  Kernel<&cluster_total_program> sixteen("cluster_total16", KernelOptions{1, {"in", "out"}, 0, 16});
  std::vector<float> in32(32 * 32), out32(64, std::nanf(""));
  for (std::size_t i = 0; i < in32.size(); ++i) in32[i] = static_cast<float>(i % 32 + (i / 32) * 100);
  sixteen.launch({{32}, Backend::interpreter}, in32, out32);
  for (int pid = 0; pid < 32; ++pid) {
    const int first = pid / 16 * 16;
    double sum = 0;
    for (int p = first; p < first + 16; ++p) sum += 32 * 100.0 * p + 496;
    EXPECT_EQ(out32[2 * pid], static_cast<float>(sum)) << "program " << pid;
    EXPECT_EQ(out32[2 * pid + 1], static_cast<float>(31 + 100 * (first + 15))) << "program " << pid;
  }
  try {
    Kernel<&cluster_total_program> k17("cluster_total17", KernelOptions{1, {"in", "out"}, 0, 17});
    k17.launch({{17}, Backend::interpreter}, in32, out32);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'cluster_total17': cluster_size must be from 1 to 16, got 17"), std::string::npos) << e.what();
  }
}

TEST(Cluster, GeneratedCodeUsesClusterBarriersAndDistributedSharedMemory) {
  Kernel<&cluster_total_program> k("cluster_total", KernelOptions{1, {"in", "out"}, 0, 4});
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  EXPECT_NE(src.find("__cluster_dims__(4, 1, 1)"), std::string::npos) << src;
  EXPECT_NE(src.find("mapa.shared::cluster.u32"), std::string::npos) << src;
  // One barrier before each reduction's reads; the exit barrier is split: arrive after the last read, wait
  // as the last statement of the kernel (a block's slots stay readable until every block has read them).
  EXPECT_EQ(test::occurrences(src, "tf_cluster_sync();"), 2u) << src;
  EXPECT_EQ(test::occurrences(src, "tf_cluster_arrive();\n"), 1u) << src;
  EXPECT_NE(src.find("tf_cluster_wait();\n}\n"), std::string::npos) << src;
  EXPECT_GT(src.find("tf_cluster_arrive();\n"), src.rfind("tf_cluster_read(")) << src;
  // sm_90 compiles it (the PTX of mapa, ld.shared::cluster and barrier.cluster is accepted), no spills.
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  // f32 fits in its register budget; bf16 at three 512-thread programs per SM (40 registers) spills a few
  // bytes, which measured faster than 54 registers at two programs per SM. Anything more is a regression.
  const Program& single = *kernels::softmax_programs(kernels::RowVariant::cluster, ir::DType::f32, 20000, test::kInterpreter).at(0);
  EXPECT_EQ(single.name(), "softmax_cluster2_16384");
  const auto f32 = single.compile(single.default_specialization(), "sm_90");
  EXPECT_EQ(f32.spill_bytes, 0) << f32.ptxas_log;
  EXPECT_EQ(f32.stack_bytes, 0) << f32.ptxas_log;
  const Program& half = *kernels::softmax_programs(kernels::RowVariant::cluster, ir::DType::bf16, 131072, test::kInterpreter).at(0);
  EXPECT_EQ(half.name(), "softmax_cluster8_16384");
  const auto bf16 = half.compile(half.default_specialization(), "sm_90");
  EXPECT_LE(bf16.registers, 40) << bf16.ptxas_log;
  EXPECT_LE(bf16.spill_bytes, 32) << bf16.ptxas_log;
}

TEST(Cluster, ResidentClustersAreTheGpusToCount) {
  // The interpreter holds no clusters to count: 0, and nothing compiles (the strided launchers then keep
  // the GPC rule); on the GPU the driver counts (Gpu.DriverCountsResidentClusters).
  Kernel<&test::cluster_rows_program> k("resident_clusters", KernelOptions{1, {"in", "out", "rows", "size"}, 0, 4});
  std::vector<float> in(4 * 32, 1.0f), out(8);
  EXPECT_EQ(k.resident_cluster_programs(Backend::interpreter, in, out, 1, 4), 0);
  EXPECT_TRUE(k.program().specializations().empty());
}

TEST(Cluster, ReductionsInsideLoopsCombineEachIteration) {
  // Clusters striding over rows: every iteration's reductions combine that row's programs (the interpreter
  // runs each program of a cluster on a thread of its own, taking turns).
  for (int size : {1, 2, 3, 4}) {
    SCOPED_TRACE("clusters of " + std::to_string(size));
    Kernel<&test::cluster_rows_program> k("cluster_rows", KernelOptions{1, {"in", "out", "rows", "size"}, 0, size});
    const int rows = 7;
    std::vector<float> in = test::cluster_rows_input(rows, size);
    const auto expect = test::cluster_rows_expected(in, rows, size);
    for (int clusters : {1, 3, 7, 9}) {  // fewer clusters than rows, as many, more
      std::vector<float> out(expect.size(), std::nanf(""));
      k.launch({{clusters * size}, Backend::interpreter}, in, out, rows, size);
      for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expect[i], 1e-5 * (1 + std::abs(expect[i]))) << clusters << " clusters, element " << i;
    }
  }
}

TEST(Cluster, LoopedReductionsKeepTheCallersSettings) {
  // Rank order: 1e8 + 1 - 1e8 + 1 is 1 from rank 0 and 0 from the last rank (reordered_sums), so the
  // setting of the calling thread holds in the programs' threads.
  Kernel<&cluster_loop_sum_program> k("cluster_loop_sum", KernelOptions{1, {"in", "out", "n"}, 0, 4});
  std::vector<float> in{1e8f, 1.f, -1e8f, 1.f}, out(4, std::nanf(""));
  k.launch({{4}, Backend::interpreter}, in, out, 2);
  for (float v : out) EXPECT_EQ(v, 2.f);
  interp::set_reordered_sums(true);
  k.launch({{4}, Backend::interpreter}, in, out, 2);
  interp::set_reordered_sums(false);
  for (float v : out) EXPECT_EQ(v, 0.f);
}

TEST(Cluster, ProgramsThatPartAtALoopedReductionAreReported) {
  Kernel<&cluster_apart_program> k("cluster_apart", KernelOptions{1, {"out"}, 0, 2});
  std::vector<float> out(4);
  try {
    k.launch({{4}, Backend::interpreter}, out);
    ADD_FAILURE() << "no error";
  } catch (const interp::InterpreterError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'cluster_apart': the programs of a cluster reached different cluster reductions (rank 0 "
                                         "its end, rank 1 '"),
              std::string::npos) << e.what();
  }
  // A program's own error inside the loop stops the others too (no thread is left waiting).
  Kernel<&test::cluster_rows_program> rows("cluster_rows", KernelOptions{1, {"in", "out", "rows", "size"}, 0, 2});
  std::vector<float> in(2 * 32), small(4);
  EXPECT_THROW(rows.launch({{4}, Backend::interpreter}, in, small, 2, 2), interp::InterpreterError);
}

TEST(Cluster, LoopedReductionsAlternateSlotsAndArriveAfterTheLoop) {
  Kernel<&test::cluster_rows_program> k("cluster_rows", KernelOptions{1, {"in", "out", "rows", "size"}, 0, 4});
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  EXPECT_NE(src.find("unsigned tf_cluster_round = 0;"), std::string::npos) << src;
  EXPECT_EQ(test::occurrences(src, "[tf_cluster_round & 1u]"), 6u) << src;  // each reduction: write, read rank 0, read the rest
  EXPECT_EQ(test::occurrences(src, "++tf_cluster_round;"), 2u) << src;
  // The one arrival follows the loop, and the wait ends the kernel.
  EXPECT_EQ(test::occurrences(src, "  tf_cluster_arrive();"), 1u) << src;
  EXPECT_NE(src.find("\n  }\n  tf_cluster_arrive();"), std::string::npos) << src;
  EXPECT_GT(src.find("\n  }\n  tf_cluster_arrive();"), src.rfind("tf_cluster_read(")) << src;
  EXPECT_NE(src.find("tf_cluster_wait();\n}\n"), std::string::npos) << src;
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

// Over resident groups, reductions inside a loop take a round each (counted at run time), the same
// program's groups striding over rows: in the interpreter (a group runs as a cluster) every iteration
// combines its row's programs, and the source counts rounds instead of numbering reductions.
TEST(ResidentGroups, ReductionsInsideLoopsTakeARoundEach) {
  KernelOptions groups{1, {"in", "out", "rows", "size"}};
  groups.resident_groups = true;
  Kernel<&test::cluster_rows_program> k("cluster_rows_groups", groups);
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  EXPECT_NE(src.find("unsigned tf_group_round = 0;"), std::string::npos) << src;
  EXPECT_EQ(test::occurrences(src, "tf_group_slots, tf_group_round++, "), 2u) << src;
  EXPECT_EQ(src.find("tf_cluster_round"), std::string::npos) << src;
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  for (int size : {1, 5, 12}) {
    SCOPED_TRACE("groups of " + std::to_string(size));
    const int rows = 7;
    std::vector<float> in = test::cluster_rows_input(rows, size);
    const auto expect = test::cluster_rows_expected(in, rows, size);
    for (int count : {1, 3, 9}) {  // fewer groups than rows, more
      std::vector<float> out(expect.size(), std::nanf(""));
      LaunchConfig config({count * size}, Backend::interpreter);
      config.group = size;
      k.launch(config, in, out, rows, size);
      for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expect[i], 1e-5 * (1 + std::abs(expect[i]))) << count << " groups, element " << i;
    }
  }
}

TEST(Cluster, SoftmaxRefusesRowsWiderThanEightPrograms) {
  std::vector<float> x(131073), y(131073);
  try {
    kernels::softmax_cluster(x, y, 1, 131073, {Backend::interpreter});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the cluster limit of 131072"), std::string::npos) << e.what();
  }
}

namespace {

// What group_total_program writes for `programs` programs in groups of `group`, element i of program p
// being p * 100 + i % 32.
void expect_group_totals(const std::vector<float>& out, int programs, int group) {
  for (int pid = 0; pid < programs; ++pid) {
    const int first = pid / group * group;
    double sum = 0;
    for (int p = first; p < first + group; ++p) sum += 32 * 100.0 * p + 496;
    EXPECT_FLOAT_EQ(out[2 * pid], static_cast<float>(sum)) << "program " << pid;
    EXPECT_EQ(out[2 * pid + 1], static_cast<float>(31 + 100 * (first + group - 1))) << "program " << pid;
  }
}

}  // namespace

TEST(ResidentGroups, ReductionsCombineTheGroupsPrograms) {
  Kernel<&test::group_total_program> k("group_total", test::resident_group_options());
  for (const int group : {1, 3, 12}) {
    std::vector<float> in(24 * 32), out(48, std::nanf(""));
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 32 + (i / 32) * 100);
    LaunchConfig config({24}, Backend::interpreter);
    config.group = group;  // a launch's groups may take any size; the program does not change
    k.launch(config, in, out);
    expect_group_totals(out, 24, group);
  }
  // A grid that is not a whole number of groups is refused, naming the kernel and the group.
  std::vector<float> in(24 * 32), out(48);
  LaunchConfig ragged({24}, Backend::interpreter);
  ragged.group = 5;
  try {
    k.launch(ragged, in, out);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'group_total' combines over resident groups: expected a grid (x, 1, 1) with x a "
                                         "multiple of the group of 5 programs, got (24, 1, 1)"),
              std::string::npos) << e.what();
  }
  // Groups replace clusters: a kernel cannot ask for both.
  KernelOptions both = test::resident_group_options();
  both.cluster_size = 2;
  EXPECT_THROW((Kernel<&test::group_total_program>("group_total", both)), std::invalid_argument);
}

TEST(ResidentGroups, GeneratedCodeMeetsInGlobalMemory) {
  Kernel<&test::group_total_program> k("group_total", test::resident_group_options());
  const std::string src = k.program().cuda_source(k.program().default_specialization());
  // Each reduction takes the program's next round; no cluster barrier or distributed shared memory.
  EXPECT_NE(src.find("unsigned* tf_group_count, unsigned* tf_group_next, float* tf_group_values, int tf_group, int tf_group_slots)"),
            std::string::npos) << src;
  const std::string call = "tf_group_combine(tf_group_count, tf_group_next, tf_group_values, tf_group, tf_group_slots, ";
  EXPECT_EQ(test::occurrences(src, "= " + call), 2u) << src;
  EXPECT_EQ(test::occurrences(src, call + "tf_group_round++, "), 2u) << src;
  EXPECT_NE(src.find("unsigned tf_group_round = 0;"), std::string::npos) << src;
  EXPECT_EQ(src.find("__cluster_dims__"), std::string::npos) << src;
  EXPECT_EQ(src.find("mapa.shared::cluster"), std::string::npos) << src;
  const auto info = k.program().compile(k.program().default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  // The resident softmax and LayerNorm compile without spills at the stages they take.
  for (const ir::DType dtype : {ir::DType::f32, ir::DType::bf16}) {
    for (const Program* p : {kernels::softmax_programs(kernels::RowVariant::resident, dtype, 855125, test::kInterpreter).at(0),
                             kernels::layernorm_programs(kernels::RowVariant::resident, dtype, 855125, test::kInterpreter).at(0)}) {
      const auto c = p->compile(p->default_specialization(), "sm_90");
      EXPECT_EQ(c.spill_bytes, 0) << p->name() << "\n" << c.ptxas_log;
      EXPECT_EQ(c.stack_bytes, 0) << p->name() << "\n" << c.ptxas_log;
    }
  }
}

// The resident softmax in the interpreter: each row over as many 32 KB stages as it takes (f32: 8184
// columns each, 8176 through windows), in waves of two rows (the interpreter's), ragged last chunks.
TEST(ResidentGroups, SoftmaxMatchesFloat64) {
  test::check_softmax_interpreter<float>(5, 20000, kernels::RowVariant::resident);   // 3 programs a row, 3 waves
  test::check_softmax_interpreter<float>(3, 8184, kernels::RowVariant::resident);    // one program a row
  test::check_softmax_interpreter<float>(2, 16369, kernels::RowVariant::resident);   // through windows
  test::check_softmax_interpreter<half>(3, 40001, kernels::RowVariant::resident);    // 3 programs, odd halves
  test::check_softmax_interpreter<bfloat16>(1, 70000, kernels::RowVariant::resident);
  test::check_softmax_interpreter<float>(4, 7, kernels::RowVariant::resident);
}

// With Tuning::stride_stages: one launch, two groups in the interpreter striding over the rows through two
// stages in turn (rows ending on either stage, a group past the last row), every reduction in the loop.
TEST(ResidentGroups, StridedSoftmaxMatchesFloat64) {
  kernels::Tuning t;
  t.stride_stages = true;
  for (std::int64_t rows : {1, 2, 3, 6}) test::check_softmax_interpreter<float>(rows, 20000, kernels::RowVariant::resident, 0, t);
  test::check_softmax_interpreter<half>(5, 40001, kernels::RowVariant::resident, 0, t);  // odd halves, through windows
  test::check_softmax_interpreter<bfloat16>(3, 7, kernels::RowVariant::resident, 0, t);
  kernels::RowOptions opt{Backend::interpreter};
  opt.tuning = t;
  const auto programs = kernels::softmax_programs(kernels::RowVariant::resident, ir::DType::f16, 40001, opt);
  ASSERT_EQ(programs.size(), 1u);  // one launch for all the rows
  EXPECT_EQ(programs[0]->name(), "softmax_resident_strided3_16384_peeled");
  const auto info = programs[0]->compile(programs[0]->default_specialization(), "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
  // max and sum for each of the two rows an iteration takes
  EXPECT_EQ(test::occurrences(info.source, "tf_group_round++"), 4u) << info.source;
}
