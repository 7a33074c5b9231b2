// Layout choice: how each 1D tile size spreads over a program's threads, in runs as long as its widest
// access that the axis analysis proves contiguous and aligned (16 bytes at most).
#include <algorithm>

#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

int provable_run(const AxisInfo& info, int bytes) {
  int w = std::max(1, 16 / bytes);
  while (w > 1 && (info.contiguity < w || info.divisibility < std::int64_t{w} * bytes)) w /= 2;
  return w;
}

std::map<std::int64_t, TileLayout> choose_layouts(const ir::Function& fn, int threads, const std::vector<AxisInfo>& axis) {
  // Widest useful run per tile size: the widest access of that size that can move its run at once (16
  // bytes: 8 halves, 4 floats; stages are always aligned). Runs longer than every access allows would only
  // spread each warp's accesses: a row of odd width, whose loads go element by element, is better read
  // with each thread one element apart (every warp access one contiguous piece) than 8 apart.
  std::map<std::int64_t, int> widest;
  for (const ir::ValueType& t : fn.values)
    if (t.rank == 1) widest.emplace(t.dims[0], 1);
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (ir::is_stage_access(in.op)) {
      const ir::ValueType& t = fn.values[in.op == ir::Op::stage_load || in.op == ir::Op::stage_gather ? in.result : in.args[1]];
      if (t.rank != 1) return;
      int& w = widest[t.dims[0]];
      w = std::max(w, 16 / ir::dtype_bytes(t.dtype));
      return;
    }
    if (in.op != ir::Op::load && in.op != ir::Op::store) return;
    const ir::ValueType& p = fn.values[in.args[0]];
    if (p.rank != 1) return;
    int& w = widest[p.dims[0]];
    w = std::max(w, provable_run(axis[in.args[0]], ir::dtype_bytes(p.dtype)));
  });
  std::map<std::int64_t, TileLayout> out;
  for (const auto& [n, w] : widest) {
    TileLayout l;
    l.n = static_cast<int>(n);
    l.threads = threads;
    l.per_thread = std::max(1, l.n / threads);
    l.vector = std::min(l.per_thread, w);
    out.emplace(n, l);
  }
  return out;
}

}  // namespace tilefuse::passes
