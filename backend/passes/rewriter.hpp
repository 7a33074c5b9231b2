// The shared rewriter every IR-rewriting pass derives from (Halide's IRMutator): it walks a function
// block by block in program order, remaps each instruction's operands through the replacements made so
// far, hands the instruction to the pass's visit(), and rebuilds loop regions around the bodies it
// rewrote. A pass says only what changes: keep, drop, replace, emit new instructions, reorder a block.
#pragma once

#include <vector>

#include "backend/ir/ir.hpp"

namespace tilefuse::passes {

class Rewriter {
 public:
  /// How values are numbered in the output: `keep` leaves every id as it was (new values go after the
  /// old ones); `dense` numbers the values 0, 1, ... in order of definition.
  enum class Numbering { keep, dense };

  explicit Rewriter(Numbering numbering = Numbering::keep) : numbering_(numbering) {}
  virtual ~Rewriter() = default;
  Rewriter(const Rewriter&) = delete;
  Rewriter& operator=(const Rewriter&) = delete;

  /// The rewritten function.
  ir::Function run(const ir::Function& fn);

 protected:
  /// Called for each instruction that is not a loop, its operands already remapped; the default keeps it.
  virtual void visit(ir::Instr in) { keep(std::move(in)); }
  /// Called before a loop's body is rewritten (operands remapped) and after it (body rewritten).
  virtual void enter_loop(const ir::Instr& /*loop*/) {}
  virtual void leave_loop(const ir::Instr& /*loop*/) {}
  /// Whether a rewritten loop stays; the default keeps every loop.
  virtual bool keep_loop(const ir::Instr& /*loop*/) { return true; }
  /// Called with every block once it is rewritten (loop bodies first), to reorder it.
  virtual void finish_block(std::vector<ir::Instr>& /*block*/) {}

  /// Appends `in` to the block being built (in dense numbering its result gets the next id).
  void keep(ir::Instr in);
  /// Appends a new instruction defining a value of `type` and returns its id.
  ir::ValueId emit(ir::Instr in, const ir::ValueType& type);
  /// Later operands that name `old` name `now` instead (the instruction defining `old` is dropped).
  void replace(ir::ValueId old, ir::ValueId now);
  /// The id that an operand naming `v` (in the input) has in the output.
  ir::ValueId mapped(ir::ValueId v) const { return map_[v]; }
  /// The function being rewritten.
  const ir::Function& input() const { return *in_; }
  /// The function being built (its values so far).
  const ir::Function& output() const { return out_; }

 private:
  std::vector<ir::Instr> block(const std::vector<ir::Instr>& instrs);
  ir::Instr loop(const ir::Instr& in);
  ir::ValueId define(ir::ValueId old);

  Numbering numbering_;
  const ir::Function* in_ = nullptr;
  ir::Function out_;
  std::vector<ir::ValueId> map_;
  std::vector<ir::Instr>* current_ = nullptr;
};

}  // namespace tilefuse::passes
