// Masks that are intervals of a stepping index (analysis.hpp, find_interval_masks). Every row program's
// mask is one (`start <= i < start + n` of an arange plus a uniform offset), and a thread holds up to 32 of
// its elements: as bools the compiler keeps them as bits of a register anyway, each made by two compares,
// a clear and a conditional set. Found here, code generation computes each run's bits at once instead.
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

namespace {

using ir::Op;

// `index` steps by one within every run of the layout `l` of its tile: its runs of consecutive values are
// at least a run long and a whole number of runs.
bool steps_within_runs(const ir::Function& fn, const Analysis& a, ir::ValueId index, const TileLayout& l) {
  const auto& t = fn.values[index];
  if (t.rank != 1 || t.pointer || t.dtype != ir::DType::i32) return false;
  const AxisInfo& info = a.axis[index];
  return !info.uniform && info.contiguity >= l.vector && info.contiguity % l.vector == 0;
}

bool uniform_integer(const ir::Function& fn, const Analysis& a, ir::ValueId id) {
  const auto& t = fn.values[id];
  return !t.pointer && t.dtype == ir::DType::i32 && (t.rank == 0 || a.axis[id].uniform);
}

// `in` compares an index stepping within runs with a uniform bound (either side): as an interval.
IntervalMask comparison(const ir::Function& fn, const Analysis& a, const ir::Instr& in, const TileLayout& l) {
  IntervalMask m;
  ir::ValueId x = in.args[0], u = in.args[1];
  Op op = in.op;
  if (!steps_within_runs(fn, a, x, l)) {  // the bound on the left: u op x is x (op mirrored) u
    std::swap(x, u);
    op = op == Op::lt ? Op::gt : op == Op::le ? Op::ge : op == Op::gt ? Op::lt : Op::le;
  }
  if (!steps_within_runs(fn, a, x, l) || !uniform_integer(fn, a, u)) return m;
  m.index = x;
  switch (op) {
    case Op::lt: m.hi = u; break;
    case Op::le: m.hi = u, m.hi_plus = 1; break;
    case Op::gt: m.lo = u, m.lo_plus = 1; break;
    default: m.lo = u; break;  // ge
  }
  return m;
}

}  // namespace

std::vector<IntervalMask> find_interval_masks(const ir::Function& fn, const Analysis& a) {
  std::vector<IntervalMask> found(fn.values.size());
  if (a.matrix) return found;
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (in.result < 0) return;
    const auto& t = fn.values[in.result];
    if (t.rank != 1 || t.dtype != ir::DType::i1 || a.axis[in.result].always_true) return;
    const TileLayout& l = a.layout(t);
    if (l.per_thread < 2 || l.per_thread > 32 || l.per_thread % l.vector != 0) return;
    switch (in.op) {
      case Op::lt:
      case Op::le:
      case Op::gt:
      case Op::ge:
        if (a.compare_run[in.result] == 1) found[in.result] = comparison(fn, a, in, l);
        break;
      case Op::logical_and: {  // a lower and an upper bound of one index
        const IntervalMask &p = found[in.args[0]], &q = found[in.args[1]];
        if (p.index < 0 || p.index != q.index) break;
        if ((p.lo >= 0 && q.lo >= 0) || (p.hi >= 0 && q.hi >= 0)) break;
        IntervalMask m = p;
        if (q.lo >= 0) m.lo = q.lo, m.lo_plus = q.lo_plus;
        if (q.hi >= 0) m.hi = q.hi, m.hi_plus = q.hi_plus;
        found[in.result] = m;
        break;
      }
      default: break;
    }
  });
  return found;
}

}  // namespace tilefuse::passes
