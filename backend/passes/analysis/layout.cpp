// Layout choice: how each 1D tile size spreads over a program's threads, in runs as long as its widest
// 16-byte access allows.
#include <algorithm>

#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

std::map<std::int64_t, TileLayout> choose_layouts(const ir::Function& fn, int threads) {
  // Widest useful run per tile size: 16 bytes of the narrowest element that a load or store (to memory or
  // a stage) of that size touches (8 halves, 4 floats), so every access can be one 16-byte transaction per thread.
  std::map<std::int64_t, int> widest;
  for (const ir::ValueType& t : fn.values)
    if (t.rank == 1) widest.emplace(t.dims[0], 1);
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (ir::is_stage_access(in.op)) {
      const ir::ValueType& t = fn.values[in.op == ir::Op::stage_load ? in.result : in.args[1]];
      int& w = widest[t.dims[0]];
      w = std::max(w, 16 / ir::dtype_bytes(t.dtype));
      return;
    }
    if (in.op != ir::Op::load && in.op != ir::Op::store) return;
    const ir::ValueType& p = fn.values[in.args[0]];
    if (p.rank != 1) return;
    int& w = widest[p.dims[0]];
    w = std::max(w, 16 / ir::dtype_bytes(p.dtype));
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
