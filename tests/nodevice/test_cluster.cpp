// Thread-block clusters and resident groups: cluster reductions in the interpreter (programs in
// lockstep), the generated barriers and distributed shared memory reads (or, over resident groups, the
// barrier and values in global memory), the verifier keeping them out of loops, and the cluster and
// resident softmax and LayerNorm against float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

void cluster_in_loop_program(tl::Ptr<tl::f32> out) {
  auto [s] = tl::for_range(0, 4, 1, std::tuple{tl::scalar<tl::f32>(0.0)}, [&](auto, auto acc) {
    return std::tuple{acc + tl::cluster_sum(tl::scalar<tl::f32>(1.0))};
  });
  tl::store(out, s);
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
  EXPECT_THROW((Kernel<&cluster_total_program>("cluster_total", KernelOptions{1, {"in", "out"}, 0, 9})), std::invalid_argument);
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

TEST(Cluster, ReductionsInsideLoopsAreRejected) {
  // The verifier refuses it when the program is built (programs whose loops run different trip counts
  // would wait at the cluster barrier for ever).
  EXPECT_THROW((Kernel<&cluster_in_loop_program>("cluster_in_loop", KernelOptions{1, {"out"}, 0, 2})), std::logic_error);
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
  // Each reduction has its own row of the workspace; no cluster barrier or distributed shared memory.
  EXPECT_NE(src.find("unsigned* tf_group_count, unsigned* tf_group_next, float* tf_group_values, int tf_group, int tf_group_slots)"),
            std::string::npos) << src;
  const std::string call = "tf_group_combine(tf_group_count, tf_group_next, tf_group_values, tf_group, tf_group_slots, ";
  EXPECT_EQ(test::occurrences(src, "= " + call), 2u) << src;
  EXPECT_NE(src.find(call + "0, "), std::string::npos) << src;
  EXPECT_NE(src.find(call + "1, "), std::string::npos) << src;
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
