// The differential fuzzer's CPU tier (CI): thousands of generated programs each verify, optimize,
// generate CUDA that NVRTC compiles for the specialization its launch needs, and run in the interpreter
// without error; the generator is deterministic. TILEFUSE_FUZZ_PROGRAMS sets how many (default 2000).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "backend/interp/interp.hpp"
#include "backend/knobs/knobs.hpp"
#include "backend/numerics/float16.hpp"
#include "tests/fuzz/fuzz.hpp"

using namespace tilefuse;

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
