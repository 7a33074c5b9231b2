// DSL type rules and tracing: the C++ types ops produce, the IR a program traces to, and run-time errors.
#include <gtest/gtest.h>

#include <type_traits>

#include "backend/ir/ops.hpp"
#include "dsl/tl.hpp"
#include "tests/common/programs.hpp"

namespace tl = tilefuse::tl;
using namespace tilefuse;

namespace {

// Traces `body` into a function with the given parameters, so type rules can be checked on live values.
template <class F>
ir::Function trace_body(F&& body) {
  ir::Function fn;
  fn.name = "test";
  tl::detail::tracing = &fn;
  try {
    body();
  } catch (...) {
    tl::detail::tracing = nullptr;
    throw;
  }
  tl::detail::tracing = nullptr;
  return fn;
}

int count(const ir::Function& fn, ir::Op op) {
  int n = 0;
  for (const auto& in : fn.body) n += in.op == op;
  return n;
}

}  // namespace

TEST(Dsl, OperatorResultTypes) {
  trace_body([] {
    auto cols = tl::arange<64>();
    static_assert(std::is_same_v<decltype(cols), tl::Tile<tl::i32, 64>>);
    auto row = tl::program_id(0);
    static_assert(std::is_same_v<decltype(row), tl::Scalar<tl::i32>>);
    static_assert(std::is_same_v<decltype(cols + row), tl::Tile<tl::i32, 64>>);  // scalars broadcast
    static_assert(std::is_same_v<decltype(cols < 3), tl::Tile<tl::i1, 64>>);
    static_assert(std::is_same_v<decltype((cols < 3) & (cols > 1)), tl::Tile<tl::i1, 64>>);
    static_assert(std::is_same_v<decltype(tl::cast<tl::f32>(cols) * 2.0), tl::Tile<tl::f32, 64>>);
    static_assert(std::is_same_v<decltype(tl::sum(tl::cast<tl::f16>(cols))), tl::Scalar<tl::f16>>);
    static_assert(std::is_same_v<decltype(tl::cast<tl::i64>(row) * row), tl::Scalar<tl::i64>>);  // ints widen
    static_assert(std::is_same_v<decltype(tl::where(cols < 3, tl::cast<tl::f32>(cols), -tl::inf)), tl::Tile<tl::f32, 64>>);
    static_assert(std::is_same_v<decltype(tl::exp(tl::cast<tl::bf16>(cols))), tl::Tile<tl::bf16, 64>>);
  });
}

TEST(Dsl, PointerArithmeticTypes) {
  trace_body([] {
    ir::ValueType pt = tl::Ptr<tl::f16>::type();
    EXPECT_EQ(pt.str(), "ptr<f16>");
    const ir::ValueType t = pt;
    tl::Ptr<tl::f16> p(tl::detail::emit(ir::Op::constant, &t, {}));  // a stand-in pointer value
    auto q = p + tl::arange<32>();
    static_assert(std::is_same_v<decltype(q), tl::Tile<tl::ptr<tl::f16>, 32>>);
    static_assert(std::is_same_v<decltype(tl::load(q)), tl::Tile<tl::f16, 32>>);
    static_assert(std::is_same_v<decltype(p + tl::program_id(0)), tl::Ptr<tl::f16>>);
    EXPECT_EQ(q.type().str(), "ptr<f16>[32]");
  });
}

TEST(Dsl, SoftmaxTracesToTheExpectedIr) {
  const ir::Function& fn = test::softmax_program(ir::DType::f32, 1024).ir();
  EXPECT_EQ(fn.name, "softmax_1024");
  ASSERT_EQ(fn.params.size(), 4u);
  EXPECT_EQ(fn.params[0].name, "in");
  EXPECT_EQ(fn.params[0].type.str(), "ptr<f32>");
  EXPECT_EQ(fn.params[3].type.str(), "i32");
  EXPECT_EQ(count(fn, ir::Op::load), 1);
  EXPECT_EQ(count(fn, ir::Op::store), 1);
  EXPECT_EQ(count(fn, ir::Op::reduce_max), 1);
  EXPECT_EQ(count(fn, ir::Op::reduce_sum), 1);
  // `num` feeds both the sum and the division: it is computed once.
  EXPECT_EQ(count(fn, ir::Op::exp), 1);
  // row * stride appears in both the load and the store address: computed once after CSE; the division
  // by the row sum becomes one scalar reciprocal and a tile multiply.
  EXPECT_EQ(count(fn, ir::Op::mul), 2);
  EXPECT_EQ(count(fn, ir::Op::div), 1);
  for (const auto& in : fn.body) {
    if (in.op == ir::Op::div) {
      EXPECT_EQ(fn.values[in.result].rank, 0);
    }
  }
  // f32 in and out: the casts fold away.
  EXPECT_EQ(count(fn, ir::Op::cast), 0);
  ir::verify(fn);
}

TEST(Dsl, HalfSoftmaxComputesInF32) {
  const ir::Function& fn = test::softmax_program(ir::DType::bf16, 256).ir();
  EXPECT_EQ(count(fn, ir::Op::cast), 2);  // load result up to f32, result down to bf16
  for (const auto& in : fn.body) {
    if (in.op == ir::Op::exp) {
      EXPECT_EQ(fn.values[in.result].dtype, ir::DType::f32);
    }
  }
}

TEST(Dsl, OpsOutsideATraceThrow) {
  EXPECT_THROW(tl::arange<16>(), std::logic_error);
}

TEST(Dsl, BadProgramIdAxisThrows) {
  EXPECT_THROW(trace_body([] { tl::program_id(3); }), std::invalid_argument);
  EXPECT_THROW(trace_body([] { tl::num_programs(-1); }), std::invalid_argument);
}

TEST(Dsl, SourceLocationsReachTheIr) {
  const ir::Function& fn = test::softmax_program(ir::DType::f32, 64).ir();
  for (const auto& in : fn.body) {
    if (in.op == ir::Op::load || in.op == ir::Op::store || ir::is_reduction(in.op)) {
      EXPECT_NE(in.where.find("programs.hpp:"), std::string::npos) << ir::print(fn, in);
    }
  }
}

TEST(Dsl, DtypeTable) {
  static_assert(std::is_same_v<tl::host_type_t<tl::bf16>, bfloat16>);
  static_assert(std::is_same_v<tl::dtype_of_host_t<std::int64_t>, tl::i64>);
  static_assert(std::is_same_v<tl::dtype_of_host_t<char>, void>);
  static_assert(!tl::is_storable<tl::i1>);
  SUCCEED();
}
