// Dead code elimination: drops pure instructions whose results nothing uses, and loops whose results
// nothing uses and whose bodies store nothing.
#include "backend/ir/ops.hpp"
#include "backend/passes/passes.hpp"
#include "backend/passes/rewriter.hpp"

namespace tilefuse::passes {

namespace {

bool stores_in(const std::vector<ir::Instr>& block) {
  for (const auto& in : block)
    if (in.op == ir::Op::store || in.op == ir::Op::stage_store || in.op == ir::Op::stage_copy || in.op == ir::Op::stage_scatter ||
        (ir::op_info(in.op).region && stores_in(in.body)))
      return true;
  return false;
}

class Dce : public Rewriter {
 public:
  // Roots: stores (to memory or a stage), parameters, loads (they may fault on bad addresses, as the
  // source asked), stage loads (their barriers pair with other threads') and loops whose bodies store:
  // everything impure. A live loop keeps its bounds, initial values and yields alive.
  explicit Dce(const ir::Function& fn) : live_(fn.values.size(), false) {
    for (bool changed = true; changed;) {
      changed = false;
      ir::walk(fn.body, [&](const ir::Instr& in) {
        if (!keeps(in)) return;
        auto mark = [&](ir::ValueId v) {
          if (!live_[v]) live_[v] = changed = true;
        };
        for (ir::ValueId a : in.args) mark(a);
        for (ir::ValueId y : in.yields) mark(y);
      });
    }
  }

 private:
  bool keeps(const ir::Instr& in) const {
    if (ir::op_info(in.op).region) {
      for (ir::ValueId r : in.results)
        if (live_[r]) return true;
      return stores_in(in.body);
    }
    return !ir::is_pure(in.op) || (in.result >= 0 && live_[in.result]);
  }
  void visit(ir::Instr in) override {
    if (keeps(in)) keep(std::move(in));
  }
  bool keep_loop(const ir::Instr& loop) override { return keeps(loop); }

  std::vector<bool> live_;
};

}  // namespace

ir::Function dce(const ir::Function& fn) { return Dce(fn).run(fn); }

}  // namespace tilefuse::passes
