// Code generation: goldens of the generated CUDA (TILEFUSE_UPDATE_GOLDENS=1 rewrites them), determinism,
// and the vector-width decisions that alignment specialization drives.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backend/codegen/cuda.hpp"
#include "backend/codegen/prelude.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/passes/analysis/analysis.hpp"
#include "dsl/tl.hpp"
#include "tests/common/matrix_check.hpp"
#include "tests/common/programs.hpp"
#include "tests/common/text.hpp"

using namespace tilefuse;

namespace {

void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(TILEFUSE_GOLDEN_DIR) + "/" + name;
  if (knobs::update_goldens()) {
    std::ofstream(path) << text;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden " << path << " (run with TILEFUSE_UPDATE_GOLDENS=1)";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << "generated text differs from " << path;
}

// Generated CUDA as its golden holds it: the device helpers every kernel starts with (prelude::core, the
// text of backend/codegen/prelude/core.cuh) stand as one line naming them, so that a golden shows the
// kernel's own code and a change to the helpers does not touch every golden.
std::string without_prelude(std::string source) {
  const auto at = source.find(codegen::prelude::core);
  EXPECT_NE(at, std::string::npos) << "the generated source does not hold the core device helpers";
  if (at != std::string::npos) source.replace(at, std::string(codegen::prelude::core).size(), "// (backend/codegen/prelude/core.cuh)\n");
  // Kernels with dots carry the tensor-core helpers too (and the warpgroup MMA ones on sm_90).
  for (const auto& [text, name] : {std::pair{codegen::prelude::mma, "mma"}, {codegen::prelude::wgmma, "wgmma"}})
    if (const auto k = source.find(text); k != std::string::npos)
      source.replace(k, std::string(text).size(), std::string("// (backend/codegen/prelude/") + name + ".cuh)\n");
  return source;
}

}  // namespace

using test::occurrences;

TEST(Codegen, SoftmaxIrGolden) {
  expect_golden("softmax_f32_1024.ir", ir::print(test::softmax_program(ir::DType::f32, 1024).ir()));
}

TEST(Codegen, SoftmaxCudaGolden) {
  const auto& p = test::softmax_program(ir::DType::f32, 1024);
  expect_golden("softmax_f32_1024.cu", without_prelude(p.cuda_source(p.default_specialization())));
}

TEST(Codegen, Bf16SoftmaxCudaGolden) {
  const auto& p = test::softmax_program(ir::DType::bf16, 128);
  expect_golden("softmax_bf16_128.cu", without_prelude(p.cuda_source(Specialization{{16, 16, 2, 2}})));
}

// A program with dots as sm_90 runs it (test::dot_forms_program over one warpgroup): its loads copied into
// swizzled buffers, the wgmma of A and B read through descriptors, and the second dot's A packed from the
// first one's registers.
TEST(Codegen, WarpgroupMmaCudaGolden) {
  Kernel<&test::dot_forms_program<64, 64, 64, false, false, true>> k("dot_forms", KernelOptions{4});
  expect_golden("dot_forms_wgmma_sm90.cu", without_prelude(k.program().cuda_source(k.program().default_specialization(), "sm_90")));
}

TEST(Codegen, Deterministic) {
  const auto& p = test::softmax_program(ir::DType::f16, 4096);
  EXPECT_EQ(p.cuda_source(p.default_specialization()), p.cuda_source(p.default_specialization()));
}

TEST(Codegen, OneCommentPerStatement) {
  const auto& p = test::softmax_program(ir::DType::f32, 1024);
  const std::string src = p.cuda_source(p.default_specialization());
  for (const auto& in : p.ir().body) EXPECT_NE(src.find("// " + ir::print(p.ir(), in)), std::string::npos);
}

TEST(Codegen, AlignedRowsUseSixteenByteAccesses) {
  const auto& p = test::softmax_program(ir::DType::f32, 4096);
  const std::string src = p.cuda_source(Specialization{{16, 16, 4, 4}});  // stride % 4 == 0
  EXPECT_EQ(occurrences(src, "tf_load_vec<float, 4>("), 1u);
  EXPECT_EQ(occurrences(src, "tf_store_vec<float, 4>("), 1u);
}

TEST(Codegen, HalfRowsUseEightElementAccesses) {
  const auto& p = test::softmax_program(ir::DType::f16, 4096);
  const std::string src = p.cuda_source(Specialization{{16, 16, 8, 8}});
  // Loads move eight halves as four words, each widened in place (no 16-bit extraction per element).
  EXPECT_EQ(occurrences(src, "tf_load_vec<unsigned, 4>("), 1u);
  EXPECT_EQ(occurrences(src, "tf_load_vec<tf_u16"), 0u);
  EXPECT_NE(src.find("= tf_f16_lo(raw"), std::string::npos) << src;
  EXPECT_NE(src.find("= tf_f16_hi(raw"), std::string::npos) << src;
  // Stores round and pack two halves per word (cvt.rn.f16x2.f32), four words in one 16-byte access.
  EXPECT_EQ(occurrences(src, "tf_pack_f16x2("), 2u);  // the prelude's definition and the store
  EXPECT_EQ(occurrences(src, "tf_store_vec<unsigned, 4>("), 1u);
}

TEST(Codegen, UnalignedRowsFallBackToNarrowerAccesses) {
  const auto& p = test::softmax_program(ir::DType::f32, 4096);
  // stride divisible by 2 only: 8-byte rows, so runs of 2 floats.
  EXPECT_EQ(occurrences(p.cuda_source(Specialization{{16, 16, 2, 2}}), "tf_load_vec<float, 2>("), 1u);
  // odd stride: element by element.
  const std::string odd = p.cuda_source(Specialization{{16, 16, 1, 1}});
  EXPECT_EQ(occurrences(odd, "tf_load_vec"), 1u);  // only the helper's own definition
}

TEST(Codegen, SmallTilesMaskIdleThreads) {
  const auto& p = test::softmax_program(ir::DType::f32, 8);
  const std::string src = p.cuda_source(p.default_specialization());
  EXPECT_NE(src.find("const bool live8 = tid < 8;"), std::string::npos) << src;
}

TEST(Codegen, RejectsBadWarpCounts) {
  const auto& p = test::softmax_program(ir::DType::f32, 64);
  const auto analysis = passes::analyze(p.ir(), 96, {16, 16, 16, 16});
  EXPECT_THROW(codegen::cuda_source(p.ir(), analysis, codegen::Options{3}), std::invalid_argument);
}

namespace {
// A row copy whose mask is `row-relative index < bound` or, with Strided, `2 * index < bound` (not
// contiguous: every lane of a run must be tested).
template <bool Strided>
void masked_copy_program(tl::Ptr<tl::f16> in, tl::Ptr<tl::f16> out, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<1024>();
  auto mask = Strided ? cols * 2 < n : cols < n;
  tl::store(out + cols, tl::load(in + cols, mask, 0.0) * 2.0, mask);
}
}  // namespace

TEST(Codegen, ContiguousMasksTestOneLanePerRun) {
  Kernel<&masked_copy_program<false>> k("masked_copy", KernelOptions{2, {"in", "out", "n"}});
  // n odd (divisibility 1): a run can straddle the bound, so its last lane decides.
  const std::string src = k.program().cuda_source(Specialization{{16, 16, 1}});
  EXPECT_EQ(occurrences(src, "if (v5[e0 + 7]) {"), 2u) << src;  // the load and the store
  Kernel<&masked_copy_program<true>> strided("masked_copy_strided", KernelOptions{2, {"in", "out", "n"}});
  const std::string every = strided.program().cuda_source(Specialization{{16, 16, 16}});
  EXPECT_EQ(occurrences(every, "[e0 + 7]) {"), 2u) << every;
  EXPECT_EQ(occurrences(every, "[e0] && "), 2u) << every;  // all eight lanes tested
}

TEST(Codegen, HalfLoadsWidenAfterEveryRunIsIssued) {
  // Widening inside a run's branch would make each 16-byte access wait for the one before.
  Kernel<&masked_copy_program<false>> k("masked_copy", KernelOptions{2, {"in", "out", "n"}});
  const std::string src = k.program().cuda_source(Specialization{{16, 16, 16}});
  const auto gather = src.find("tf_load_vec<unsigned, 4>(");
  const auto widen = src.find("] = tf_f16_lo(raw");
  ASSERT_NE(gather, std::string::npos) << src;
  ASSERT_NE(widen, std::string::npos) << src;
  const auto branch_end = src.find("    }\n  }\n", gather);
  EXPECT_LT(branch_end, widen) << "widening happens inside the run loop:\n" << src;
}

TEST(Codegen, PositiveMultiplesOfTheTileDropTheMask) {
  EXPECT_EQ(integer_divisibility(8192), 8192);
  EXPECT_EQ(integer_divisibility(12288), 4096);
  EXPECT_EQ(integer_divisibility(0), 16);       // zero: no lower bound, so nothing above 16
  EXPECT_EQ(integer_divisibility(-8192), 16);   // negative: likewise
  EXPECT_EQ(integer_divisibility(1 << 20), 65536);
  Kernel<&masked_copy_program<false>> k("masked_copy", KernelOptions{2, {"in", "out", "n"}});
  // n = 2048: every lane of arange<1024> is below it, so neither access nor the mask test remains.
  const std::string full = k.program().cuda_source(Specialization{{16, 16, integer_divisibility(2048)}});
  EXPECT_EQ(occurrences(full, "if ("), 0u) << full;
  EXPECT_NE(full.find("v5[e] = true;"), std::string::npos) << full;
  // n = 1000 (divisible by 8): masked, one test per run.
  const std::string ragged = k.program().cuda_source(Specialization{{16, 16, integer_divisibility(1000)}});
  EXPECT_EQ(occurrences(ragged, "if (v5[e0]) {"), 2u) << ragged;
  // n = 512, a multiple of 512 but below the tile: still masked.
  const std::string short_row = k.program().cuda_source(Specialization{{16, 16, integer_divisibility(512)}});
  EXPECT_EQ(occurrences(short_row, "if (v5[e0]) {"), 2u) << short_row;
}

TEST(Codegen, BoundsThatAreMultiplesOfTheRunGiveOnePredicatePerRun) {
  // With n a multiple of 8 and runs of 8 aligned on 8, `index < n` is all true or all false on a run: every
  // lane compares the run's first index (one predicate per run, not one register per element), a run
  // outside the mask takes `other` without touching memory, and the store writes nothing there.
  Kernel<&masked_copy_program<false>> k("masked_copy", KernelOptions{2, {"in", "out", "n"}});
  const std::string full = k.program().cuda_source(Specialization{{16, 16, integer_divisibility(1000)}});
  const std::string src = full.substr(full.find("__global__"));  // the kernel, not the prelude
  EXPECT_NE(src.find("v5[e] = v3[e - e % 8] < v4[e - e % 8];"), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, "} else {"), 1u) << src;  // the load's fill; the store has no else
  EXPECT_EQ(occurrences(src, "*v"), 0u) << src;  // no element-wise access: only the 16-byte ones
  // Divisibility 4 < 8: lanes of a run can differ, so every lane keeps its own flag and access.
  const std::string four = k.program().cuda_source(Specialization{{16, 16, 4}});
  EXPECT_EQ(four.find("e - e % 8"), std::string::npos) << four;
  EXPECT_EQ(occurrences(four, "if (v5[e0 + 7]) {"), 2u) << four;
}

namespace {
// Lanes head .. head + n - 1 of a tile (a row through its window): the mask is an interval of the tile's
// index, and where(mask, x, 0) repeats the masked load's own mask and other, where(mask, x, 1) does not.
template <class T>
void window_program(tl::Ptr<T> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> head, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<2048>();
  auto mask = (cols >= head) & (cols < head + n);
  auto x = tl::cast<tl::f32>(tl::load(in + cols, mask, 0.0));
  tl::store(out + cols, tl::where(mask, x, 0.0) * 2.0 + tl::where(mask, x, 1.0), mask);
}
}  // namespace

TEST(Codegen, IntervalMasksAreHeldAsBits) {
  Kernel<&window_program<tl::bf16>> k("window", KernelOptions{4, {"in", "out", "head", "n"}});
  const std::string src = k.program().cuda_source(Specialization{{16, 16, 1, 1}});
  // The and of both bounds is one word of bits a thread (the compares it combines, unused, too).
  EXPECT_NE(src.find(", 8) & ~tf_run_below(f, "), std::string::npos) << src;
  EXPECT_NE(src.find("unsigned v"), std::string::npos) << src;
  EXPECT_EQ(occurrences(src, "[[maybe_unused]] const tf_bits v"), 3u) << src;
  // Read like a bool array by the run tests of the load (runs of 8 halves) and of the store (4 floats).
  EXPECT_NE(src.find("[e0 + 7]) {"), std::string::npos) << src;
  EXPECT_NE(src.find("[e0 + 3]) {"), std::string::npos) << src;
  // where(mask, x, 1) tests each run's bits once: a run wholly in the mask copies x, any other selects
  // lane by lane.
  EXPECT_EQ(occurrences(src, "if (run == tf_run_all(8)) {"), 1u) << src;
  EXPECT_NE(src.find(".w >> (r * 8)) & tf_run_all(8);"), std::string::npos) << src;
  // f32 runs (4 lanes) keep the select lane by lane: run tests there cost registers they did not repay.
  Kernel<&window_program<tl::f32>> f32_window("window_f32", KernelOptions{4, {"in", "out", "head", "n"}});
  const std::string f32_src = f32_window.program().cuda_source(Specialization{{16, 16, 1, 1}});
  EXPECT_NE(f32_src.find("[[maybe_unused]] const tf_bits v"), std::string::npos) << f32_src;
  EXPECT_EQ(f32_src.find("if (run == tf_run_all("), std::string::npos) << f32_src;
  // Not an interval: an index that does not step by one (every lane compares), or a bound constant over
  // each run (one compare a run already).
  Kernel<&masked_copy_program<true>> strided("masked_copy_strided", KernelOptions{2, {"in", "out", "n"}});
  EXPECT_EQ(strided.program().cuda_source(Specialization{{16, 16, 16}}).find("tf_bits v"), std::string::npos);
  Kernel<&masked_copy_program<false>> whole("masked_copy", KernelOptions{2, {"in", "out", "n"}});
  EXPECT_EQ(whole.program().cuda_source(Specialization{{16, 16, 16}}).find("tf_bits v"), std::string::npos);
  // Compiled without spills.
  const auto info = k.program().compile(Specialization{{16, 16, 1, 1}}, "sm_90");
  EXPECT_EQ(info.spill_bytes, 0) << info.ptxas_log;
}

TEST(Codegen, AWhereRepeatingAMaskedLoadIsTheLoad) {
  Kernel<&window_program<tl::f32>> k("window_f32", KernelOptions{4, {"in", "out", "head", "n"}});
  const std::string ir_text = ir::print(k.program().ir());
  EXPECT_EQ(occurrences(ir_text, " = where "), 1u) << "where(mask, x, 1) stays, where(mask, x, 0) goes\n" << ir_text;
  Kernel<&window_program<tl::bf16>> widened("window_bf16", KernelOptions{4, {"in", "out", "head", "n"}});
  EXPECT_EQ(occurrences(ir::print(widened.program().ir()), " = where "), 1u) << "through the widening cast too";
  // The same values in the interpreter: x inside the window, 0 (then 1) outside it, nothing stored outside.
  std::vector<float> in(2048), out(2048, -7.0f);
  for (int i = 0; i < 2048; ++i) in[i] = 0.25f * static_cast<float>(i % 97) - 3.0f;
  k.launch({{1}, Backend::interpreter}, in, out, 5, 1000);
  for (int i = 0; i < 2048; ++i) {
    const float want = i >= 5 && i < 1005 ? 3.0f * in[i] : -7.0f;
    ASSERT_EQ(out[i], want) << "element " << i;
  }
}
