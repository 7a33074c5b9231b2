// The shared rewriter (see rewriter.hpp): block recursion, operand remapping, loop regions, numbering.
#include "backend/passes/rewriter.hpp"

#include "backend/ir/ops.hpp"

namespace tilefuse::passes {

ir::Function Rewriter::run(const ir::Function& fn) {
  in_ = &fn;
  out_ = ir::Function{};
  out_.name = fn.name;
  out_.params = fn.params;
  out_.stages = fn.stages;
  map_.resize(fn.values.size());
  if (numbering_ == Numbering::keep) {
    out_.values = fn.values;
    for (std::size_t i = 0; i < map_.size(); ++i) map_[i] = static_cast<ir::ValueId>(i);
  } else {
    map_.assign(fn.values.size(), -1);
  }
  out_.body = block(fn.body);
  return std::move(out_);
}

ir::ValueId Rewriter::define(ir::ValueId old) {
  if (numbering_ == Numbering::keep || old < 0) return old;
  map_[old] = out_.add_value(in_->values[old]);
  return map_[old];
}

void Rewriter::keep(ir::Instr in) {
  if (in.result >= 0 && numbering_ == Numbering::dense) in.result = define(in.result);
  current_->push_back(std::move(in));
}

ir::ValueId Rewriter::emit(ir::Instr in, const ir::ValueType& type) {
  in.result = out_.add_value(type);
  if (numbering_ == Numbering::keep) map_.push_back(in.result);  // so that mapped() also knows new values
  current_->push_back(std::move(in));
  return current_->back().result;
}

void Rewriter::replace(ir::ValueId old, ir::ValueId now) { map_[old] = now; }

std::vector<ir::Instr> Rewriter::block(const std::vector<ir::Instr>& instrs) {
  std::vector<ir::Instr> built;
  std::vector<ir::Instr>* outer = current_;
  current_ = &built;
  for (const ir::Instr& in : instrs) {
    if (ir::op_info(in.op).region) {
      ir::Instr rewritten = loop(in);
      if (keep_loop(rewritten)) built.push_back(std::move(rewritten));
      continue;
    }
    ir::Instr copy = in;
    for (auto& a : copy.args) a = map_[a];
    visit(std::move(copy));
  }
  finish_block(built);
  current_ = outer;
  return built;
}

ir::Instr Rewriter::loop(const ir::Instr& in) {
  ir::Instr copy;
  copy.op = in.op;
  copy.attr = in.attr;
  copy.where = in.where;
  copy.args = in.args;
  for (auto& a : copy.args) a = map_[a];
  copy.block_args = in.block_args;
  for (auto& b : copy.block_args) b = define(b);
  enter_loop(copy);
  copy.body = block(in.body);
  copy.yields = in.yields;
  for (auto& y : copy.yields) y = map_[y];
  copy.results = in.results;
  for (auto& r : copy.results) r = define(r);
  leave_loop(copy);
  return copy;
}

}  // namespace tilefuse::passes
