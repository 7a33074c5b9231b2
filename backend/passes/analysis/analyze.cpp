// The analyses' entry point: every analysis of one specialization, in dependency order.
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

Analysis analyze(const ir::Function& fn, int threads, const std::vector<int>& param_divisibility, bool warpgroup_mma,
                 std::vector<std::optional<std::int64_t>> param_constants) {
  Analysis a;
  a.threads = threads;
  a.constants = std::move(param_constants);
  a.warpgroup_mma = warpgroup_mma;
  a.axis = analyze_axis_info(fn, param_divisibility);
  find_pointer_roots(fn, a);
  a.only_stored = values_only_stored(fn);
  for (const ir::ValueType& t : fn.values) a.matrix = a.matrix || t.rank == 2;
  if (a.matrix) {  // 2D tiles: layouts per value; stages and 1D access plans do not apply
    plan_tiles(fn, a);
    return a;
  }
  a.layouts = choose_layouts(fn, threads, a.axis);
  a.stage_owned = stages_owned(fn, a.axis);
  plan_accesses(fn, a);
  a.interval = find_interval_masks(fn, a);
  return a;
}

}  // namespace tilefuse::passes
