// Values only stored: every use of the value is the value operand of a store, stage_store or
// stage_scatter (not its pointer, mask or offsets; not a loop's carried value or yield). A cast to f16/bf16 of such a value can
// leave the rounding to the store.
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

std::vector<bool> values_only_stored(const ir::Function& fn) {
  std::vector<int> uses(fn.values.size(), 0), stored(fn.values.size(), 0);
  auto count = [&](ir::ValueId id) {
    if (id >= 0) ++uses[id];
  };
  ir::walk(fn.body, [&](const ir::Instr& in) {
    for (std::size_t k = 0; k < in.args.size(); ++k) {
      count(in.args[k]);
      if (k == 1 && (in.op == ir::Op::store || in.op == ir::Op::stage_store || in.op == ir::Op::stage_scatter)) ++stored[in.args[k]];
    }
    for (auto id : in.block_args) count(id);
    for (auto id : in.yields) count(id);
    for (auto id : in.results) count(id);
  });
  std::vector<bool> only(fn.values.size(), false);
  for (std::size_t id = 0; id < only.size(); ++id) only[id] = uses[id] > 0 && uses[id] == stored[id];
  return only;
}

}  // namespace tilefuse::passes
