// Lowering of the elementwise family: constants, splats, arithmetic, math functions, comparisons, masks,
// where, casts, pointer offsets and random numbers. Most ops are one line of a table (the CUDA spelling
// for float and integer operands, and whether a half result rounds); the rest have a function each.
#include <stdexcept>

#include "backend/codegen/emitter.hpp"
#include "backend/codegen/text.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::DType;
using ir::Op;

namespace {

// The fewest lanes of a run for which a where under an interval mask goes run by run (select_by_runs):
// 8, the 16-bit elements of a 16-byte vector. With 4-lane runs (f32) the branches save half as many
// selects, and the registers ptxas took for them cost programs an SM (bench/NOTES.md, where by runs).
constexpr int kSelectByRunsLanes = 8;

// How an op with a fixed spelling is written: $0 and $1 stand for the operands.
struct Spelling {
  Op op;
  const char* floats;  ///< for float operands
  const char* ints;    ///< for integer (and mask, pointer) operands
  bool rounds;         ///< f16/bf16 results round after the op
};

constexpr Spelling kSpellings[] = {
    {Op::add, "$0 + $1", "$0 + $1", true},
    {Op::sub, "$0 - $1", "$0 - $1", true},
    {Op::mul, "$0 * $1", "$0 * $1", true},
    {Op::rem, "$0 % $1", "$0 % $1", false},
    {Op::minimum, "fminf($0, $1)", "tf_imin($0, $1)", false},
    {Op::maximum, "fmaxf($0, $1)", "tf_imax($0, $1)", false},
    {Op::neg, "-$0", "tf_ineg($0)", false},
    {Op::exp, "tf_exp($0)", nullptr, true},
    {Op::exp2, "tf_exp2($0)", nullptr, true},
    {Op::log, "logf($0)", nullptr, true},
    {Op::sqrt, "sqrtf($0)", nullptr, true},
    {Op::rsqrt, "rsqrtf($0)", nullptr, true},
    {Op::erf, "erff($0)", nullptr, true},
    {Op::gelu, "tf_gelu($0)", nullptr, true},
    {Op::eq, "$0 == $1", "$0 == $1", false},
    {Op::ne, "$0 != $1", "$0 != $1", false},
    {Op::logical_and, "$0 && $1", "$0 && $1", false},
    {Op::logical_or, "$0 || $1", "$0 || $1", false},
    {Op::logical_not, "!$0", "!$0", false},
    {Op::ptr_add, "$0 + $1", "$0 + $1", false},
    {Op::rand, nullptr, "tf_rand((unsigned long long)(long long)$0, (long long)$1)", false},
};

const Spelling* spelling_of(Op op) {
  for (const Spelling& s : kSpellings)
    if (s.op == op) return &s;
  return nullptr;
}

// `pattern` with $k replaced by operands[k].
std::string fill(const char* pattern, const std::vector<std::string>& operands) {
  std::string out;
  for (const char* p = pattern; *p; ++p) {
    if (*p == '$' && p[1] >= '0' && p[1] <= '9') out += operands.at(static_cast<std::size_t>(*++p - '0'));
    else out += *p;
  }
  return out;
}

}  // namespace

std::string elementwise_expr(const ir::Function& fn, const ir::Instr& in, const std::vector<std::string>& a) {
  const ir::ValueType& t = fn.values[in.result];
  const bool fl = ir::is_float(t.dtype) && !t.pointer;
  switch (in.op) {
    case Op::constant: return text::literal(t.dtype, in.as<ir::attr::Constant>().value);
    case Op::splat: return a[0];
    case Op::div:
      // Scalars divide exactly (once per program); tiles use the 2-ulp full-range division.
      return text::rounded(t.dtype, fl && t.rank > 0 ? "tf_div(" + a[0] + ", " + a[1] + ")" : a[0] + " / " + a[1]);
    case Op::abs: return fl ? "fabsf(" + a[0] + ")" : (t.dtype == DType::i64 ? "llabs(" : "abs(") + a[0] + ")";
    case Op::lt: return a[0] + " < " + a[1];
    case Op::le: return a[0] + " <= " + a[1];
    case Op::gt: return a[0] + " > " + a[1];
    case Op::ge: return a[0] + " >= " + a[1];
    case Op::select:
      // 32-bit integers select in PTX (tf_isel in the prelude says why); floats, masks, pointers and i64 in C++.
      if (t.dtype == DType::i32 && !t.pointer) return "tf_isel(" + a[0] + ", " + a[1] + ", " + a[2] + ")";
      return a[0] + " ? " + a[1] + " : " + a[2];
    case Op::cast: return text::cast(fn.values[in.args[0]].dtype, t.dtype, a[0]);
    default: break;
  }
  const Spelling* s = spelling_of(in.op);
  if (!s) throw std::logic_error(std::string("tilefuse codegen: no lowering for ") + ir::op_name(in.op));
  // Comparisons and logic take their operands' dtype, not their (mask) result's.
  const bool float_operands = ir::is_float(fn.values[in.args[0]].dtype) && !fn.values[in.args[0]].pointer;
  const char* pattern = float_operands && s->floats ? s->floats : s->ints ? s->ints : s->floats;
  const std::string expr = fill(pattern, a);
  return s->rounds ? text::rounded(t.dtype, expr) : expr;
}

void Emitter::arithmetic(const ir::Instr& in) {
  if (a_.interval[in.result].index >= 0) return interval_mask(in);
  std::vector<std::string> a;
  for (ir::ValueId id : in.args) a.push_back(at(id));
  switch (in.op) {
    case Op::lt: return compare(in, "<");
    case Op::le: return compare(in, "<=");
    case Op::gt: return compare(in, ">");
    case Op::ge: return compare(in, ">=");
    case Op::select: {
      if (known_true(in.args[0])) return elementwise(in, a[1]);
      const ir::ValueType& t = fn_.values[in.result];
      const bool by_runs = a_.interval[in.args[0]].index >= 0 && t.rank > 0 && layout(t).vector >= kSelectByRunsLanes &&
                           layout(t).vector == layout(fn_.values[in.args[0]]).vector;  // the bits' runs
      return by_runs ? select_by_runs(in, a) : elementwise(in, elementwise_expr(fn_, in, a));
    }
    case Op::cast: return cast(in);
    default: return elementwise(in, elementwise_expr(fn_, in, a));
  }
}

// A comparison tile. When it is constant over each run of the layout (an index against a bound that is a
// multiple of the run), every lane of a run compares the run's first elements: the compiler then keeps one
// predicate per run instead of one register per element.
void Emitter::compare(const ir::Instr& in, const std::string& op) {
  if (known_true(in.result)) {
    // Proven true by the axis analysis: the selects it guards fold, so a scalar may go unread.
    if (fn_.values[in.result].rank == 0) {
      os_ << "  [[maybe_unused]] bool const " << v(in.result) << " = true;\n";
      return;
    }
    return elementwise(in, "true");
  }
  const int R = a_.compare_run[in.result];
  if (R == 1) return elementwise(in, at(in.args[0]) + " " + op + " " + at(in.args[1]));
  auto first = [&](ir::ValueId id) { return fn_.values[id].rank == 0 ? v(id) : v(id) + "[e - e % " + std::to_string(R) + "]"; };
  elementwise(in, first(in.args[0]) + " " + op + " " + first(in.args[1]));
}

// An interval mask (lo <= index < hi, uniform bounds, the index stepping by one within each run): each run's
// bits from the index at its first lane, against both bounds (the differences saturate: no overflow at
// the ends of the i32 range), into one word a thread; its uses read vN[e] as they would a bool array. Some eight
// instructions a run, where per-element compares and the compiler's bit stores take about five an element.
void Emitter::interval_mask(const ir::Instr& in) {
  const passes::IntervalMask& m = a_.interval[in.result];
  const passes::TileLayout& l = layout(fn_.values[in.result]);
  const std::string bits = v(in.result) + "_bits", W = std::to_string(l.vector);
  auto below = [&](ir::ValueId b, int plus) {
    return "tf_run_below(f, " + (fn_.values[b].rank == 0 ? v(b) : v(b) + "[0]") + ", " + std::to_string(plus) + ", " + W + ")";
  };
  std::string run = m.hi >= 0 ? below(m.hi, m.hi_plus) : "tf_run_all(" + W + ")";
  if (m.lo >= 0) run += " & ~" + below(m.lo, m.lo_plus);
  os_ << "  unsigned " << bits << " = 0u;  // bit e: element e (an interval of %" << m.index << ")\n";
  os_ << "#pragma unroll\n  for (int r = 0; r < " << l.per_thread / l.vector << "; ++r) {\n";
  os_ << "    const long long f = " << v(m.index) << "[r * " << W << "];\n";
  os_ << "    " << bits << " |= (" << run << ") << (r * " << W << ");\n  }\n";
  os_ << "  [[maybe_unused]] const tf_bits " << v(in.result) << "{" << bits << "};\n";
}

// A where under an interval mask, run by run: a run whose lanes are all on (every run of a row's window
// but its two ends) copies the chosen values, any other selects lane by lane. One test of the run's bits
// replaces a bit test and a select an element, and the copies of the bits ptxas keeps for them: counted on
// the whole-run path (whole_run_instructions), LayerNorm's programs on 16-bit rows issue 3 to 27% fewer
// instructions. A third branch for runs wholly off the mask added more tests than it saved selects. Runs
// of fewer than kSelectByRunsLanes lanes keep the plain select.
void Emitter::select_by_runs(const ir::Instr& in, const std::vector<std::string>& a) {
  const passes::TileLayout& l = layout(fn_.values[in.result]);
  const int E = per_thread(fn_.values[in.result]);
  const std::string W = std::to_string(l.vector), out = v(in.result);
  os_ << "  " << value_type(in.result) << " " << out << "[" << E << "];\n";
  os_ << "#pragma unroll\n  for (int r = 0; r < " << E / l.vector << "; ++r) {\n";
  os_ << "    const unsigned run = (" << v(in.args[0]) << ".w >> (r * " << W << ")) & tf_run_all(" << W << ");\n";
  auto lanes = [&](const std::string& expr) {
    os_ << "#pragma unroll\n      for (int e = r * " << W << "; e < (r + 1) * " << W << "; ++e) " << out << "[e] = " << expr << ";\n";
  };
  os_ << "    if (run == tf_run_all(" << W << ")) {\n";
  lanes(a[1]);
  os_ << "    } else {\n";
  lanes(elementwise_expr(fn_, in, a));
  os_ << "    }\n  }\n";
}

bool rounded_by_stores(const ir::Function& fn, const passes::Analysis& a, const ir::Instr& in) {
  if (in.op != ir::Op::cast) return false;
  const DType from = fn.values[in.args[0]].dtype, to = fn.values[in.result].dtype;
  return ir::is_float(from) && (to == DType::f16 || to == DType::bf16) && a.only_stored[in.result];
}

void Emitter::cast(const ir::Instr& in) {
  if (rounded_by_stores(fn_, a_, in)) return elementwise(in, at(in.args[0]) + "  /* rounded by its stores */");
  elementwise(in, elementwise_expr(fn_, in, {at(in.args[0])}));
}

}  // namespace tilefuse::codegen
