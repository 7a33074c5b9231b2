#include <cmath>
#include <deque>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

namespace {

// The constant a value holds, looking through splats.
const ir::Instr* constant_of(const std::vector<const ir::Instr*>& def, ir::ValueId v) {
  const ir::Instr* d = def[v];
  if (d && d->op == ir::Op::splat) d = def[d->args[0]];
  return d && d->op == ir::Op::constant ? d : nullptr;
}

bool is_constant(const std::vector<const ir::Instr*>& def, ir::ValueId v, double x) {
  const ir::Instr* c = constant_of(def, v);
  return c && c->number == x;
}

}  // namespace

ir::Function simplify(const ir::Function& fn) {
  ir::Function out;
  out.name = fn.name;
  out.params = fn.params;
  std::vector<ir::ValueId> remap(fn.values.size(), -1);
  std::vector<const ir::Instr*> def;  // defining instruction of each value of `out`
  std::deque<ir::Instr> storage;  // stable addresses for `def`
  for (const ir::Instr& in : fn.body) {
    ir::Instr copy = in;
    for (auto& a : copy.args) a = remap.at(a);
    const ir::ValueType* type = in.result >= 0 ? &fn.values[in.result] : nullptr;
    // Identities that leave an operand unchanged: x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1.
    ir::ValueId same = -1;
    if (type && copy.args.size() == 2 && !type->pointer) {
      const auto a = copy.args[0], b = copy.args[1];
      const bool int_or_float = ir::is_int(type->dtype) || ir::is_float(type->dtype);
      if (int_or_float && (copy.op == ir::Op::add || copy.op == ir::Op::sub) && is_constant(def, b, 0.0)) same = a;
      else if (int_or_float && copy.op == ir::Op::add && is_constant(def, a, 0.0)) same = b;
      else if (int_or_float && (copy.op == ir::Op::mul || copy.op == ir::Op::div) && is_constant(def, b, 1.0)) same = a;
      else if (int_or_float && copy.op == ir::Op::mul && is_constant(def, a, 1.0)) same = b;
    }
    // x + 0 keeps x's type only when the types agree (they always do after tracing; check anyway).
    if (same >= 0 && out.values[same] == *type) {
      remap[in.result] = same;
      continue;
    }
    // A cast of a constant is a constant of the new dtype (integers truncate as the cast would).
    if (copy.op == ir::Op::cast && def[copy.args[0]] && def[copy.args[0]]->op == ir::Op::constant) {
      double v = def[copy.args[0]]->number;
      if (ir::is_int(type->dtype) && std::isfinite(v)) v = std::trunc(v);
      if (!ir::is_int(type->dtype) || std::isfinite(v)) {
        copy.op = ir::Op::constant;
        copy.args.clear();
        copy.number = v;
      }
    }
    // Float division by a value uniform across the tile: one exact reciprocal per program, then a multiply
    // per element (within 1.5 ulp of the quotient; a division per element costs several instructions).
    if (copy.op == ir::Op::div && type && type->rank > 0 && ir::is_float(type->dtype) && def[copy.args[1]] &&
        def[copy.args[1]]->op == ir::Op::splat) {
      const ir::ValueId s = def[copy.args[1]]->args[0];
      const ir::ValueType st = type->scalar();
      auto emit = [&](ir::Instr i, const ir::ValueType& t) {
        const ir::ValueId id = out.append(std::move(i), &t);
        storage.push_back(out.body.back());
        def.resize(out.values.size(), nullptr);
        def[id] = &storage.back();
        return id;
      };
      ir::Instr one;
      one.op = ir::Op::constant;
      one.number = 1.0;
      ir::Instr recip;
      recip.op = ir::Op::div;
      recip.args = {emit(one, st), s};
      ir::Instr splat;
      splat.op = ir::Op::splat;
      splat.args = {emit(recip, st)};
      copy.op = ir::Op::mul;
      copy.args[1] = emit(splat, *type);
    }
    const ir::ValueId id = out.append(std::move(copy), type);
    storage.push_back(out.body.back());
    if (id >= 0) {
      remap[in.result] = id;
      def.resize(out.values.size(), nullptr);
      def[id] = &storage.back();
    }
  }
  return out;
}

}  // namespace tilefuse::passes
