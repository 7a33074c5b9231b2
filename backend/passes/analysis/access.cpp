// Access plans: for every load, store and stage access, how many elements move per access (16 bytes
// where the layout, the contiguity and the alignment allow), whether its mask still needs testing and
// how a run is tested against it, and where a stage access lies against the stage's bounds. Also the
// runs over which comparisons are constant (one predicate per run instead of one per element).
#include <algorithm>

#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

namespace {

class Planner {
 public:
  Planner(const ir::Function& fn, Analysis& a) : fn_(fn), a_(a), def_(fn.values.size(), nullptr) {
    ir::walk(fn.body, [&](const ir::Instr& in) {
      if (in.result >= 0) def_[in.result] = &in;
    });
  }

  void run() {
    a_.compare_run.assign(fn_.values.size(), 1);
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      switch (in.op) {
        case ir::Op::load: a_.access[&in] = global(in.args[0], in.args.size() >= 2 ? in.args[1] : -1); break;
        case ir::Op::store: a_.access[&in] = global(in.args[0], in.args.size() == 3 ? in.args[2] : -1); break;
        case ir::Op::stage_copy: a_.access[&in] = stage_copy(in); break;
        case ir::Op::stage_store:
        case ir::Op::stage_load: a_.access[&in] = stage_access(in); break;
        case ir::Op::stage_gather:
        case ir::Op::stage_scatter: a_.access[&in] = stage_indexed(in); break;
        case ir::Op::lt:
        case ir::Op::le:
        case ir::Op::gt:
        case ir::Op::ge: a_.compare_run[in.result] = compare_run(in.result); break;
        default: break;
      }
    });
  }

 private:
  bool known_true(ir::ValueId mask) const { return a_.axis[mask].always_true; }
  // Whether mask `m` is all true or all false over each aligned run of W lanes.
  bool constant_over(ir::ValueId m, int W) const { return m >= 0 && a_.axis[m].constancy >= W; }

  // Elements per vector access through pointer tile `ptr` (1 when not provable).
  int vector_width(ir::ValueId ptr) const {
    const auto& pt = fn_.values[ptr];
    if (pt.rank == 0) return 1;
    const int bytes = ir::dtype_bytes(pt.dtype);
    const auto& info = a_.axis[ptr];
    int w = a_.layout(pt).vector;
    while (w > 1 && (w * bytes > 16 || info.contiguity < w || info.divisibility < w * bytes)) w /= 2;
    return w;
  }

  AccessPlan global(ir::ValueId ptr, ir::ValueId mask) const {
    AccessPlan p;
    p.masked = mask >= 0 && !known_true(mask);
    p.vector = vector_width(ptr);
    if (!p.masked || p.vector == 1) return p;
    const ir::Instr* def = def_[mask];
    if (constant_over(mask, p.vector)) p.run = RunMask::first_lane;
    else if (def && def->op == ir::Op::lt && a_.axis[def->args[0]].contiguity >= p.vector && a_.axis[def->args[1]].uniform)
      p.run = RunMask::last_lane;
    else p.run = RunMask::every_lane;
    return p;
  }

  // Where a tile of P elements at the access's offset lies against the stage: `inside` when the offset
  // keeps the whole tile in [0, N); `whole` when it is wholly inside or outside (an offset divisible by
  // P, N a multiple of P).
  void bounds(const ir::Instr& in, std::int64_t P, AccessPlan& p) const {
    const std::int64_t N = fn_.stages.at(in.as<ir::attr::StageRef>().stage).size;
    const AxisInfo& oi = a_.axis[in.args[0]];
    p.inside = oi.bounded && oi.min >= 0 && oi.max <= N - P;
    p.whole = oi.divisibility >= P && N % P == 0;
  }

  // Vector runs need the bounds decided per tile and the mask constant over each run.
  void narrow_for_stage(AccessPlan& p, ir::ValueId mask) const {
    if (!p.inside && !p.whole) p.vector = 1;  // the bounds test is per element
    if (p.masked && !constant_over(mask, p.vector)) p.vector = 1;
  }

  AccessPlan stage_copy(const ir::Instr& in) const {
    AccessPlan p;
    const auto& pt = fn_.values[in.args[1]];
    const ir::ValueId mask = in.args.size() == 3 ? in.args[2] : -1;
    p.masked = mask >= 0 && !known_true(mask);
    bounds(in, pt.dims[0], p);
    p.vector = std::min(vector_width(in.args[1]), a_.layout(pt).vector);
    while (p.vector > 1 && a_.axis[in.args[0]].divisibility < p.vector) p.vector /= 2;
    if (!p.inside && !p.whole) p.vector = 1;  // the bounds test is per element
    // A mask that is not even over a run (a row's aligned window, whose first and last runs are partly
    // the row's): the run is copied at once when every lane is in, else element by element.
    if (p.masked && p.vector > 1 && !constant_over(mask, p.vector)) p.run = RunMask::every_lane;
    return p;
  }

  // The tile a stage store, load, scatter or gather moves, and its mask (-1: none).
  struct StageOperands {
    const ir::ValueType& tile;
    ir::ValueId mask;
  };
  StageOperands stage_operands(const ir::Instr& in) const {
    const bool store = in.op == ir::Op::stage_store || in.op == ir::Op::stage_scatter;
    const std::size_t mask_at = store ? 2 : 1;
    return {fn_.values[store ? in.args[1] : in.result], in.args.size() > mask_at ? in.args[mask_at] : -1};
  }

  AccessPlan stage_access(const ir::Instr& in) const {
    AccessPlan p;
    const auto [t, mask] = stage_operands(in);
    p.masked = mask >= 0 && !known_true(mask);
    bounds(in, t.dims[0], p);
    const int bytes = ir::dtype_bytes(fn_.stages.at(in.as<ir::attr::StageRef>().stage).dtype);
    p.vector = a_.layout(t).vector;
    while (p.vector > 1 && (p.vector * bytes > 16 || a_.axis[in.args[0]].divisibility < p.vector)) p.vector /= 2;
    narrow_for_stage(p, mask);
    return p;
  }

  // A gather or scatter: `inside` when the offsets provably stay in the stage; for 1D tiles, runs as long
  // as the layout's where the offsets are provably contiguous and aligned (a run of W offsets starting at
  // a multiple of W lies wholly inside or outside a stage of a multiple of W elements: `whole`), and the
  // mask constant over each run. Programs with 2D tiles choose runs from their own layouts.
  AccessPlan stage_indexed(const ir::Instr& in) const {
    AccessPlan p;
    const auto [t, mask] = stage_operands(in);
    p.masked = mask >= 0 && !known_true(mask);
    const ir::Stage& st = fn_.stages.at(in.as<ir::attr::StageRef>().stage);
    const AxisInfo& oi = a_.axis[in.args[0]];
    p.inside = oi.within(st.size);
    if (t.rank != 1) return p;
    const int bytes = ir::dtype_bytes(st.dtype);
    p.vector = a_.layout(t).vector;
    while (p.vector > 1 && (p.vector * bytes > 16 || oi.contiguity < p.vector || oi.divisibility < p.vector)) p.vector /= 2;
    p.whole = st.size % p.vector == 0;
    if (!p.inside && !p.whole) p.vector = 1;
    if (p.masked && !constant_over(mask, p.vector)) p.vector = 1;
    return p;
  }

  // A comparison constant over each run of the layout (an index against a bound that is a multiple of the
  // run) can compare the run's first elements only.
  int compare_run(ir::ValueId result) const {
    const auto& t = fn_.values[result];
    const int R = t.rank > 0 ? a_.layout(t).vector : 1;
    return R > 1 && a_.axis[result].constancy >= R ? R : 1;
  }

  const ir::Function& fn_;
  Analysis& a_;
  std::vector<const ir::Instr*> def_;  // the instruction defining each value (null for loop block arguments)
};

}  // namespace

void plan_accesses(const ir::Function& fn, Analysis& a) { Planner(fn, a).run(); }

}  // namespace tilefuse::passes
