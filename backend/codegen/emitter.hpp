// The CUDA emitter shared by the lowering files: one Emitter per generated kernel. The core (emitter.cpp)
// owns the kernel frame, value names and statement plumbing; each op family lowers in a file of its own,
// as Triton splits lowering: elementwise.cpp, memory.cpp (global loads and stores), stages.cpp (shared
// memory), reductions.cpp (block and cluster reductions), control.cpp (loops). Every decision about the
// program's meaning (layouts, vector widths, folded masks, stage ownership) arrives in the Analysis.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "backend/codegen/bounds.hpp"
#include "backend/codegen/cuda.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::codegen {

class Emitter {
 public:
  Emitter(const ir::Function& fn, const passes::Analysis& analysis, const Options& options);
  /// The kernel's whole source.
  std::string run();

 private:
  // ---- core (emitter.cpp) ----
  void check() const;
  void signature();
  void frame();
  void instr(const ir::Instr& in);
  void geometry(const ir::Instr& in);
  /// Declares the result and emits `result = expr` for every element (or once for scalars).
  void elementwise(const ir::Instr& in, const std::string& expr);
  /// Declares `id` (non-const: loops assign it) and copies `from` into it.
  void declare_copy(ir::ValueId id, ir::ValueId from);
  std::string v(ir::ValueId id) const;
  /// Operand as seen inside the element loop.
  std::string at(ir::ValueId id) const;
  /// Register type of a value; pointers into parameters nothing stores through are const.
  std::string value_type(ir::ValueId id) const;
  const passes::TileLayout& layout(const ir::ValueType& t) const { return a_.layout(t); }
  int per_thread(const ir::ValueType& t) const { return t.rank == 0 ? 1 : layout(t).per_thread; }
  /// Tile index held by element `e` of this thread (an unrolled loop variable).
  std::string index_expr(const passes::TileLayout& l, const std::string& e = "e") const;
  /// The flag of threads that hold elements of a tile smaller than the program ("" when all do).
  std::string live(const ir::ValueType& t) const;
  bool known_true(ir::ValueId mask) const { return a_.axis[mask].always_true; }

  // ---- elementwise.cpp ----
  void arithmetic(const ir::Instr& in);
  void compare(const ir::Instr& in, const std::string& op);
  /// A mask the analysis found to be an interval of a stepping index, as the bits of each run at once.
  void interval_mask(const ir::Instr& in);
  /// A where whose mask is an interval mask: each run's bits tested once (all on: a copy; else lane by lane).
  void select_by_runs(const ir::Instr& in, const std::vector<std::string>& a);
  void cast(const ir::Instr& in);

  // ---- memory.cpp ----
  void load(const ir::Instr& in);
  void store(const ir::Instr& in);
  /// Whether lane `idx` of an access is on: the live flag and mask[idx] (-1: no mask); "" when always.
  std::string lane_test(const std::string& live, ir::ValueId mask, const std::string& idx) const;
  /// The test of a vector run at e0 against the access's mask (and the live flag); "" when none.
  template <class Pred>
  std::string run_test(const passes::AccessPlan& p, Pred pred) const;
  void load_run(const std::string& indent, ir::DType dt, int W, const std::string& addr, const std::string& r);
  void store_run(const std::string& indent, ir::DType dt, int W, const std::string& val, const std::string& addr, int hint = 0);

  // ---- stages.cpp ----
  void declare_stages();
  void stage_copy(const ir::Instr& in);
  /// Stage stores and loads, scatters and gathers.
  void stage_access(const ir::Instr& in);
  void stage_barrier(const ir::Instr& in);
  void stage_sync(const ir::Instr& in);
  /// Copies in flight (CopyState): closes the open group (cp.async.commit_group), if any; with
  /// `even_empty`, closes one in any case (an empty group counts as one).
  void commit_copies(bool even_empty = false);
  /// Waits until this thread's copies into stage k have landed (as few groups as the state allows).
  void wait_for_copies(int k);
  /// Waits for every copy in flight.
  void wait_all_copies();
  /// The once-per-tile bounds test of a stage access ("" when none is needed).
  std::string tile_in(const ir::Instr& in, const passes::AccessPlan& p) const;
  /// The per-element bounds test of a stage access ("" when the plan decides per tile).
  std::string element_in(const ir::Instr& in, const passes::AccessPlan& p, const passes::TileLayout& l, const std::string& e) const;

  // ---- reductions.cpp ----
  void reduce(const ir::Instr& in);
  void cluster_reduce(const ir::Instr& in);

  // ---- control.cpp ----
  void loop(const ir::Instr& in);

  const ir::Function& fn_;
  const passes::Analysis& a_;
  const Options& opt_;
  int threads_;
  bool packed_;
  int cluster_reductions_left_ = 0;  // cluster reductions not yet emitted (the last one arrives at the exit barrier)
  bool arrive_after_loop_ = false;    // the last cluster reduction was inside a loop: arrive once it ends
  int loop_depth_ = 0;
  std::vector<bool> used_;            // by value: an instruction or a loop's yield reads it (run() fills it)
  // The copies that may be in flight at this point of the emitted code, by stage: copied since the last
  // commit (open), or committed with at least `after` committed groups issued after its newest one (-1:
  // none in flight). Only an access of a stage with copies in flight waits, for as few groups as this
  // bound allows (cp.async.wait_group after), so that a copy issued ahead into one stage overlaps the reads
  // of others; where nothing was committed, the wait is for all (cp.async.wait_all).
  struct CopyState {
    std::vector<bool> open;
    std::vector<int> after;
    bool pending(std::size_t k) const { return open[k] || after[k] >= 0; }
    bool any() const;
    bool any_open() const { return std::find(open.begin(), open.end(), true) != open.end(); }
    /// The state where control flow from this one and `other` joins (neither open): the bound of each.
    void join(const CopyState& other);
  };
  CopyState copies_;
  std::ostringstream os_;

 public:
  BoundsChecks bounds_;  // debug bounds checks (off unless Options::bounds_checks); its sites go to Generated
};

/// The CUDA expression of the pure elementwise op `in` of `fn` (constant, splat, arithmetic, math,
/// comparison, logic, where, cast, pointer offset, rand) over its operands' expressions `a`.
std::string elementwise_expr(const ir::Function& fn, const ir::Instr& in, const std::vector<std::string>& a);
/// Whether `in` is a cast of a float to f16/bf16 whose every use stores it: it keeps the f32 value, and the
/// store rounds it once (RN of the value equals RN of its RN), which spares a conversion and a widening
/// per element. Both emitters follow it.
bool rounded_by_stores(const ir::Function& fn, const passes::Analysis& a, const ir::Instr& in);
/// The value of parameter `index` (a scalar) as the kernel reads it: its argument `a_<name>`, or the
/// literal Options::constants compiles in for it.
std::string param_value(const ir::Function& fn, const Options& opt, int index);
/// The kernel's opening line: launch bounds, cluster dimensions, name and parameters (pointers that
/// nothing stores through are const), through the opening brace.
std::string signature_text(const ir::Function& fn, const passes::Analysis& a, const Options& opt);

/// Whether an instruction of `block` (loop bodies included) has an op for which pred(op) holds.
template <class Pred>
bool any_of_ops(const std::vector<ir::Instr>& block, Pred pred) {
  bool any = false;
  ir::walk(block, [&](const ir::Instr& in) { any = any || pred(in.op); });
  return any;
}

}  // namespace tilefuse::codegen
