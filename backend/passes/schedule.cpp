#include <algorithm>
#include <functional>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

namespace {

bool writes_memory(const ir::Instr& in) {
  if (in.op == ir::Op::store) return true;
  if (in.op != ir::Op::loop) return false;
  return std::any_of(in.body.begin(), in.body.end(), writes_memory);
}

// Reorders one block; loads never leave their block (that would be loop-invariant code motion).
std::vector<ir::Instr> schedule(const std::vector<ir::Instr>& block, std::size_t values) {
  std::vector<ir::Instr> order;
  order.reserve(block.size());
  std::vector<int> defined_at(values, -1);  // -1: defined before this block
  int last_store = -1;
  auto renumber_from = [&](std::size_t first) {
    for (std::size_t i = first; i < order.size(); ++i) {
      if (order[i].result >= 0) defined_at[order[i].result] = static_cast<int>(i);
      for (ir::ValueId r : order[i].results) defined_at[r] = static_cast<int>(i);
    }
  };
  for (const ir::Instr& original : block) {
    ir::Instr in = original;
    if (in.op == ir::Op::loop) in.body = schedule(in.body, values);
    if (in.op == ir::Op::load) {
      // As early as its operands allow, but never above a store (it might read what the store wrote).
      int earliest = last_store;
      for (ir::ValueId a : in.args) earliest = std::max(earliest, defined_at[a]);
      order.insert(order.begin() + (earliest + 1), std::move(in));
      renumber_from(static_cast<std::size_t>(earliest + 1));
      continue;
    }
    const bool store = writes_memory(in);
    order.push_back(std::move(in));
    renumber_from(order.size() - 1);
    if (store) last_store = static_cast<int>(order.size() - 1);
  }
  return order;
}

}  // namespace

ir::Function hoist_loads(const ir::Function& fn) {
  ir::Function out = fn;
  out.body = schedule(fn.body, fn.values.size());
  return out;
}

}  // namespace tilefuse::passes
