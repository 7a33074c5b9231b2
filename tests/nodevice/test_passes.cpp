// IR passes one by one: simplify, CSE, DCE, the verifier, layout choice and axis (alignment) analysis.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/ir/ir.hpp"
#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"
#include "backend/passes/passes.hpp"
#include "dsl/tl.hpp"

using namespace tilefuse;
using ir::DType;
using ir::Op;

namespace {

ir::ValueType scalar(DType d) { return ir::ValueType{d, false, 0, {1, 1}}; }
ir::ValueType tile(DType d, int n, bool ptr = false) { return ir::ValueType{d, ptr, 1, {n, 1}}; }

struct Builder {
  ir::Function fn;
  // An instruction with its op's default attribute unless `attr` is given.
  ir::ValueId add(Op op, ir::ValueType t, std::vector<ir::ValueId> args = {}, std::optional<ir::Attribute> attr = {}) {
    ir::Instr in;
    in.op = op;
    in.args = std::move(args);
    in.attr = attr ? *attr : ir::default_attribute(op);
    return fn.append(in, &t);
  }
  ir::ValueId constant(ir::ValueType t, double value) { return add(Op::constant, t, {}, ir::attr::Constant{value}); }
  void store(std::vector<ir::ValueId> args) {
    ir::Instr in;
    in.op = Op::store;
    in.args = std::move(args);
    in.attr = ir::attr::Memory{};
    fn.append(in, nullptr);
  }
  ir::ValueId param(ir::ValueType t, const char* name) {
    fn.params.push_back({name, t});
    return add(Op::param, t, {}, ir::attr::Param{static_cast<int>(fn.params.size() - 1)});
  }
};

int count(const ir::Function& fn, Op op) {
  int n = 0;
  for (const auto& in : fn.body) n += in.op == op;
  return n;
}

}  // namespace

TEST(Passes, CseMergesEqualPureInstructions) {
  Builder b;
  auto p = b.param(scalar(DType::f32), "x");
  auto e1 = b.add(Op::exp, scalar(DType::f32), {p});
  auto e2 = b.add(Op::exp, scalar(DType::f32), {p});
  auto s = b.add(Op::add, scalar(DType::f32), {e1, e2});
  auto out = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "out");
  b.store({out, s});
  const auto f = passes::cse(b.fn);
  EXPECT_EQ(count(f, Op::exp), 1);
  ir::verify(f);
  EXPECT_NE(ir::print(f).find("add %1, %1"), std::string::npos) << ir::print(f);
}

TEST(Passes, CseKeepsLoadsAndCastsOfDifferentDtypes) {
  Builder b;
  auto p = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "p");
  auto l1 = b.add(Op::load, scalar(DType::f32), {p});
  auto l2 = b.add(Op::load, scalar(DType::f32), {p});
  auto c1 = b.add(Op::cast, scalar(DType::f16), {l1});
  auto c2 = b.add(Op::cast, scalar(DType::bf16), {l1});
  (void)l2, (void)c1, (void)c2;
  const auto f = passes::cse(b.fn);
  EXPECT_EQ(count(f, Op::load), 2);  // loads are not pure: memory may change between them
  EXPECT_EQ(count(f, Op::cast), 2);
}

TEST(Passes, DceDropsUnusedPureValuesOnly) {
  Builder b;
  auto p = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "p");
  auto x = b.add(Op::load, scalar(DType::f32), {p});
  b.add(Op::exp, scalar(DType::f32), {x});  // unused
  b.store({p, x});
  const auto f = passes::dce(b.fn);
  EXPECT_EQ(count(f, Op::exp), 0);
  EXPECT_EQ(count(f, Op::load), 1);
  EXPECT_EQ(count(f, Op::store), 1);
  ir::verify(f);
}

TEST(Passes, SimplifyRemovesIdentitiesAndFoldsCasts) {
  Builder b;
  auto x = b.param(scalar(DType::i32), "x");
  auto zero = b.constant(scalar(DType::i32), 0);
  auto one = b.constant(scalar(DType::i32), 1);
  auto a = b.add(Op::add, scalar(DType::i32), {x, zero});
  auto m = b.add(Op::mul, scalar(DType::i32), {one, a});
  auto half = b.constant(scalar(DType::f32), 2.75);
  auto c = b.add(Op::cast, scalar(DType::i32), {half});
  auto s = b.add(Op::add, scalar(DType::i32), {m, c});
  auto out = b.param(ir::ValueType{DType::i32, true, 0, {1, 1}}, "out");
  b.store({out, s});
  const auto f = passes::dce(passes::simplify(b.fn));
  EXPECT_EQ(count(f, Op::mul), 0);
  EXPECT_EQ(count(f, Op::cast), 0);
  EXPECT_EQ(count(f, Op::add), 1);
  bool folded = false;
  for (const auto& in : f.body)
    if (in.op == Op::constant && f.values[in.result].dtype == DType::i32 && in.as<ir::attr::Constant>().value == 2) folded = true;
  EXPECT_TRUE(folded) << ir::print(f);
}

// Integer 0 - x and x * -1 become neg (the generator's tf_ineg keeps ptxas from dropping it); float 0 - x
// stays a subtraction, since it is +0 where -x is -0.
TEST(Passes, SimplifyWritesIntegerNegationsAsNeg) {
  Builder b;
  auto x = b.param(scalar(DType::i32), "x");
  auto y = b.param(scalar(DType::f32), "y");
  auto zero = b.constant(scalar(DType::i32), 0);
  auto minus_one = b.constant(scalar(DType::i32), -1);
  auto fzero = b.constant(scalar(DType::f32), 0);
  auto n1 = b.add(Op::sub, scalar(DType::i32), {zero, x});
  auto n2 = b.add(Op::mul, scalar(DType::i32), {n1, minus_one});
  auto n3 = b.add(Op::mul, scalar(DType::i32), {minus_one, n2});
  auto fy = b.add(Op::sub, scalar(DType::f32), {fzero, y});
  auto out = b.param(ir::ValueType{DType::i32, true, 0, {1, 1}}, "out");
  auto fout = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "fout");
  b.store({out, n3});
  b.store({fout, fy});
  const auto f = passes::dce(passes::simplify(b.fn));
  EXPECT_EQ(count(f, Op::neg), 3) << ir::print(f);
  EXPECT_EQ(count(f, Op::mul), 0) << ir::print(f);
  EXPECT_EQ(count(f, Op::sub), 1) << ir::print(f);
  ir::verify(f);
}

namespace {
// Each element over its row's sum and over its column's sum: divisions by values broadcast over a 2D tile.
void shares_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> of_row, tl::Ptr<tl::f32> of_col) {
  auto r = tl::arange<8>()(tl::all, tl::none);
  auto c = tl::arange<16>()(tl::none, tl::all);
  auto t = tl::load(x + r * 16 + c);
  tl::store(of_row + r * 16 + c, t / tl::sum<1>(t)(tl::all, tl::none));
  tl::store(of_col + r * 16 + c, t / tl::sum<0>(t)(tl::none, tl::all));
}
}  // namespace

// x / v(all, none) and x / v(none, all) divide once per element of v (a reciprocal, expanded along the
// axis v was) and multiply per element of x: the packed softmax's 32 divisions a thread become 4.
TEST(Passes, SimplifyDividesByABroadcastRowOrColumnOncePerElementOfIt) {
  Kernel<&shares_program> k("shares", KernelOptions{1, {"x", "of_row", "of_col"}});
  const ir::Function& fn = k.program().ir();
  int divisions = 0;
  for (const auto& in : fn.body)
    if (in.op == Op::div) {
      ++divisions;
      EXPECT_EQ(fn.values[in.result].rank, 1) << ir::print(fn);
    }
  EXPECT_EQ(divisions, 2) << ir::print(fn);
  std::vector<float> x(128), of_row(128, std::nanf("")), of_col(128, std::nanf(""));
  for (int i = 0; i < 128; ++i) x[i] = static_cast<float>(1 + (i * 7) % 13);
  k.launch({{1}, Backend::interpreter}, x, of_row, of_col);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 16; ++c) {
      double row = 0, col = 0;
      for (int j = 0; j < 16; ++j) row += x[r * 16 + j];
      for (int i = 0; i < 8; ++i) col += x[i * 16 + c];
      const double v = x[r * 16 + c];
      EXPECT_NEAR(of_row[r * 16 + c], v / row, 3e-7 * v / row) << r << ", " << c;
      EXPECT_NEAR(of_col[r * 16 + c], v / col, 3e-7 * v / col) << r << ", " << c;
    }
}

TEST(Passes, HoistLoadsMovesLoadsUpButNotAboveStores) {
  Builder b;
  auto p = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "p");
  auto q = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "q");
  auto x = b.add(Op::load, scalar(DType::f32), {p});
  auto e = b.add(Op::exp, scalar(DType::f32), {x});
  auto s = b.add(Op::neg, scalar(DType::f32), {x});  // stands for work (a reduction, say) before the load
  auto w = b.add(Op::load, scalar(DType::f32), {q});         // independent: moves up to just after q
  b.store({p, b.add(Op::add, scalar(DType::f32), {e, w})});
  auto late = b.add(Op::load, scalar(DType::f32), {p});      // after a store: stays below it
  b.store({q, late});
  (void)s;
  const auto f = passes::hoist_loads(b.fn);
  ir::verify(f);
  std::vector<ir::ValueId> order;
  for (const auto& in : f.body)
    if (in.result >= 0) order.push_back(in.result);
  const auto pos = [&](ir::ValueId v) { return std::find(order.begin(), order.end(), v) - order.begin(); };
  EXPECT_LT(pos(w), pos(e));
  EXPECT_LT(pos(w), pos(s));
  int store_index = -1, late_index = -1;
  for (int i = 0; i < static_cast<int>(f.body.size()); ++i) {
    if (f.body[i].op == Op::store && store_index < 0) store_index = i;
    if (f.body[i].result == late) late_index = i;
  }
  EXPECT_GT(late_index, store_index);
}

TEST(Passes, HoistLoadsKeepsLoadsBelowGdcWait) {
  // A load after gdc_wait reads what the previous kernel wrote: it must not move above the wait.
  Builder b;
  auto p = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "p");
  auto q = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "q");
  ir::Instr wait;
  wait.op = Op::gdc_wait;
  b.fn.append(wait, nullptr);
  auto x = b.add(Op::load, scalar(DType::f32), {p});
  b.store({q, x});
  const auto f = passes::optimize(b.fn);
  ASSERT_EQ(f.body.size(), 5u) << ir::print(f);
  int wait_at = -1, load_at = -1;
  for (int i = 0; i < static_cast<int>(f.body.size()); ++i) {
    if (f.body[i].op == Op::gdc_wait) wait_at = i;
    if (f.body[i].op == Op::load) load_at = i;
  }
  EXPECT_GE(wait_at, 0) << "dce dropped gdc_wait";
  EXPECT_GT(load_at, wait_at) << ir::print(f);
  EXPECT_NE(ir::print(f).find("  gdc_wait\n"), std::string::npos) << ir::print(f);
}

TEST(Passes, VerifierRejectsBadIr) {
  Builder b;
  auto x = b.param(scalar(DType::f32), "x");
  auto y = b.param(scalar(DType::i32), "y");
  b.add(Op::add, scalar(DType::f32), {x, y});  // operand types differ
  EXPECT_THROW(ir::verify(b.fn), std::logic_error);

  Builder c;
  auto p = c.param(scalar(DType::f32), "x");
  ir::Instr in;
  in.op = Op::exp;
  in.args = {p + 5};  // not defined
  const auto t = scalar(DType::f32);
  c.fn.values.push_back(t);  // make the id in range but undefined
  c.fn.values.push_back(t);
  c.fn.values.push_back(t);
  c.fn.values.push_back(t);
  c.fn.values.push_back(t);
  c.fn.append(in, &t);
  try {
    ir::verify(c.fn);
    FAIL();
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("used before it is defined"), std::string::npos) << e.what();
  }

  // A load's cache hint is one of the four; every one of them prints after the op.
  for (int h = 0; h <= 4; ++h) {
    Builder d;
    auto q = d.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "q");
    d.add(Op::load, scalar(DType::f32), {q}, ir::attr::Memory{static_cast<ir::CacheHint>(h)});
    if (h == 4) {
      EXPECT_THROW(ir::verify(d.fn), std::logic_error);
      continue;
    }
    ir::verify(d.fn);
    const auto hint = static_cast<ir::CacheHint>(h);
    EXPECT_EQ(ir::print(d.fn).find(std::string("load ") + ir::cache_hint_name(hint)) != std::string::npos, hint != ir::CacheHint::normal)
        << ir::print(d.fn);
  }
}

TEST(Passes, AxisInfoTracksContiguityAndAlignment) {
  Builder b;
  auto base = b.param(ir::ValueType{DType::f32, true, 0, {1, 1}}, "base");
  auto stride = b.param(scalar(DType::i32), "stride");
  auto pid = b.add(Op::program_id, scalar(DType::i32));
  auto off = b.add(Op::mul, scalar(DType::i32), {pid, stride});
  auto row = b.add(Op::ptr_add, ir::ValueType{DType::f32, true, 0, {1, 1}}, {base, off});
  auto rows = b.add(Op::splat, tile(DType::f32, 256, true), {row});
  auto cols = b.add(Op::arange, tile(DType::i32, 256));
  auto ptrs = b.add(Op::ptr_add, tile(DType::f32, 256, true), {rows, cols});
  auto loaded = b.add(Op::load, tile(DType::i32, 256), {});  // stands for data-dependent offsets
  auto gather = b.add(Op::add, tile(DType::i32, 256), {cols, loaded});

  auto info = passes::analyze_axis_info(b.fn, {16, 4});
  EXPECT_EQ(info[cols].contiguity, 256);
  EXPECT_EQ(info[ptrs].contiguity, 256);
  EXPECT_EQ(info[ptrs].divisibility, 16);  // stride % 4 == 0 -> 16-byte rows
  EXPECT_EQ(info[gather].contiguity, 1);   // data-dependent offsets break the runs
  info = passes::analyze_axis_info(b.fn, {16, 1});
  EXPECT_EQ(info[ptrs].divisibility, 4);   // odd stride: only element alignment is known
}

TEST(Passes, ProductsOfRunsAreDivisibleOnlyByWhatDividesEveryElement) {
  // rows = pid * 32 + arange(32) runs from a multiple of 32; rows * stride (odd stride) is a tile of single
  // elements that share no factor: once taken to be multiples of 32, which made the rows of a narrow-row
  // kernel look 16-byte aligned. Sums and minima with a run likewise.
  Builder b;
  auto stride = b.param(scalar(DType::i32), "stride");
  auto pid = b.add(Op::program_id, scalar(DType::i32));
  auto k = b.constant(scalar(DType::i32), 32);
  auto first = b.add(Op::mul, scalar(DType::i32), {pid, k});
  auto first_t = b.add(Op::splat, tile(DType::i32, 32), {first});
  auto lanes = b.add(Op::arange, tile(DType::i32, 32));
  auto rows = b.add(Op::add, tile(DType::i32, 32), {first_t, lanes});
  auto stride_t = b.add(Op::splat, tile(DType::i32, 32), {stride});
  auto starts = b.add(Op::mul, tile(DType::i32, 32), {rows, stride_t});
  auto eight = b.add(Op::splat, tile(DType::i32, 32), {b.constant(scalar(DType::i32), 8)});
  auto scaled = b.add(Op::mul, tile(DType::i32, 32), {starts, eight});
  auto doubled = b.add(Op::add, tile(DType::i32, 32), {lanes, lanes});
  auto lower = b.add(Op::minimum, tile(DType::i32, 32), {rows, stride_t});
  auto info = passes::analyze_axis_info(b.fn, {1});
  EXPECT_EQ(info[rows].contiguity, 32);
  EXPECT_EQ(info[rows].divisibility, 32);  // the run's start
  EXPECT_EQ(info[starts].contiguity, 1);
  EXPECT_EQ(info[starts].divisibility, 1);
  EXPECT_EQ(info[scaled].divisibility, 8);  // every element a multiple of 8
  EXPECT_EQ(info[doubled].divisibility, 1);
  EXPECT_EQ(info[lower].divisibility, 1);
  info = passes::analyze_axis_info(b.fn, {4});
  EXPECT_EQ(info[starts].divisibility, 4);  // a stride of 4: every element a multiple of 4
}

TEST(Passes, LayoutSpreadsTilesOverThreads) {
  // Rows of `row` halves at `stride`: a 4096-element tile loaded from row pid, and a 64-element tile.
  Builder b;
  auto base = b.param(ir::ValueType{DType::f16, true, 0, {1, 1}}, "base");
  auto stride = b.param(scalar(DType::i32), "stride");
  auto pid = b.add(Op::program_id, scalar(DType::i32));
  auto off = b.add(Op::mul, scalar(DType::i32), {pid, stride});
  auto row = b.add(Op::ptr_add, ir::ValueType{DType::f16, true, 0, {1, 1}}, {base, off});
  auto rows = b.add(Op::splat, tile(DType::f16, 4096, true), {row});
  auto cols = b.add(Op::arange, tile(DType::i32, 4096));
  auto ptrs = b.add(Op::ptr_add, tile(DType::f16, 4096, true), {rows, cols});
  b.add(Op::load, tile(DType::f16, 4096), {ptrs});
  b.add(Op::arange, tile(DType::i32, 64));
  auto layouts = passes::choose_layouts(b.fn, 256, passes::analyze_axis_info(b.fn, {16, 8}));
  EXPECT_EQ(layouts.at(4096).per_thread, 16);
  EXPECT_EQ(layouts.at(4096).vector, 8);  // 8 halves = 16 bytes, every row 16-byte aligned
  EXPECT_EQ(layouts.at(64).per_thread, 1);
  EXPECT_EQ(layouts.at(64).vector, 1);
  // An odd stride: rows start anywhere, the load goes element by element, and the threads take
  // neighbouring elements (each warp access one contiguous piece) instead of elements 8 apart.
  layouts = passes::choose_layouts(b.fn, 256, passes::analyze_axis_info(b.fn, {16, 1}));
  EXPECT_EQ(layouts.at(4096).vector, 1);
  // A stride of 2 halves: 4-byte runs.
  layouts = passes::choose_layouts(b.fn, 256, passes::analyze_axis_info(b.fn, {16, 2}));
  EXPECT_EQ(layouts.at(4096).vector, 2);
}

TEST(Passes, ThreadLinesLayoutHoldsWholeLinesPerThreadWhereThreadsAllow) {
  // [128 rows, 32 columns] over 4 warps, lines along axis 1: each thread one whole row, the lanes then
  // the warps on the rows.
  auto l = passes::thread_lines_layout({128, 32}, 1, 4);
  EXPECT_EQ(l.str(), "[128x32] reg(0,1)(0,2)(0,4)(0,8)(0,16) lane(1,0)(2,0)(4,0)(8,0)(16,0) warp(32,0)(64,0)");
  // Fewer rows than threads: each thread holds as much of a row as leaves every thread its own elements
  // (16 of 32 columns), the row's high bit on the lowest lane (a row's reduction: one shuffle).
  l = passes::thread_lines_layout({64, 32}, 1, 4);
  EXPECT_EQ(l.str(), "[64x32] reg(0,1)(0,2)(0,4)(0,8) lane(0,16)(1,0)(2,0)(4,0)(8,0) warp(16,0)(32,0)");
  // Lines along axis 0 ([columns, rows]), more rows than threads: the rest of the rows in registers too.
  l = passes::thread_lines_layout({8, 256}, 0, 4);
  EXPECT_EQ(l.str(), "[8x256] reg(1,0)(2,0)(4,0)(0,128) lane(0,1)(0,2)(0,4)(0,8)(0,16) warp(0,32)(0,64)");
  EXPECT_EQ(l.per_thread(), 16);
}

TEST(Passes, OptimizeDumpsAfterEachPass) {
  Builder b;
  auto x = b.param(scalar(DType::f32), "x");
  b.add(Op::exp, scalar(DType::f32), {x});
  std::vector<std::string> seen;
  passes::optimize(b.fn, [&](const std::string& pass, const ir::Function&) { seen.push_back(pass); });
  EXPECT_EQ(seen, (std::vector<std::string>{"trace", "simplify", "cse", "dce", "hoist_loads"}));
}

namespace {
// Pieces of 512 over min(n, 4096): the loop the staged kernels run, for the axis analysis of its
// induction variable.
void bounded_pieces(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<512>();
  auto valid = tl::minimum(n, 4096);
  tl::for_range(0, valid, 512, [&](auto from) {
    auto idx = from + cols;
    tl::store(out + idx, tl::load(in + idx, idx < valid), idx < valid);
  });
}

// The info of the loop's induction variable and of the mask `from + cols < valid` inside it.
std::pair<passes::AxisInfo, passes::AxisInfo> loop_infos(const ir::Function& fn, std::vector<int> divisibility) {
  const auto info = passes::analyze_axis_info(fn, divisibility);
  for (const auto& in : fn.body) {
    if (in.op != Op::loop) continue;
    for (const auto& b : in.body)
      if (b.op == Op::lt) return {info[in.block_args[0]], info[b.result]};
  }
  ADD_FAILURE() << "no loop with a comparison";
  return {};
}
}  // namespace

TEST(Passes, AxisInfoKnowsALoopStaysBelowItsEnd) {
  Kernel<&bounded_pieces> k("bounded_pieces", {.num_warps = 2, .param_names = {"in", "out", "n"}});
  // n a positive multiple of 1024: min(n, 4096) is one too, every piece is whole, the mask holds.
  auto [iv, mask] = loop_infos(k.program().ir(), {16, 16, 1024});
  EXPECT_TRUE(iv.uniform);
  EXPECT_EQ(iv.headroom, 512);
  ASSERT_TRUE(iv.bounded);
  EXPECT_EQ(iv.min, 0);
  EXPECT_EQ(iv.max, 4096 - 512);  // the last piece still lies inside a 4096-element stage
  EXPECT_TRUE(mask.always_true);
  // n only a multiple of 8: the last piece may be ragged, so the mask stays; the range is still known
  // from min(n, 4096) <= 4096 alone.
  std::tie(iv, mask) = loop_infos(k.program().ir(), {16, 16, 8});
  EXPECT_EQ(iv.headroom, 1);
  ASSERT_TRUE(iv.bounded);
  EXPECT_EQ(iv.max, 4096 - 512);
  EXPECT_FALSE(mask.always_true);
}

namespace {

// A row's pieces as kernels::for_row_pieces visits them: the whole pieces of min(n, 4096) in one loop up
// to (end / 512) * 512, then the ragged last piece from there; and, for the ranges of products and
// quotients, max(end, 0) * 3, n / 3 and n * 3 stored.
void split_pieces(tl::Ptr<tl::i32> in, tl::Ptr<tl::i32> out, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<512>();
  auto end = tl::minimum(n, 4096);
  auto whole = (end / 512) * 512;
  tl::for_range(0, whole, 512, [&](auto from) { tl::store(out + from + cols, tl::load(in + from + cols)); });
  tl::for_range(tl::maximum(whole, 0), end, 512, [&](auto from) {
    auto idx = from + cols;
    tl::store(out + idx, tl::load(in + idx, idx < end), idx < end);
  });
  tl::store(out, tl::maximum(end, 0) * 3);
  tl::store(out + 1, n / 3);
  tl::store(out + 2, n * 3);  // may wrap in i32
}

}  // namespace

TEST(Passes, AxisInfoBoundsProductsQuotientsAndLoopsToWholePieces) {
  Kernel<&split_pieces> k("split_pieces", {.num_warps = 2, .param_names = {"in", "out", "n"}});
  const ir::Function& fn = k.program().ir();
  const auto info = passes::analyze_axis_info(fn, {16, 16, 8});
  std::vector<passes::AxisInfo> ivs, stored;
  for (const auto& in : fn.body) {
    if (in.op == Op::loop) ivs.push_back(info[in.block_args[0]]);
    if (in.op == Op::store && fn.values[in.args[1]].rank == 0) stored.push_back(info[in.args[1]]);
  }
  ASSERT_EQ(ivs.size(), 2u);
  // The whole pieces: (end / 512) * 512 <= 4096 keeps end's bound, so the last whole piece starts at
  // 4096 - 512 at most and lies inside a 4096-element stage.
  ASSERT_TRUE(ivs[0].bounded);
  EXPECT_EQ(ivs[0].max, 4096 - 512);
  EXPECT_EQ(ivs[0].headroom, 512);
  // The ragged piece starts at a multiple of 512 below end <= 4096: at 4096 - 512 at most as well.
  ASSERT_TRUE(ivs[1].bounded);
  EXPECT_EQ(ivs[1].divisibility, 512);
  EXPECT_EQ(ivs[1].max, 4096 - 512);
  // max(end, 0) * 3 in [0, 12288]; n / 3 of an i32 n within the i32 limits over 3, known or not; n * 3
  // may wrap: unbounded.
  ASSERT_EQ(stored.size(), 3u);
  ASSERT_TRUE(stored[0].bounded);
  EXPECT_EQ(stored[0].min, 0);
  EXPECT_EQ(stored[0].max, 3 * 4096);
  ASSERT_TRUE(stored[1].bounded);
  EXPECT_EQ(stored[1].max, 2147483647 / 3);
  EXPECT_EQ(stored[1].min, -2147483648LL / 3);
  EXPECT_FALSE(stored[2].bounded);
}
