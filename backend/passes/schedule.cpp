// Load hoisting: every load moves as early as its operands allow within its block (never above a store
// or a gdc_wait, never out of a loop body), so that loads issue before the barriers of reductions and their latency
// overlaps the rest of the program.
#include <algorithm>

#include "backend/ir/ops.hpp"
#include "backend/passes/passes.hpp"
#include "backend/passes/rewriter.hpp"

namespace tilefuse::passes {

namespace {

// What no load moves above: a store, a gdc_wait (memory the previous kernel writes is read only after
// it), or a loop holding either.
bool fences_loads(const ir::Instr& in) {
  if (in.op == ir::Op::store || in.op == ir::Op::gdc_wait) return true;
  return ir::op_info(in.op).region && std::any_of(in.body.begin(), in.body.end(), fences_loads);
}

class HoistLoads : public Rewriter {
  // Rebuilds the block in order, inserting each load right after the last of its operands' definitions
  // and the last fence (fences_loads) before it.
  void finish_block(std::vector<ir::Instr>& block) override {
    std::vector<ir::Instr> order;
    order.reserve(block.size());
    std::vector<int> defined_at(output().values.size(), -1);  // -1: defined before this block
    int last_fence = -1;
    auto positions_from = [&](std::size_t first) {
      for (std::size_t i = first; i < order.size(); ++i) {
        if (order[i].result >= 0) defined_at[order[i].result] = static_cast<int>(i);
        for (ir::ValueId r : order[i].results) defined_at[r] = static_cast<int>(i);
      }
    };
    for (ir::Instr& in : block) {
      if (in.op == ir::Op::load) {
        int earliest = last_fence;
        for (ir::ValueId a : in.args) earliest = std::max(earliest, defined_at[a]);
        order.insert(order.begin() + (earliest + 1), std::move(in));
        positions_from(static_cast<std::size_t>(earliest + 1));
        continue;
      }
      const bool fence = fences_loads(in);
      order.push_back(std::move(in));
      positions_from(order.size() - 1);
      if (fence) last_fence = static_cast<int>(order.size() - 1);
    }
    block = std::move(order);
  }
};

}  // namespace

ir::Function hoist_loads(const ir::Function& fn) { return HoistLoads().run(fn); }

}  // namespace tilefuse::passes
