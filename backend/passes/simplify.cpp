#include <cmath>
#include <functional>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

namespace {

// What simplify needs to know about a value's definition.
struct Def {
  ir::Op op = ir::Op::param;  // param: not known
  ir::ValueId arg0 = -1;
  double number = 0;
};

}  // namespace

ir::Function simplify(const ir::Function& fn) {
  ir::Function out = fn;
  std::vector<ir::ValueId> replace(fn.values.size());
  for (std::size_t i = 0; i < replace.size(); ++i) replace[i] = static_cast<ir::ValueId>(i);
  std::vector<Def> def(fn.values.size());
  auto define = [&](ir::ValueId id, const ir::Instr& in) {
    def.resize(out.values.size());
    def[id] = Def{in.op, in.args.empty() ? -1 : in.args[0], in.number};
  };
  // The constant a value holds, looking through splats.
  auto constant_of = [&](ir::ValueId v) -> const Def* {
    const Def* d = &def[v];
    if (d->op == ir::Op::splat) d = &def[d->arg0];
    return d->op == ir::Op::constant ? d : nullptr;
  };
  auto is_constant = [&](ir::ValueId v, double x) {
    const Def* c = constant_of(v);
    return c && c->number == x;
  };

  std::function<std::vector<ir::Instr>(const std::vector<ir::Instr>&)> block = [&](const std::vector<ir::Instr>& in_block) {
    std::vector<ir::Instr> result;
    auto emit = [&](ir::Instr i, const ir::ValueType& t) {
      i.result = out.add_value(t);
      define(i.result, i);
      result.push_back(i);
      return i.result;
    };
    for (const ir::Instr& in : in_block) {
      ir::Instr copy = in;
      for (auto& a : copy.args) a = replace[a];
      if (in.op == ir::Op::loop) {
        copy.body = block(in.body);
        for (auto& y : copy.yields) y = replace[y];
        result.push_back(std::move(copy));
        continue;
      }
      const ir::ValueType* type = in.result >= 0 ? &fn.values[in.result] : nullptr;
      // Identities that leave an operand unchanged: x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1.
      ir::ValueId same = -1;
      if (type && copy.args.size() == 2 && !type->pointer && (ir::is_int(type->dtype) || ir::is_float(type->dtype))) {
        const auto a = copy.args[0], b = copy.args[1];
        if ((copy.op == ir::Op::add || copy.op == ir::Op::sub) && is_constant(b, 0.0)) same = a;
        else if (copy.op == ir::Op::add && is_constant(a, 0.0)) same = b;
        else if ((copy.op == ir::Op::mul || copy.op == ir::Op::div) && is_constant(b, 1.0)) same = a;
        else if (copy.op == ir::Op::mul && is_constant(a, 1.0)) same = b;
      }
      if (same >= 0 && out.values[same] == *type) {
        replace[in.result] = same;
        continue;
      }
      // A cast of a constant is a constant of the new dtype (integers truncate as the cast would).
      if (copy.op == ir::Op::cast && def[copy.args[0]].op == ir::Op::constant) {
        double v = def[copy.args[0]].number;
        if (ir::is_int(type->dtype) && std::isfinite(v)) v = std::trunc(v);
        const double limit = type->dtype == ir::DType::i32 ? 2147483647.0 : 9.2e18;
        if (!ir::is_int(type->dtype) || (std::isfinite(v) && std::fabs(v) <= limit)) {
          copy.op = ir::Op::constant;
          copy.args.clear();
          copy.number = v;
        }
      }
      // Float division by a value uniform across the tile: one exact reciprocal per program, then a
      // multiply per element (within 1.5 ulp of the quotient; a division per element costs several
      // instructions).
      if (copy.op == ir::Op::div && type && type->rank > 0 && ir::is_float(type->dtype) &&
          def[copy.args[1]].op == ir::Op::splat) {
        const ir::ValueId s = def[copy.args[1]].arg0;
        const ir::ValueType st = type->scalar();
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
      if (copy.result >= 0) define(copy.result, copy);
      result.push_back(std::move(copy));
    }
    return result;
  };
  out.body = block(fn.body);
  return out;
}

}  // namespace tilefuse::passes
