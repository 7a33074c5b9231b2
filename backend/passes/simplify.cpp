// Simplification: folds casts of constants, removes identities (x + 0, x * 1, ...), writes integer 0 - x and
// x * -1 as negations, turns a float division by a value uniform across the tile into one reciprocal per
// program and a multiply per element (and one by a row's value broadcast over a 2D tile into a reciprocal
// per row), and drops a where that repeats a masked load's own mask and other.
#include <cmath>

#include "backend/ir/ops.hpp"
#include "backend/passes/passes.hpp"
#include "backend/passes/rewriter.hpp"

namespace tilefuse::passes {

namespace {

class Simplify : public Rewriter {
  // What simplify needs to know about a value's definition (in output ids).
  struct Def {
    ir::Op op = ir::Op::param;  // param: not known
    ir::ValueId arg0 = -1;
    double number = 0;
    std::vector<ir::ValueId> args;
    ir::Attribute attr;
  };

  void visit(ir::Instr in) override {
    const ir::ValueType* type = in.result >= 0 ? &input().values[in.result] : nullptr;
    if (const ir::ValueId same = identity_operand(in, type); same >= 0 && output().values[same] == *type)
      return replace(in.result, same);
    if (const ir::ValueId same = masked_load_kept(in); same >= 0 && output().values[same] == *type) return replace(in.result, same);
    // Integer 0 - x and x * -1 are negations. As neg they reach the generator's tf_ineg, which keeps ptxas
    // from folding the negation into a min/max chain, where it can be dropped (see the prelude).
    if (const ir::ValueId negated = negated_operand(in, type); negated >= 0) {
      in.op = ir::Op::neg;
      in.args = {negated};
    }
    // A cast of a constant is a constant of the new dtype (integers truncate as the cast would).
    if (in.op == ir::Op::cast && def(in.args[0]).op == ir::Op::constant) {
      double v = def(in.args[0]).number;
      if (ir::is_int(type->dtype) && std::isfinite(v)) v = std::trunc(v);
      const double limit = type->dtype == ir::DType::i32 ? 2147483647.0 : 9.2e18;
      if (!ir::is_int(type->dtype) || (std::isfinite(v) && std::fabs(v) <= limit)) {
        in.op = ir::Op::constant;
        in.args.clear();
        in.attr = ir::attr::Constant{v};
      }
    }
    // Float division by a value uniform across the tile: one exact reciprocal per program, then a multiply
    // per element (within 1.5 ulp of the quotient; a division per element costs several instructions).
    if (in.op == ir::Op::div && type && type->rank > 0 && ir::is_float(type->dtype) && def(in.args[1]).op == ir::Op::splat) {
      in.op = ir::Op::mul;
      in.args[1] = add(new_instr(ir::Op::splat, {reciprocal(def(in.args[1]).arg0)}), *type);
    }
    // Float division by a row's (or column's) value broadcast over a 2D tile, x / v(all, none): one
    // reciprocal per element of v, expanded and broadcast as v was, then a multiply per element of x (the
    // packed softmax's division by each row's sum: 32 divisions a thread become 4 and 32 multiplies).
    if (in.op == ir::Op::div && type && type->rank == 2 && ir::is_float(type->dtype) && def(in.args[1]).op == ir::Op::broadcast &&
        def(def(in.args[1]).arg0).op == ir::Op::expand) {
      const ir::ValueId expanded = def(in.args[1]).arg0;
      const ir::ValueId v = def(expanded).arg0;
      const ir::ValueType v_type = output().values[v], expanded_type = output().values[expanded];
      if (v_type.rank == 1 && v_type.dtype == type->dtype) {
        // (The expand's axis is copied before reciprocal() adds instructions: def() refers into defs_,
        // which adding may grow.)
        const ir::Attribute axis = def(expanded).attr;
        const ir::ValueId recip = reciprocal(v);
        const ir::ValueId recip_expanded = add(new_instr(ir::Op::expand, {recip}, axis), expanded_type);
        in.op = ir::Op::mul;
        in.args[1] = add(new_instr(ir::Op::broadcast, {recip_expanded}), *type);
      }
    }
    if (in.result >= 0) record(in.result, in);
    keep(std::move(in));
  }

  // The operand that x + 0, 0 + x, x - 0, x * 1, 1 * x or x / 1 leaves unchanged, or -1.
  ir::ValueId identity_operand(const ir::Instr& in, const ir::ValueType* type) const {
    if (!type || in.args.size() != 2 || type->pointer || !(ir::is_int(type->dtype) || ir::is_float(type->dtype))) return -1;
    const auto a = in.args[0], b = in.args[1];
    if ((in.op == ir::Op::add || in.op == ir::Op::sub) && is_constant(b, 0.0)) return a;
    if (in.op == ir::Op::add && is_constant(a, 0.0)) return b;
    if ((in.op == ir::Op::mul || in.op == ir::Op::div) && is_constant(b, 1.0)) return a;
    if (in.op == ir::Op::mul && is_constant(a, 1.0)) return b;
    return -1;
  }
  // The load x of where(m, x, c) when x = load(p, m, c), or a float widening of it: the load already gives c
  // where m is off. c must be the same number in both dtypes (a small integer, of the same sign), or -1.
  ir::ValueId masked_load_kept(const ir::Instr& in) const {
    if (in.op != ir::Op::select || in.args.size() != 3) return -1;
    const ir::ValueId kept = in.args[1];
    ir::ValueId loaded = kept;
    if (def(kept).op == ir::Op::cast) {
      loaded = def(kept).arg0;
      if (!ir::is_float(output().values[loaded].dtype) || !ir::is_float(output().values[kept].dtype)) return -1;
    }
    const Def& load = def(loaded);
    if (load.op != ir::Op::load || load.args.size() != 3 || load.args[1] != in.args[0]) return -1;
    const double* other = constant_of(load.args[2]);
    const double* otherwise = constant_of(in.args[2]);
    if (!other || !otherwise || *other != *otherwise || std::signbit(*other) != std::signbit(*otherwise)) return -1;
    return *other == std::trunc(*other) && std::fabs(*other) <= 256 ? kept : -1;
  }
  // The number `v` holds (a constant, or a splat of one), or null.
  const double* constant_of(ir::ValueId v) const {
    const Def* d = &def(v);
    if (d->op == ir::Op::splat) d = &def(d->arg0);
    return d->op == ir::Op::constant ? &d->number : nullptr;
  }
  // The x of an integer 0 - x, x * -1 or -1 * x, or -1.
  ir::ValueId negated_operand(const ir::Instr& in, const ir::ValueType* type) const {
    if (!type || in.args.size() != 2 || type->pointer || !ir::is_int(type->dtype) || type->dtype == ir::DType::i1) return -1;
    const auto a = in.args[0], b = in.args[1];
    if (in.op == ir::Op::sub && is_constant(a, 0.0)) return b;
    if (in.op == ir::Op::mul && is_constant(b, -1.0)) return a;
    if (in.op == ir::Op::mul && is_constant(a, -1.0)) return b;
    return -1;
  }
  // Whether `v` holds the constant x, looking through splats.
  bool is_constant(ir::ValueId v, double x) const {
    const Def* d = &def(v);
    if (d->op == ir::Op::splat) d = &def(d->arg0);
    return d->op == ir::Op::constant && d->number == x;
  }
  static ir::Instr new_instr(ir::Op op, std::vector<ir::ValueId> args, ir::Attribute attr = {}) {
    ir::Instr in;
    in.op = op;
    in.args = std::move(args);
    in.attr = attr;
    return in;
  }
  ir::ValueId add(ir::Instr in, const ir::ValueType& type) {
    const ir::Instr copy = in;
    const ir::ValueId id = emit(std::move(in), type);
    record(id, copy);
    return id;
  }
  // 1 / v in v's own type (a scalar, or a tile divided element by element): what the divisions above
  // turn into, once per element of the divisor before it is splat or broadcast.
  ir::ValueId reciprocal(ir::ValueId v) {
    const ir::ValueType t = output().values[v];
    ir::ValueId one = add(new_instr(ir::Op::constant, {}, ir::attr::Constant{1.0}), t.scalar());
    if (t.rank > 0) one = add(new_instr(ir::Op::splat, {one}), t);
    return add(new_instr(ir::Op::div, {one, v}), t);
  }
  void record(ir::ValueId id, const ir::Instr& in) {
    if (defs_.size() <= static_cast<std::size_t>(id)) defs_.resize(id + 1);
    defs_[id] = Def{in.op, in.args.empty() ? -1 : in.args[0], in.op == ir::Op::constant ? in.as<ir::attr::Constant>().value : 0.0, in.args, in.attr};
  }
  const Def& def(ir::ValueId v) const {
    static const Def unknown;
    return static_cast<std::size_t>(v) < defs_.size() ? defs_[v] : unknown;
  }

  std::vector<Def> defs_;
};

}  // namespace

ir::Function simplify(const ir::Function& fn) { return Simplify().run(fn); }

}  // namespace tilefuse::passes
