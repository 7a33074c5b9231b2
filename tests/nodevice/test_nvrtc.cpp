// NVRTC without a GPU: every sample kernel compiles for sm_90 with no spills; errors carry the log and
// the numbered source; the ptxas report is parsed.
#include <gtest/gtest.h>

#include "backend/cache/cache.hpp"
#include "backend/codegen/cuda.hpp"
#include "backend/nvrtc/nvrtc.hpp"
#include "dsl/tl.hpp"
#include "kernels/softmax/programs.hpp"
#include "tests/common/op_kernels.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

void expect_clean(const Program& p) {
  const auto info = p.compile(p.default_specialization(), "sm_90");
  EXPECT_GT(info.registers, 0) << p.name() << "\n" << info.ptxas_log;
  EXPECT_EQ(info.spill_bytes, 0) << p.name() << " spills:\n" << info.ptxas_log;
  EXPECT_EQ(info.stack_bytes, 0) << p.name() << " uses a stack frame:\n" << info.ptxas_log;
}

// The fused softmax and its five unfused kernels at every row tile.
void compile_all_softmax(ir::DType dtype) {
  for (std::int64_t block = 1; block <= kernels::kSoftmaxMaxCols; block *= 2) {
    expect_clean(test::softmax_program(dtype, block));
    for (const Program* p : kernels::softmax_unfused_programs(dtype, block, test::kInterpreter)) expect_clean(*p);
  }
}

}  // namespace

TEST(Nvrtc, EverySoftmaxKernelCompilesWithoutSpillsF32) { compile_all_softmax(ir::DType::f32); }
TEST(Nvrtc, EverySoftmaxKernelCompilesWithoutSpillsF16) { compile_all_softmax(ir::DType::f16); }
TEST(Nvrtc, EverySoftmaxKernelCompilesWithoutSpillsBf16) { compile_all_softmax(ir::DType::bf16); }

TEST(Nvrtc, PackedProgramsCompile) {
  const auto& p = test::softmax_program(ir::DType::f32, 128);
  ASSERT_EQ(p.num_warps(), 1);
  auto spec = p.default_specialization();
  spec.programs_per_block = 8;
  const std::string src = p.cuda_source(spec);
  EXPECT_NE(src.find("__launch_bounds__(256)"), std::string::npos);
  EXPECT_NE(src.find("int tf_num_programs_x)"), std::string::npos);
  EXPECT_NE(src.find("if (tf_program_x >= tf_num_programs_x) return;"), std::string::npos);
  const auto c = nvrtc::compile(src, codegen::kernel_symbol(p.ir()), nvrtc::options_for("sm_90"));
  EXPECT_EQ(c.spill_stores + c.spill_loads, 0);
}

TEST(Nvrtc, MinProgramsUnlessSpillingAsksOnlyWhereItChangesSomething) {
  // A row of 4096 f32 over 4 warps holds 32 elements a thread: 16 programs of 128 threads per SM leave it
  // 32 registers, which spills; 2 leave it 255, which ptxas's own choice fits already.
  using Softmax = Kernel<&kernels::softmax_program<tl::f32, 4096>>;
  const Softmax hard("softmax_hard", {.num_warps = 4, .min_programs_per_sm = 16});
  const auto spilled = hard.program().compile(hard.program().default_specialization(), "sm_90");
  EXPECT_NE(spilled.source.find("__launch_bounds__(128, 16)"), std::string::npos);
  EXPECT_GT(spilled.spill_bytes, 0) << spilled.ptxas_log;

  const Softmax soft("softmax_soft", {.num_warps = 4, .min_programs_per_sm = 16, .min_programs_unless_spilling = true});
  const auto dropped = soft.program().compile(soft.program().default_specialization(), "sm_90");
  EXPECT_NE(dropped.source.find("__launch_bounds__(128)"), std::string::npos) << dropped.source.substr(0, 2000);
  EXPECT_EQ(dropped.spill_bytes, 0) << dropped.ptxas_log;
  // What it asks for stays visible in the generated source; the compiled kernel is the one without it.
  EXPECT_NE(soft.program().cuda_source(soft.program().default_specialization()).find("__launch_bounds__(128, 16)"), std::string::npos);

  const Softmax met("softmax_met", {.num_warps = 4, .min_programs_per_sm = 2, .min_programs_unless_spilling = true});
  const auto unbounded = met.program().compile(met.program().default_specialization(), "sm_90");
  EXPECT_NE(unbounded.source.find("__launch_bounds__(128)"), std::string::npos);
  EXPECT_EQ(unbounded.spill_bytes, 0) << unbounded.ptxas_log;
  // Where the bound is kept (it changes the residency and costs no spill): see
  // RowsAlignment.PeeledSoftmaxAsksForTheResidencyOfWholeVectorRowsWhereItChangesSomething.
}

TEST(Nvrtc, TestKernelsCompile) {
  Kernel<&testkit::float_ops_program<tl::f16, 256>> f("float_ops", {.num_warps = 2});
  expect_clean(f.program());
  Kernel<&testkit::int_ops_program<256>> i("int_ops", {.num_warps = 4});
  expect_clean(i.program());
}

TEST(Nvrtc, CompileErrorCarriesLogAndNumberedSource) {
  const std::string bad = "extern \"C\" __global__ void k() {\n  int x = ;\n}\n";
  try {
    nvrtc::compile(bad, "k", nvrtc::options_for("sm_90"));
    FAIL() << "expected a CompileError";
  } catch (const nvrtc::CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'k'"), std::string::npos) << what;
    EXPECT_NE(what.find("   2 |   int x = ;"), std::string::npos) << what;
    EXPECT_FALSE(e.log().empty());
  }
}

TEST(Nvrtc, OptionsNameTheArchitecture) {
  const auto o = nvrtc::options_for("sm_90");
  EXPECT_NE(std::find(o.begin(), o.end(), "--gpu-architecture=sm_90"), o.end());
  const auto c = nvrtc::compile("extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }", "k", o);
  EXPECT_EQ(c.options, o);
  EXPECT_GT(c.cubin.size(), 100u);
  EXPECT_GT(c.registers, 0);
}

TEST(Nvrtc, ParsesResourceReport) {
  nvrtc::Compiled c;
  nvrtc::parse_resource_report(
      "ptxas info    : Function properties for k\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers", c);
  EXPECT_EQ(c.registers, 40);
  EXPECT_EQ(c.stack_bytes, 16);
  EXPECT_EQ(c.spill_stores, 8);
  EXPECT_EQ(c.spill_loads, 12);
}

// The kernel's instruction count is read off its CUBIN's code section: a row read element by element
// (an odd stride) takes more instructions than one read 16 bytes at a time, and anything that is not that
// kernel's CUBIN gives -1.
TEST(Nvrtc, CountsTheKernelsInstructions) {
  const Program& p = test::softmax_program(ir::DType::f32, 4096);
  const auto aligned = p.compile(Specialization{{16, 16, 4, 4}}, "sm_90"), odd = p.compile(Specialization{{16, 16, 1, 1}}, "sm_90");
  EXPECT_GT(aligned.sass_instructions, 100);
  EXPECT_GT(odd.sass_instructions, aligned.sass_instructions + 32) << "16 elements per thread, each loaded and stored alone";
  EXPECT_EQ(nvrtc::sass_instructions(aligned.cubin, codegen::kernel_symbol(p.ir())), aligned.sass_instructions);
  EXPECT_EQ(nvrtc::sass_instructions(aligned.cubin, "no_such_kernel"), -1);
  EXPECT_EQ(nvrtc::sass_instructions(std::vector<char>(100, 'x'), codegen::kernel_symbol(p.ir())), -1);
  const std::vector<char> cut(aligned.cubin.begin(), aligned.cubin.begin() + 80);  // the ELF header, no sections
  EXPECT_EQ(nvrtc::sass_instructions(cut, codegen::kernel_symbol(p.ir())), -1);
}

TEST(Nvrtc, PtxUsesVectorLoadsForAlignedRows) {
  const auto& p = test::softmax_program(ir::DType::f32, 4096);
  const std::string ptx = nvrtc::ptx(p.cuda_source(p.default_specialization()), codegen::kernel_symbol(p.ir()), "sm_90");
  const bool vector_load = ptx.find("ld.global.v4") != std::string::npos || ptx.find("ld.global.v2.u64") != std::string::npos ||
                           ptx.find("ld.global.v2.b64") != std::string::npos;
  EXPECT_TRUE(vector_load) << "no 16-byte global loads in the PTX";
  const bool vector_store = ptx.find("st.global.v4") != std::string::npos || ptx.find("st.global.v2.u64") != std::string::npos ||
                            ptx.find("st.global.v2.b64") != std::string::npos;
  EXPECT_TRUE(vector_store) << "no 16-byte global stores in the PTX";
}

// tl::Cache hints reach the IR, the generated source and the PTX: ld/st.global.cs for streaming,
// .cg for L2 only, an L2::cache_hint access under an evict-last policy for evict_last, on vector runs,
// masked element paths and scalars alike.
TEST(Nvrtc, CacheHintsReachThePtx) {
  Kernel<&testkit::hinted_copy_program<1024>> k("hinted_copy", KernelOptions{4, {"x", "h", "y", "h_out", "sums", "n"}});
  auto& p = k.program();
  const std::string ir_text = ir::print(p.ir());
  EXPECT_EQ(test::occurrences(ir_text, " streaming"), 2u) << ir_text;  // a load and a store each
  EXPECT_EQ(test::occurrences(ir_text, " l2_only"), 2u) << ir_text;
  EXPECT_EQ(test::occurrences(ir_text, " evict_last"), 2u) << ir_text;
  for (const auto& spec : {Specialization{{16, 16, 16, 16, 16, 1024}}, Specialization{{16, 16, 16, 16, 16, 1}}}) {
    const std::string src = p.cuda_source(spec);
    const std::string ptx = nvrtc::ptx(src, codegen::kernel_symbol(p.ir()), "sm_90");
    SCOPED_TRACE(spec.divisibility.back() == 1 ? "rows of odd length" : "aligned rows");
    EXPECT_NE(ptx.find("ld.global.cs"), std::string::npos);
    EXPECT_NE(ptx.find("ld.global.cg"), std::string::npos);
    EXPECT_NE(ptx.find("st.global.cs"), std::string::npos);
    EXPECT_NE(ptx.find("st.global.cg"), std::string::npos);
    EXPECT_NE(ptx.find("createpolicy.fractional.L2::evict_last"), std::string::npos);
    EXPECT_NE(ptx.find("ld.global.L2::cache_hint.v2.u64"), std::string::npos);
    EXPECT_NE(ptx.find("st.global.L2::cache_hint.v2.u64"), std::string::npos);
    EXPECT_EQ(test::occurrences(src, "tf_load_vec<unsigned, 4, 3>("), 1u) << src;
    EXPECT_EQ(test::occurrences(src, "tf_store_vec<unsigned, 4, 3>("), 1u) << src;
    if (spec.divisibility.back() == 1024) {
      EXPECT_EQ(test::occurrences(src, "tf_load_vec<float, 4, 1>("), 1u) << src;
      EXPECT_EQ(test::occurrences(src, "tf_store_vec<float, 4, 2>("), 1u) << src;
    } else {
      EXPECT_NE(src.find("tf_ld<1, float>("), std::string::npos) << src;  // element by element
    }
  }
}

// KernelOptions::l2_evict_last = false compiles the same program's evict_last accesses as plain ones.
TEST(Nvrtc, EvictLastCanBeTurnedOff) {
  KernelOptions opt{4, {"x", "h", "y", "h_out", "sums", "n"}};
  opt.l2_evict_last = false;
  Kernel<&testkit::hinted_copy_program<1024>> k("hinted_copy_plain", opt);
  auto& p = k.program();
  const std::string src = p.cuda_source(Specialization{{16, 16, 16, 16, 16, 1024}});
  const std::string ptx = nvrtc::ptx(src, codegen::kernel_symbol(p.ir()), "sm_90");
  EXPECT_EQ(ptx.find("L2::cache_hint"), std::string::npos);
  EXPECT_EQ(ptx.find("createpolicy"), std::string::npos);
  EXPECT_NE(ptx.find("ld.global.cs"), std::string::npos);  // the other hints stay
  EXPECT_EQ(test::occurrences(src, "tf_load_vec<unsigned, 4>("), 1u) << src;
}
