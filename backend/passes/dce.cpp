#include <functional>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function dce(const ir::Function& fn) {
  // Roots: stores (to memory or a stage), parameters, loads (they may fault on bad addresses, as the
  // source asked), stage loads (their barriers pair with other threads') and loops whose bodies store. A live loop keeps its bounds, initial values and yields alive.
  std::vector<bool> live(fn.values.size(), false);
  std::function<bool(const std::vector<ir::Instr>&)> has_store = [&](const std::vector<ir::Instr>& block) {
    for (const auto& in : block)
      if (in.op == ir::Op::store || in.op == ir::Op::stage_store || in.op == ir::Op::stage_copy ||
          (in.op == ir::Op::loop && has_store(in.body)))
        return true;
    return false;
  };
  auto keeps = [&](const ir::Instr& in) {
    if (in.op == ir::Op::loop) {
      for (ir::ValueId r : in.results)
        if (live[r]) return true;
      return has_store(in.body);
    }
    return !ir::is_pure(in.op) || (in.result >= 0 && live[in.result]);
  };
  for (bool changed = true; changed;) {
    changed = false;
    ir::walk(fn.body, [&](const ir::Instr& in) {
      if (!keeps(in)) return;
      auto mark = [&](ir::ValueId v) {
        if (!live[v]) live[v] = changed = true;
      };
      for (ir::ValueId a : in.args) mark(a);
      for (ir::ValueId y : in.yields) mark(y);
    });
  }
  std::function<std::vector<ir::Instr>(const std::vector<ir::Instr>&)> block = [&](const std::vector<ir::Instr>& in_block) {
    std::vector<ir::Instr> result;
    for (const ir::Instr& in : in_block) {
      if (!keeps(in)) continue;
      ir::Instr copy = in;
      if (in.op == ir::Op::loop) copy.body = block(in.body);
      result.push_back(std::move(copy));
    }
    return result;
  };
  ir::Function out = fn;
  out.body = block(fn.body);
  return out;
}

}  // namespace tilefuse::passes
