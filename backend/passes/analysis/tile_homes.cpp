// Homes of the values of a program with 2D tiles: where each lives and in which layout. A dot's result
// takes the tensor-core accumulator layout; a load that only feeds dot operands goes straight to shared
// memory; other loads take the blocked layout of 16-byte runs, or of shorter runs spaced by lanes where
// the access is not provably aligned (a row of odd width); gathers from stages take 16-byte runs, or,
// for a 2D gather reduced along one axis, whole lines along it in each thread (thread_lines_layout);
// arithmetic takes its operands' layout (the tensor-core one first); reductions along an axis take the
// slice of their operand's layout; loop values take what their iterations give (to a fixpoint). Pure
// arithmetic on indices, constants and broadcasts is lazy: it is computed where it is used, in the
// layout the use needs, so masks and addresses never move between threads.
//
// Planning runs forward, then looks back once at 1D loads: a load whose value (and what is computed
// from it alone, a cast) is only broadcast into 2D tiles that all want it in one blocked layout
// (LayerNorm's w and b against rows held lane-spaced) is loaded in that layout and
// the program planned again, so it never crosses layouts through shared memory (two barriers each).
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::passes {

namespace {

// Bytes an element of tile type `t` takes in a layout: masks (i1) are laid out as 4-byte elements.
int layout_bytes(const ir::ValueType& t) { return t.dtype == ir::DType::i1 ? 4 : ir::dtype_bytes(t.dtype); }

// 1D tiles loaded from memory that arithmetic on a gathered 2D tile takes along its lines: none, only
// ones whose load masks fold when the kernel compiles, or some whose masks do not.
enum class LineOperands { none, folded, unfolded };

class TilePlanner {
 public:
  TilePlanner(const ir::Function& fn, Analysis& a)
      : fn_(fn), a_(a), warps_(a.threads / 32), uses_(fn.values.size()), defs_(fn.values.size(), nullptr), forced_(fn.values.size()) {}

  void run() {
    count_uses(fn_.body);
    ir::walk(fn_.body, [&](const ir::Instr& in) { split_rows_ = split_rows_ || ir::is_axis_reduction(in.op); });
    plan();
    if (load_where_broadcast()) plan();
  }

 private:
  struct Use {
    const ir::Instr* in;
    int operand;  // -1: a loop yield
  };

  void plan() {
    a_.home.assign(fn_.values.size(), TileHome{});
    known_.assign(fn_.values.size(), false);
    block(fn_.body);  // (loop() gives what no iteration decided the blocked layout)
  }

  void count_uses(const std::vector<ir::Instr>& b) {
    for (const ir::Instr& in : b) {
      for (std::size_t k = 0; k < in.args.size(); ++k) uses_[in.args[k]].push_back({&in, static_cast<int>(k)});
      for (ir::ValueId y : in.yields) uses_[y].push_back({&in, -1});
      if (in.result >= 0) defs_[in.result] = &in;
      count_uses(in.body);
    }
  }

  // An op planned by the arithmetic rule: its operands are read in its own layout.
  static bool arithmetic(const ir::Instr& in) {
    switch (ir::op_info(in.op).family) {
      case ir::Family::dot:
      case ir::Family::memory:
      case ir::Family::stage:
      case ir::Family::axis_reduction:
      case ir::Family::shape:
      case ir::Family::reduction:
      case ir::Family::cluster:
      case ir::Family::control: return false;
      default: return in.result >= 0;
    }
  }

  // The layouts in which the values in registers are read through lazy values (expand, broadcast,
  // trans, lazy arithmetic), by operand_layout as code generation reads them: `wants_[x]` gets
  // (layout, reader) for x read in `l` by `reader`.
  void want(ir::ValueId x, const TileLayout2& l, const ir::Instr* reader) {
    if (fn_.values[x].rank == 0 || fn_.values[x].rank != l.rank) return;
    const TileHome& h = a_.home[x];
    if (h.where == Where::registers) return wants_[x].push_back({l, reader});
    if (h.where != Where::lazy || !defs_[x]) return;
    const ir::Instr& d = *defs_[x];
    const TileLayout2 read = operand_layout(fn_, d, l);
    for (ir::ValueId a : d.args) want(a, read, reader);
  }

  // Chooses the layout of every 1D load whose value is only read by arithmetic through broadcasts in one
  // layout other than its own (see the file's comment); true when any changed.
  bool load_where_broadcast() {
    wants_.assign(fn_.values.size(), {});
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (arithmetic(in) && a_.home[in.result].where == Where::registers)
        for (ir::ValueId x : in.args) want(x, a_.home[in.result].layout, &in);
    });
    bool changed = false;
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (in.op != ir::Op::load || in.result < 0 || fn_.values[in.result].rank != 1 || !in_registers(in.result)) return;
      if (auto l = broadcast_layout(in.result)) {
        forced_[in.result] = std::move(*l);
        changed = true;
      }
    });
    return changed;
  }

  // The one layout the 1D load `v` is read in past the values that follow its layout (arithmetic of
  // rank 1 on it alone, a cast), when that is not its own and it is only read through broadcasts.
  std::optional<TileLayout2> broadcast_layout(ir::ValueId v) {
    std::vector<ir::ValueId> follow{v};  // v and what takes its layout from it
    auto follows = [&](ir::ValueId x) { return std::find(follow.begin(), follow.end(), x) != follow.end(); };
    for (std::size_t k = 0; k < follow.size(); ++k)
      for (const Use& u : uses_[follow[k]]) {
        if (u.operand < 0) return std::nullopt;  // a loop's carried value
        const ir::Instr& in = *u.in;
        if (in.op == ir::Op::expand) continue;   // read through it: in wants_
        if (!arithmetic(in) || fn_.values[in.result].rank != 1 || !in_registers(in.result)) return std::nullopt;
        for (ir::ValueId a : in.args)  // every other operand in registers would pick the layout too
          if (in_registers(a) && fn_.values[a].rank == 1 && !follows(a)) return std::nullopt;
        if (!follows(in.result)) follow.push_back(in.result);
      }
    std::optional<TileLayout2> wanted;
    for (ir::ValueId x : follow)
      for (const auto& [l, reader] : wants_[x]) {
        if (follows(reader->result)) continue;
        // Read in a tensor-core layout: left as it is. A dot's epilogue converts its bias once per
        // program, and an accumulator's slice holds 8 times the elements per thread.
        if (a_.home[reader->result].layout.mma) return std::nullopt;
        if (wanted && !wanted->same(l)) return std::nullopt;
        wanted = l;
      }
    if (!wanted || wanted->same(home(v).layout)) return std::nullopt;
    return wanted;
  }

  // The axis along which a gathered 2D tile `v` may be held as whole lines per thread: the one axis along
  // which v, or arithmetic of its shape computed from it, is reduced; -1 when none is or both are.
  // `operands` says whether that arithmetic takes 1D tiles loaded from memory (LayerNorm's w and b,
  // broadcast along the lines) and whether their load masks fold (mask_folds).
  int reduced_axis(ir::ValueId v, LineOperands& operands) const {
    std::vector<ir::ValueId> follow{v};
    auto follows = [&](ir::ValueId x) { return std::find(follow.begin(), follow.end(), x) != follow.end(); };
    int axis = -1;
    operands = LineOperands::none;
    for (std::size_t k = 0; k < follow.size(); ++k)
      for (const Use& u : uses_[follow[k]]) {
        if (u.operand < 0) continue;
        const ir::Instr& in = *u.in;
        if (ir::is_axis_reduction(in.op)) {
          const int a = in.as<ir::attr::Axis>().axis;
          if (axis >= 0 && axis != a) return -1;
          axis = a;
        } else if (arithmetic(in) && fn_.values[in.result].rank == 2 && !follows(in.result)) {
          for (ir::ValueId x : in.args) {
            if (follows(x) || !from_loaded_line(x, 0)) continue;
            if (from_loaded_line(x, 0, true)) {
              operands = LineOperands::unfolded;
            } else if (operands == LineOperands::none) {
              operands = LineOperands::folded;
            }
          }
          follow.push_back(in.result);
        }
      }
    return axis;
  }

  // `x` is computed (through broadcasts, expands and arithmetic) from a 1D tile loaded from memory; with
  // `unfolded`, only from one whose load mask the compiler cannot fold slot by slot (mask_folds).
  bool from_loaded_line(ir::ValueId x, int depth, bool unfolded = false) const {
    const ir::Instr* d = defs_[x];
    if (!d || depth > 16 || fn_.values[x].rank == 0) return false;
    if (ir::op_info(d->op).family == ir::Family::memory)
      return fn_.values[x].rank == 1 && !(unfolded && d->op == ir::Op::load && mask_folds(*d));
    if (d->op != ir::Op::expand && d->op != ir::Op::broadcast && !arithmetic(*d)) return false;
    for (ir::ValueId a : d->args)
      if (from_loaded_line(a, depth + 1, unfolded)) return true;
    return false;
  }

  // Whether load `in`'s mask is known slot by slot when the kernel compiles: none, or a comparison of an
  // arange against a constant or a compiled-in parameter (KernelOptions::constant_params), so that the
  // masked-off slots of a tile wider than the row fold away with their loads and registers.
  bool mask_folds(const ir::Instr& in) const {
    if (in.args.size() < 2) return true;
    const ir::Instr* m = defs_[in.args[1]];
    if (!m || (m->op != ir::Op::lt && m->op != ir::Op::le && m->op != ir::Op::ge)) return false;
    for (ir::ValueId v : m->args)
      if (!known(v)) return false;
    return true;
  }

  // `v` is the same for every launch of this specialization: an arange, a constant, a compiled-in
  // parameter, or a splat of one.
  bool known(ir::ValueId v) const {
    const ir::Instr* d = defs_[v];
    if (!d) return false;
    if (d->op == ir::Op::splat) return known(d->args[0]);
    if (d->op == ir::Op::arange || d->op == ir::Op::constant) return true;
    if (d->op != ir::Op::param) return false;
    const std::size_t index = static_cast<std::size_t>(d->as<ir::attr::Param>().index);
    return index < a_.constants.size() && a_.constants[index].has_value();
  }

  // Every use of `v` is a dot operand (a or b), directly or through trans.
  bool only_dot_operand(ir::ValueId v) const {
    if (uses_[v].empty()) return false;
    for (const Use& u : uses_[v]) {
      if (u.operand < 0) return false;
      if (u.in->op == ir::Op::dot && u.operand < 2) continue;
      if (u.in->op == ir::Op::trans && only_dot_operand(u.in->result)) continue;
      return false;
    }
    return true;
  }

  TileHome& home(ir::ValueId v) { return a_.home[v]; }
  bool in_registers(ir::ValueId v) const { return a_.home[v].where == Where::registers && known_[v]; }

  void block(const std::vector<ir::Instr>& b) {
    for (const ir::Instr& in : b) instr(in);
  }

  void set(ir::ValueId v, TileLayout2 l) {
    home(v) = TileHome{Where::registers, std::move(l)};
    known_[v] = true;
  }

  void instr(const ir::Instr& in) {
    if (in.op == ir::Op::loop) return loop(in);
    if (in.result < 0) return;
    const ir::ValueType& t = fn_.values[in.result];
    if (t.rank == 0) {
      home(in.result) = TileHome{};
      return;
    }
    switch (ir::op_info(in.op).family) {
      case ir::Family::dot: {
        const int m = static_cast<int>(t.dims[0]), n = static_cast<int>(t.dims[1]);
        const auto [wm, wn] = mma_warps(m, n);
        return set(in.result, mma_layout(m, n, wm, wn, warps_));
      }
      case ir::Family::memory:
        if (t.rank == 2 && only_dot_operand(in.result)) {
          home(in.result) = TileHome{Where::shared, {}};
          return;
        }
        if (forced_[in.result]) return set(in.result, *forced_[in.result]);
        return set(in.result, access_layout(t, provable_run(a_.axis[in.args[0]], layout_bytes(t)), warps_));
      case ir::Family::stage: {
        // A 2D gather reduced along one axis, with an element for each thread: as much of each line in
        // one thread as the threads allow, so that the reductions need few shuffles or none (a stage
        // read need not coalesce). Where the lines meet operands loaded along them whose masks do not
        // fold (LayerNorm's w and b against a width that is an argument), not at all: each thread would
        // hold every slot of them, masked (1576 instructions and 127 registers at 25 f16, against 1360 and
        // 80). Where the masks fold (the width compiled in), only when each line is whole in a thread:
        // every thread then reads the same operand addresses (broadcasts) and reduces without a shuffle.
        // Lines over several threads would hold the operands once per thread besides their shuffles:
        // LayerNorm's f32 rows of 19 and 53 columns measured slower so (bench/NOTES.md, "Rows whole in
        // a thread").
        if (t.rank == 2 && t.dims[0] * t.dims[1] >= 32 * warps_) {
          LineOperands operands = LineOperands::none;
          const int axis = reduced_axis(in.result, operands);
          if (axis >= 0 && (operands == LineOperands::none ||
                            (operands == LineOperands::folded && t.dims[1 - axis] >= 32 * warps_)))
            return set(in.result, thread_lines_layout({static_cast<int>(t.dims[0]), static_cast<int>(t.dims[1])}, axis, warps_));
        }
        // Otherwise the blocked layout, like a global load (gathers of odd rows in 16-byte runs measured
        // faster than lane-spaced: bench/NOTES.md, narrow rows in lane-spaced runs).
        return set(in.result, default_layout(t, warps_));
      }
      case ir::Family::axis_reduction: {
        const ir::ValueId x = in.args[0];
        const TileLayout2 from = in_registers(x) ? home(x).layout : default_layout(fn_.values[x], warps_);
        return set(in.result, slice_layout(from, in.as<ir::attr::Axis>().axis));
      }
      case ir::Family::shape:
        if (in.op == ir::Op::trans && home(in.args[0]).where == Where::shared) {
          home(in.result) = TileHome{Where::shared, {}};
          return;
        }
        if (in.op == ir::Op::trans && in_registers(in.args[0])) return set(in.result, trans_layout(home(in.args[0]).layout));
        home(in.result) = TileHome{Where::lazy, {}};
        return;
      default:
        break;
    }
    // Arithmetic: the layout of an operand in registers (a tensor-core one first); lazy when none is.
    const TileLayout2* best = nullptr;
    for (ir::ValueId x : in.args) {
      if (!in_registers(x) || fn_.values[x].rank != t.rank) continue;
      if (!best || (home(x).layout.mma && !best->mma)) best = &home(x).layout;
    }
    if (best) return set(in.result, TileLayout2(*best));
    bool any_pending = false;
    for (ir::ValueId x : in.args) any_pending = any_pending || (home(x).where == Where::registers && !known_[x]);
    if (any_pending || in.op == ir::Op::rand) return set(in.result, default_layout(t, warps_));
    home(in.result) = TileHome{Where::lazy, {}};
  }

  // Carried values take the layout of what the body yields for them (else of their initial value), to a
  // fixpoint: the body is planned again while a carried value's layout changes.
  void loop(const ir::Instr& in) {
    const std::size_t carried = in.block_args.size() - 1;
    for (std::size_t k = 0; k < carried; ++k) {
      const ir::ValueId b = in.block_args[k + 1], init = in.args[k + 3];
      if (fn_.values[b].rank == 0) continue;
      home(b) = TileHome{Where::registers, {}};
      known_[b] = false;
      if (in_registers(init)) set(b, home(init).layout);
    }
    for (int round = 0; round < 4; ++round) {
      block(in.body);
      bool changed = false;
      for (std::size_t k = 0; k < carried; ++k) {
        const ir::ValueId b = in.block_args[k + 1], y = in.yields[k];
        if (fn_.values[b].rank == 0 || !in_registers(y)) continue;
        if (!known_[b] || !home(b).layout.same(home(y).layout)) {
          set(b, home(y).layout);
          changed = true;
        }
      }
      if (!changed) break;
    }
    for (std::size_t k = 0; k < carried; ++k) {
      const ir::ValueId b = in.block_args[k + 1], r = in.results[k];
      if (fn_.values[b].rank == 0) continue;
      if (!known_[b]) set(b, default_layout(fn_.values[b], warps_));
      set(r, home(b).layout);
    }
  }

  // The warp grid of a dot's [m, n] result: with warpgroup MMA, 16 rows per warp (warpgroup_grid); else
  // when rows are reduced (attention's softmax), every warp holds whole rows, so row reductions stay within
  // a warp; otherwise the squarest grid, which reads the least shared memory per product.
  std::pair<int, int> mma_warps(int m, int n) const {
    if (a_.warpgroup_mma)
      if (const auto g = warpgroup_grid(m, n, warps_, split_rows_); g.first > 0) return g;
    const int most_m = std::max(1, std::min(warps_, m / 16));
    if (split_rows_ && warps_ % most_m == 0 && n % (8 * (warps_ / most_m)) == 0) return {most_m, warps_ / most_m};
    std::pair<int, int> best{0, 0};
    double best_score = 1e30;
    for (int wm = 1; wm <= warps_; wm *= 2) {
      const int wn = warps_ / wm;
      if (m % (16 * wm) != 0 || n % (8 * wn) != 0) continue;
      const double rows = m / wm, cols = n / wn;
      const double score = std::max(rows / cols, cols / rows);
      if (score < best_score) best_score = score, best = {wm, wn};
    }
    if (best.first == 0)
      throw std::invalid_argument("tilefuse: a dot's " + std::to_string(m) + "x" + std::to_string(n) + " result does not spread over " +
                                  std::to_string(warps_) + " warps (each needs at least 16 rows and 8 columns); use fewer warps "
                                  "or a larger tile");
    return best;
  }

  const ir::Function& fn_;
  Analysis& a_;
  int warps_;
  std::vector<std::vector<Use>> uses_;
  std::vector<const ir::Instr*> defs_;
  std::vector<std::vector<std::pair<TileLayout2, const ir::Instr*>>> wants_;
  std::vector<std::optional<TileLayout2>> forced_;  ///< a 1D load's layout, from load_where_broadcast
  std::vector<bool> known_;
  bool split_rows_ = false;
};

}  // namespace

std::pair<int, int> warpgroup_grid(int m, int n, int warps, bool whole_rows) {
  const int wm = m / 16;
  if (m % 64 != 0 || warps % 4 != 0 || wm > warps || warps % wm != 0) return {0, 0};
  const int wn = warps / wm;
  if (n % (8 * wn) != 0 || n / wn > 256 || (whole_rows && wn > 1)) return {0, 0};
  return {wm, wn};
}

bool on_warpgroups(const TileLayout2& l) { return l.mma && l.dims[0] / l.warps_m == 16 && l.warps_m % 4 == 0; }

TileLayout2 operand_layout(const ir::Function& fn, const ir::Instr& in, const TileLayout2& l) {
  switch (in.op) {
    case ir::Op::expand: return slice_layout(l, in.as<ir::attr::Axis>().axis);
    case ir::Op::broadcast: {
      const auto& f = fn.values[in.args[0]].dims;
      return squeeze_layout(l, {static_cast<int>(f[0]), static_cast<int>(f[1])});
    }
    case ir::Op::trans: return trans_layout(l);
    default: return l;
  }
}

TileLayout2 default_layout(const ir::ValueType& t, int warps) { return access_layout(t, 0, warps); }

TileLayout2 access_layout(const ir::ValueType& t, int run, int warps) {
  const int vector = std::max(1, 16 / layout_bytes(t));
  return blocked_layout(t.rank, {static_cast<int>(t.dims[0]), static_cast<int>(t.dims[1])}, vector, warps, run);
}

void plan_tiles(const ir::Function& fn, Analysis& a) { TilePlanner(fn, a).run(); }

}  // namespace tilefuse::passes
