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
    else if (in.result >= 0 && fn.values[in.result].pointer && !in.args.empty()) {
      // ptr_add, splat and the shape ops (expand, broadcast, trans) keep their pointer operand's root;
      // a choice between pointers (where) keeps it when both sides share one.
      int root = -2;
      for (ir::ValueId x : in.args)
        if (fn.values[x].pointer) root = root == -2 || root == a.root[x] ? a.root[x] : -1;
      a.root[in.result] = root == -2 ? -1 : root;
    }
    else if (in.op == ir::Op::store && a.root[in.args[0]] >= 0) a.written[a.root[in.args[0]]] = true;
    else if (in.op == ir::Op::store) a.written.assign(a.written.size(), true);  // through a carried pointer: any
  });
}

}  // namespace tilefuse::passes
