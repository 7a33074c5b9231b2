// Pointer roots: the kernel parameter every pointer value derives from, and which parameters something
// stores through (the others are const in the generated signature).
#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

void find_pointer_roots(const ir::Function& fn, Analysis& a) {
  a.root.assign(fn.values.size(), -1);
  a.written.assign(fn.params.size(), false);
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (in.op == ir::Op::param) a.root[in.result] = in.as<ir::attr::Param>().index;
    else if ((in.op == ir::Op::ptr_add || in.op == ir::Op::splat) && fn.values[in.result].pointer) a.root[in.result] = a.root[in.args[0]];
    else if (in.op == ir::Op::store && a.root[in.args[0]] >= 0) a.written[a.root[in.args[0]]] = true;
    else if (in.op == ir::Op::store) a.written.assign(a.written.size(), true);  // through a carried pointer: any
  });
}

}  // namespace tilefuse::passes
