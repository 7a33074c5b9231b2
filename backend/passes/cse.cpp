// Common subexpression elimination: a pure instruction equal to one computed earlier (same op, operands,
// attribute and result type) is dropped and its uses read the earlier value. A loop body sees the
// expressions computed before it; what it computes stays inside it.
#include <map>
#include <tuple>

#include "backend/ir/ops.hpp"
#include "backend/passes/passes.hpp"
#include "backend/passes/rewriter.hpp"

namespace tilefuse::passes {

namespace {

class Cse : public Rewriter {
  // Everything that decides a pure instruction's value. The result type is part of it because a cast (or
  // a constant) differs only by its result dtype.
  using Key = std::tuple<ir::Op, std::vector<ir::ValueId>, ir::Attribute, std::string>;

  void visit(ir::Instr in) override {
    if (!ir::is_pure(in.op) || in.result < 0) return keep(std::move(in));
    Key key{in.op, in.args, in.attr, input().values[in.result].str()};
    if (auto it = seen_.find(key); it != seen_.end()) return replace(in.result, it->second);
    seen_.emplace(std::move(key), in.result);
    keep(std::move(in));
  }
  void enter_loop(const ir::Instr&) override { scopes_.push_back(seen_); }
  void leave_loop(const ir::Instr&) override {
    seen_ = std::move(scopes_.back());
    scopes_.pop_back();
  }

  std::map<Key, ir::ValueId> seen_;
  std::vector<std::map<Key, ir::ValueId>> scopes_;
};

}  // namespace

ir::Function cse(const ir::Function& fn) { return Cse().run(fn); }

}  // namespace tilefuse::passes
