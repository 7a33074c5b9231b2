// The differential fuzzer's CPU tier (CI): thousands of generated programs each verify, optimize,
// generate CUDA that NVRTC compiles for the specialization its launch needs, and run in the interpreter
// without error; the generator is deterministic. TILEFUSE_FUZZ_PROGRAMS sets how many (default 2000).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <map>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "backend/interp/interp.hpp"
#include "backend/ir/ops.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/numerics/float16.hpp"
#include "dsl/tl.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace tilefuse;

namespace {
void sum_of_four(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> out) { tl::store(out, tl::sum(tl::load(x + tl::arange<4>()))); }
void truncate_four(tl::Ptr<tl::f32> x, tl::Ptr<tl::i64> out) {
  tl::store(out + tl::arange<4>(), tl::cast<tl::i64>(tl::load(x + tl::arange<4>())));
}
// 1 / the zeros' maximum and minimum, elementwise (+0 against -0 in each lane), of a tile and along the
// rows of a 2D tile: the sign of each zero shows as +inf or -inf.
void zero_signs(tl::Ptr<tl::f32> a, tl::Ptr<tl::f32> b, tl::Ptr<tl::f32> out) {
  auto x = tl::load(a + tl::arange<2>()), y = tl::load(b + tl::arange<2>());
  tl::store(out + tl::arange<2>(), 1.0 / tl::maximum(x, y));
  tl::store(out + 2 + tl::arange<2>(), 1.0 / tl::minimum(x, y));
  tl::store(out + 4, 1.0 / tl::max(tl::load(a + tl::arange<4>())));
  auto rows = tl::load(a + (tl::arange<2>()(tl::all, tl::none) * 2 + tl::arange<2>()(tl::none, tl::all)));
  tl::store(out + 5 + tl::arange<2>(), 1.0 / tl::max<1>(rows));
}
}  // namespace

TEST(Fuzz, GeneratorIsDeterministic) {
  for (std::uint64_t s : {1u, 77u, 4242u}) {
    EXPECT_EQ(ir::print(fuzz::generate(s).fn), ir::print(fuzz::generate(s).fn));
    EXPECT_EQ(fuzz::generate(s).buffers[0].bytes, fuzz::generate(s).buffers[0].bytes);
  }
  EXPECT_NE(ir::print(fuzz::generate(1).fn), ir::print(fuzz::generate(2).fn));
}

// Found by the fuzzer: a masked load without its `other` reached codegen, which read a third operand that
// was not there. The IR's contract is (ptr) or (ptr, mask, other), as the DSL emits; the verifier says so.
TEST(Fuzz, VerifierRejectsAMaskedLoadWithoutOther) {
  fuzz::Case c = fuzz::generate(3);
  ir::Instr* load = nullptr;
  for (ir::Instr& in : c.fn.body)
    if (in.op == ir::Op::load && in.args.size() == 3) load = &in;
  ASSERT_NE(load, nullptr);
  load->args.pop_back();
  try {
    ir::verify(c.fn);
    ADD_FAILURE() << "verified";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("a masked load takes its other value too"), std::string::npos) << e.what();
  }
}

// Found by the fuzzer: CSE keyed constants by value, and a NaN compares equal to nothing, not even
// itself, which broke the ordering of CSE's map: a NaN constant was merged with another constant of its
// dtype. Constants now compare by bit pattern (NaN is itself, -0.0 is not +0.0).
TEST(Fuzz, CseKeepsNaNAndSignedZeroConstantsApart) {
  ir::Function fn;
  fn.name = "constants";
  const ir::ValueType bf16{ir::DType::bf16, false, 0, {1, 1}};
  fn.params.push_back(ir::Param{"out", ir::ValueType{ir::DType::bf16, true, 0, {1, 1}}});
  auto constant = [&](double v) {
    ir::Instr in;
    in.op = ir::Op::constant;
    in.attr = ir::attr::Constant{v};
    return fn.append(in, &bf16);
  };
  ir::Instr param;
  param.op = ir::Op::param;
  param.attr = ir::attr::Param{0};
  const auto out = fn.append(param, &fn.params[0].type);
  std::vector<ir::ValueId> values = {constant(1.0), constant(std::nan("")), constant(0.0), constant(-0.0), constant(std::nan(""))};
  const ir::ValueType i32{ir::DType::i32, false, 0, {1, 1}};
  for (std::size_t k = 0; k < values.size(); ++k) {
    ir::Instr off;
    off.op = ir::Op::constant;
    off.attr = ir::attr::Constant{double(k)};
    const auto at = fn.append(off, &i32);
    ir::Instr add;
    add.op = ir::Op::ptr_add;
    add.args = {out, at};
    const auto p = fn.append(add, &fn.params[0].type);
    ir::Instr st;
    st.op = ir::Op::store;
    st.args = {p, values[k]};
    st.attr = ir::attr::Memory{};
    fn.append(st, nullptr);
  }
  Program prog(fn, KernelOptions{1});
  std::vector<bfloat16> host(5, bfloat16(7.0f));
  prog.launch(LaunchConfig{Grid{1}, Backend::interpreter}, std::vector<Arg>{Arg::host_memory_of(ir::DType::bf16, host.data(), 5)});
  EXPECT_EQ(float(host[0]), 1.0f);
  EXPECT_TRUE(std::isnan(float(host[1])));
  EXPECT_EQ(float(host[2]), 0.0f);
  EXPECT_FALSE(std::signbit(float(host[2])));
  EXPECT_TRUE(std::signbit(float(host[3])));
  EXPECT_TRUE(std::isnan(float(host[4])));
}

// The interpreter counts signed results that did not fit (what the GPU leaves undefined), and only those.
TEST(Fuzz, InterpreterCountsSignedOverflow) {
  auto run = [](std::int32_t a, std::int32_t b) {
    ir::Function fn;
    fn.name = "add";
    const ir::ValueType i32{ir::DType::i32, false, 0, {1, 1}}, p32{ir::DType::i32, true, 0, {1, 1}};
    fn.params = {ir::Param{"out", p32}};
    ir::Instr param;
    param.op = ir::Op::param;
    param.attr = ir::attr::Param{0};
    const auto out = fn.append(param, &p32);
    ir::Instr ca, cb, add, st;
    ca.op = cb.op = ir::Op::constant;
    ca.attr = ir::attr::Constant{double(a)};
    cb.attr = ir::attr::Constant{double(b)};
    add.op = ir::Op::add;
    add.args = {fn.append(ca, &i32), fn.append(cb, &i32)};
    st.op = ir::Op::store;
    st.args = {out, fn.append(add, &i32)};
    st.attr = ir::attr::Memory{};
    fn.append(st, nullptr);
    std::int32_t result = 0;
    interp::reset_wrapped_operations();
    interp::run(fn, 1, 1, 1, std::vector<interp::HostArg>{interp::HostArg{&result, 1}});
    return std::pair{result, interp::wrapped_operations()};
  };
  EXPECT_EQ(run(2147483647, 1), (std::pair<std::int32_t, std::uint64_t>{-2147483647 - 1, 1}));
  EXPECT_EQ(run(2147483646, 1), (std::pair<std::int32_t, std::uint64_t>{2147483647, 0}));
  EXPECT_EQ(run(-2147483647 - 1, -1), (std::pair<std::int32_t, std::uint64_t>{2147483647, 1}));
}

// Each family makes what it is for: stages make stage stores, loads and copies (and read across
// threads); clusters make cluster reductions over grids of whole clusters; tiles make 2D tiles, axis
// reductions, dots, and loops of dots whose loads are pipelined through shared memory. The rows family
// gives the programs the generator gave before the others existed (regression seeds depend on it).
TEST(Fuzz, FamiliesCoverTheirOps) {
  std::map<std::string, int> seen;
  int families[4] = {};
  for (std::uint64_t s = 1; s < 400; ++s) {
    const fuzz::Case c = fuzz::generate(s);
    EXPECT_EQ(c.family, fuzz::family_of(s));
    ++families[static_cast<int>(c.family)];
    const std::string f = fuzz::family_name(c.family);
    ir::walk(c.fn.body, [&](const ir::Instr& in) {
      ++seen[f + " " + ir::op_name(in.op)];
      if (in.op == ir::Op::loop)
        for (const ir::Instr& b : in.body) if (b.op == ir::Op::dot) ++seen[f + " dot in a loop"];
    });
    if (c.family == fuzz::Family::clusters) {
      EXPECT_EQ(c.grid.x % c.options.cluster_size, 0);
      ++seen["clusters of " + std::to_string(c.options.cluster_size)];
    }
  }
  for (int f = 0; f < 4; ++f) EXPECT_GT(families[f], 40) << fuzz::family_name(static_cast<fuzz::Family>(f));
  for (const char* op : {"stages stage_store", "stages stage_load", "stages stage_copy", "stages stage_gather", "stages stage_scatter",
                         "clusters cluster_max", "clusters cluster_sum", "clusters of 2", "clusters of 4", "tiles expand", "tiles broadcast", "tiles max_along", "tiles sum_along",
                         "tiles trans", "tiles dot", "tiles dot in a loop", "tiles loop", "rows loop", "rows load"})
    EXPECT_GT(seen[op], 0) << op;
  EXPECT_EQ(seen["rows dot"] + seen["rows stage_load"] + seen["rows cluster_sum"] + seen["stages dot"], 0);
  // The rows family gives the program the generator gave for regression seed 2 before the other
  // families existed (the golden was printed by that generator).
  std::ifstream in(std::string(TILEFUSE_GOLDEN_DIR) + "/fuzz_rows_seed2.ir");
  const std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(golden.empty());
  EXPECT_EQ(ir::print(fuzz::generate(2, fuzz::Family::rows).fn), golden);
}

// The interpreter's other order of float sums (what the fuzzer uses to tell an order-dependent program):
// [1e8, -1e8, 1, 1] sums to 2 by the pairwise tree and to 0 one by one from the last (1 + 1 - 1e8 rounds
// to -1e8 in f32).
TEST(Fuzz, InterpreterReordersSumsOnRequest) {
  auto run = [](bool reordered) {
    Kernel<&sum_of_four> k("sum_of_four");
    std::vector<float> x = {1e8f, -1e8f, 1.0f, 1.0f}, out(1, -7.0f);
    interp::set_reordered_sums(reordered);
    k.launch({1, Backend::interpreter}, x, out);
    interp::set_reordered_sums(false);
    return out[0];
  };
  EXPECT_EQ(run(false), 2.0f);
  EXPECT_EQ(run(true), 0.0f);
  EXPECT_FALSE(interp::reordered_sums());
}

// The interpreter's nudged casts (what the fuzzer uses to tell a float within its bound that a truncating
// cast turned into another integer): 0.99999994 truncates to 0, and to 1 when moved up by a relative 2^-16;
// 1.0000001 to 1, and to 0 when moved down; -3.0000002 to -3, and to -2 when moved up; 2.5 stays 2.
TEST(Fuzz, InterpreterNudgesCastsOnRequest) {
  auto run = [](int direction) {
    Kernel<&truncate_four> k("truncate_four");
    std::vector<float> x = {0.99999994f, 1.0000001f, -3.0000002f, 2.5f};
    std::vector<std::int64_t> out(4, -7);
    interp::set_cast_nudge(direction);
    k.launch({1, Backend::interpreter}, x, out);
    interp::set_cast_nudge(0);
    return out;
  };
  EXPECT_EQ(run(0), (std::vector<std::int64_t>{0, 1, -3, 2}));
  EXPECT_EQ(run(1), (std::vector<std::int64_t>{1, 1, -2, 2}));
  EXPECT_EQ(run(-1), (std::vector<std::int64_t>{0, 0, -3, 2}));
  EXPECT_EQ(interp::cast_nudge(), 0);
}

// The interpreter's other zeros (what the fuzzer uses to tell a program whose output shows the sign of a
// max or min of +0 and -0): each such max and min gives the other zero with the hook on, and nothing else
// changes.
TEST(Fuzz, InterpreterChoosesTheOtherZeroOnRequest) {
  auto run = [](bool other) {
    Kernel<&zero_signs> k("zero_signs");
    std::vector<float> a = {0.0f, -0.0f, -0.0f, 0.0f}, b = {-0.0f, 0.0f}, out(7, 7.0f);
    interp::set_other_zeros(other);
    k.launch({1, Backend::interpreter}, a, b, out);
    interp::set_other_zeros(false);
    return out;
  };
  const std::vector<float> usual = run(false), other = run(true);
  for (std::size_t i = 0; i < usual.size(); ++i) {
    EXPECT_TRUE(std::isinf(usual[i])) << i;
    EXPECT_EQ(other[i], -usual[i]) << i;
  }
  EXPECT_FALSE(interp::other_zeros());
}

TEST(Fuzz, ComparisonCatchesWhatItMust) {
  const fuzz::Case c = fuzz::generate(5);
  Program p(c.fn, c.options);
  const fuzz::Memory want = fuzz::run_interpreter(c, p);
  EXPECT_EQ(fuzz::compare(c, want, want), "");
  for (std::size_t b = 0; b < c.buffers.size(); ++b) {
    if (!c.buffers[b].output) continue;
    fuzz::Memory bad = want;
    bad[b][c.buffers[b].shift * ir::dtype_bytes(c.buffers[b].dtype)] ^= 0x40;  // one bit of the first element
    bad[b][bad[b].size() - 1] ^= 0x80;                                          // and of the last
    EXPECT_NE(fuzz::compare(c, want, bad), "") << "output " << b;
  }
}

TEST(Fuzz, ProgramsVerifyCompileAndInterpret) {
  const long programs = knobs::fuzz_programs();
  std::atomic<long> next{0}, done{0};
  std::mutex m;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (long k; (k = next++) < programs;) {
      const std::uint64_t seed = 1000000 + static_cast<std::uint64_t>(k);
      try {
        fuzz::Case c = fuzz::generate(seed);
        ir::verify(c.fn);
        Program p(c.fn, c.options);
        const std::vector<std::uint64_t> fake(c.buffers.size(), std::uint64_t{1} << 40);
        const CompiledInfo info = p.compile(p.specialize(LaunchConfig{c.grid, Backend::gpu}, c.arguments(fake, false)), "sm_90");
        if (info.cubin.empty()) throw std::runtime_error("empty CUBIN");
        const fuzz::Memory out = fuzz::run_interpreter(c, p);
        if (out.size() != c.buffers.size()) throw std::runtime_error("lost a buffer");
        ++done;
      } catch (const std::exception& e) {
        std::lock_guard lock(m);
        failures.push_back("seed " + std::to_string(seed) + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (std::size_t i = 0; i < failures.size() && i < 5; ++i) ADD_FAILURE() << failures[i];
  EXPECT_EQ(done.load(), programs) << failures.size() << " failed";
}
