#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function dce(const ir::Function& fn) {
  std::vector<bool> live(fn.values.size(), false);
  std::vector<bool> keep(fn.body.size(), false);
  // Walk backwards: side effects and parameters are roots; anything they use is live.
  for (std::size_t i = fn.body.size(); i-- > 0;) {
    const ir::Instr& in = fn.body[i];
    keep[i] = !ir::is_pure(in.op) || (in.result >= 0 && live[in.result]);
    if (keep[i])
      for (ir::ValueId a : in.args) live[a] = true;
  }
  ir::Function out;
  out.name = fn.name;
  out.params = fn.params;
  std::vector<ir::ValueId> remap(fn.values.size(), -1);
  for (std::size_t i = 0; i < fn.body.size(); ++i) {
    if (!keep[i]) continue;
    ir::Instr copy = fn.body[i];
    for (auto& a : copy.args) a = remap.at(a);
    const ir::ValueType* type = copy.result >= 0 ? &fn.values[copy.result] : nullptr;
    const ir::ValueId old = copy.result;
    const ir::ValueId id = out.append(std::move(copy), type);
    if (old >= 0) remap[old] = id;
  }
  return out;
}

}  // namespace tilefuse::passes
