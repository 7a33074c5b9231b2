// Stage ownership: when every access of a stage moves tiles of one size P at offsets divisible by P,
// element q of the stage is always element q % P of a tile, held by the same thread in every access, so
// each thread reads back only what it wrote and the stage needs no barriers. A stage that is gathered from
// or scattered to is shared between threads.
#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

std::vector<bool> stages_owned(const ir::Function& fn, const std::vector<AxisInfo>& axis) {
  std::vector<bool> owned(fn.stages.size(), true);
  std::vector<std::int64_t> piece(fn.stages.size(), 0);
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (!ir::is_stage_access(in.op)) return;
    const int k = in.as<ir::attr::StageRef>().stage;
    if (ir::is_stage_indexed(in.op)) {  // offsets per lane: any thread may touch any element
      owned[k] = false;
      return;
    }
    const std::int64_t P = fn.values[in.op == ir::Op::stage_load ? in.result : in.args[1]].dims[0];
    if (piece[k] == 0) piece[k] = P;
    if (piece[k] != P || axis[in.args[0]].divisibility < P) owned[k] = false;
  });
  return owned;
}

}  // namespace tilefuse::passes
