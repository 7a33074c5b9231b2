#include <algorithm>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

ir::Function hoist_loads(const ir::Function& fn) {
  // Position of each value's definition in the new order, and of the last store placed so far.
  std::vector<ir::Instr> order;
  order.reserve(fn.body.size());
  std::vector<int> defined_at(fn.values.size(), -1);
  int last_store = -1;
  auto renumber_from = [&](std::size_t first) {
    for (std::size_t i = first; i < order.size(); ++i)
      if (order[i].result >= 0) defined_at[order[i].result] = static_cast<int>(i);
  };
  for (const ir::Instr& in : fn.body) {
    if (in.op == ir::Op::load) {
      // As early as its operands allow, but never above a store (it might read what the store wrote).
      int earliest = last_store;
      for (ir::ValueId a : in.args) earliest = std::max(earliest, defined_at[a]);
      const auto at = order.begin() + (earliest + 1);
      order.insert(at, in);
      renumber_from(static_cast<std::size_t>(earliest + 1));
      continue;
    }
    order.push_back(in);
    if (in.result >= 0) defined_at[in.result] = static_cast<int>(order.size() - 1);
    if (in.op == ir::Op::store) last_store = static_cast<int>(order.size() - 1);
  }
  ir::Function out = fn;
  out.body = std::move(order);
  return out;
}

}  // namespace tilefuse::passes
