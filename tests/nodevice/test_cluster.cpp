// Thread-block clusters: cluster reductions in the interpreter (programs in lockstep), the generated
// barriers and distributed shared memory reads, the verifier keeping them out of loops, and the cluster
// softmax against float64.
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
