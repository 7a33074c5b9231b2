// The core of the emitter for programs with 2D tiles: the kernel frame, the thread coordinates of each
// layout, values by layout (lazy values computed where used, others converted when a use needs another
// layout), elementwise and shape ops, and loops.
#include "backend/codegen/tile_emitter.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "backend/codegen/emitter.hpp"
#include "backend/codegen/prelude.hpp"
#include "backend/codegen/text.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;
using passes::TileLayout2;
using passes::Where;

TileEmitter::TileEmitter(const ir::Function& fn, const passes::Analysis& analysis, const Options& options)
    : fn_(fn), a_(analysis), opt_(options), threads_(32 * options.num_warps), warps_(options.num_warps), memo_(1),
      bounds_(fn, analysis, options.bounds_checks) {
  defs_.assign(fn.values.size(), nullptr);
  users_.resize(fn.values.size());
  ir::walk(fn.body, [&](const ir::Instr& in) {
    // Some dot's result has the warpgroup grid (tile_homes): the kernel may issue wgmma.
    if (in.op == Op::dot && analysis.warpgroup_mma) wgmma_ = wgmma_ || passes::on_warpgroups(analysis.home[in.result].layout);
    if (in.result >= 0) defs_[in.result] = &in;
    for (ir::ValueId x : in.args) users_[x].push_back(&in);
    for (ir::ValueId y : in.yields) users_[y].push_back(&in);
  });
}

void TileEmitter::check() const {
  if (opt_.programs_per_block != 1 || opt_.cluster_size != 1)
    throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': programs with 2D tiles run one program per "
                                "thread block, without clusters");
  if (opt_.num_warps < 1 || opt_.num_warps > 32 || (opt_.num_warps & (opt_.num_warps - 1)))
    throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': num_warps must be a power of two from 1 to 32, got " +
                                std::to_string(opt_.num_warps));
  ir::walk(fn_.body, [&](const ir::Instr& in) {
    const bool stage_supported = ir::is_stage_indexed(in.op) || in.op == Op::stage_copy;
    if ((ir::is_stage_access(in.op) && !stage_supported) || ir::is_cluster_reduction(in.op))
      throw std::invalid_argument("tilefuse codegen: kernel '" + fn_.name + "': " + ir::op_name(in.op) +
                                  " is not supported in programs with 2D tiles yet");
  });
}

std::string TileEmitter::run() {
  check();
  check_registers();
  // Stages first, for the kernel's lifetime.
  for (const ir::Stage& st : fn_.stages) stage_at_.push_back(allocate(st.size * ir::dtype_bytes(st.dtype)));
  stage_last_.assign(fn_.stages.size(), StageUse::none);
  stage_copying_.assign(fn_.stages.size(), false);
  for (const ir::Instr& in : fn_.body) instr(in);
  std::ostringstream out;
  out << "// tilefuse kernel '" << fn_.name << "': " << opt_.num_warps << " warps (" << threads_
      << " threads) per program, one program per thread block; 2D tiles in the layouts below.\n";
  for (std::size_t k = 0; k < layouts_.size(); ++k) out << "// layout L" << k << ": " << layouts_[k].str() << "\n";
  out << prelude::core << "\n";
  if (any_of_ops(fn_.body, [](Op op) { return op == Op::rand; })) out << prelude::rand << "\n";
  if (any_of_ops(fn_.body, [](Op op) { return op == Op::stage_copy; })) out << prelude::copy << "\n";
  out << prelude::mma << "\n";
  if (uses_warpgroup_mma()) {
    out << prelude::wgmma << "\n";
    for (const auto& [name, text] : wgmma_helpers_) out << text;
    out << "\n";
  }
  if (!tensor_maps_.empty()) out << prelude::tma << "\n";
  if (any_of_ops(fn_.body, ir::is_grid_order)) out << prelude::grid << "\n";
  if (bounds_.on()) out << prelude::bounds << "\n" << bounds_.declarations();
  std::string signature = signature_text(fn_, a_, opt_);
  // The tensor maps of the TMA copies: trailing parameters, passed by value (Generated::tensor_maps).
  std::string maps;
  for (std::size_t k = 0; k < tensor_maps_.size(); ++k) maps += ", const __grid_constant__ tf_tmap tf_map" + std::to_string(k);
  signature.insert(signature.rfind(") {"), maps);
  out << signature;
  out << "  const int tid = threadIdx.x;\n  const int lane = tid & 31;\n  const int warp = tid >> 5;\n";
  if (shared_bytes() > 0) {
    // wgmma's swizzled layouts repeat every 1024 bytes: operand buffers start on such a boundary.
    out << "  extern __shared__ __align__(" << (uses_warpgroup_mma() ? 1024 : 16) << ") unsigned char tf_shared[];\n";
    out << "  const unsigned tf_sbase = tf_smem(tf_shared);\n";
    for (std::size_t k = 0; k < fn_.stages.size(); ++k) {
      const std::string S = text::storage_type(fn_.stages[k].dtype);
      out << "  // stage @" << k << ": " << ir::dtype_name(fn_.stages[k].dtype) << "[" << fn_.stages[k].size << "], gathered and scattered across threads\n";
      out << "  " << S << "* const tf_stage" << k << " = reinterpret_cast<" << S << "*>(tf_shared + " << stage_at_[k] << ");\n";
    }
    if (scratch_bytes_ > 0) out << "  float* const tf_scratch = reinterpret_cast<float*>(tf_shared + " << shared_high_ << ");\n";
  }
  out << coords_.str() << os_.str() << "}\n";
  return out.str();
}

std::vector<bool> TileEmitter::body_values(const ir::Instr& loop) const {
  std::vector<bool> in_body(fn_.values.size(), false);
  for (const ir::Instr& b : loop.body) {
    if (b.result >= 0) in_body[b.result] = true;
    for (ir::ValueId r : b.results) in_body[r] = true;
  }
  return in_body;
}

std::vector<const ir::Instr*> TileEmitter::pipelined_loads(const ir::Instr& loop) const {
  std::vector<bool> in_body = body_values(loop);
  for (std::size_t k = 1; k < loop.block_args.size(); ++k) in_body[loop.block_args[k]] = true;
  // Whether `id` is computed from the induction variable and values from outside the loop only.
  std::vector<int> state(fn_.values.size(), 0);  // 0 unknown, 1 yes, 2 no
  auto ahead = [&](auto&& self, ir::ValueId id) -> bool {
    if (state[id]) return state[id] == 1;
    bool ok = true;
    if (id == loop.block_args[0] || !in_body[id]) {
      ok = true;
    } else {
      const ir::Instr* d = defs_[id];
      ok = d && d->op != Op::loop && ir::is_pure(d->op) && d->op != Op::dot && !ir::is_axis_reduction(d->op) && !ir::is_reduction(d->op);
      for (std::size_t k = 0; ok && k < d->args.size(); ++k) ok = self(self, d->args[k]);
    }
    state[id] = ok ? 1 : 2;
    return ok;
  };
  std::vector<const ir::Instr*> out;
  for (const ir::Instr& b : loop.body) {
    if (b.op != Op::load || a_.home[b.result].where != Where::shared) continue;
    bool ok = true;
    for (ir::ValueId x : b.args) ok = ok && ahead(ahead, x);
    if (ok) out.push_back(&b);
  }
  return out;
}

void TileEmitter::prefetch(const ir::Instr& loop, const std::vector<const ir::Instr*>& loads, const std::string& iv,
                           const std::string& phase, std::size_t memo_floor) {
  // The body's scalars the copies need, in body order, computed again inside a block where the loop's
  // variable names iteration `iv` (the block's declarations shadow the body's).
  std::vector<bool> need(fn_.values.size(), false);
  auto mark = [&](auto&& self, ir::ValueId id) -> void {
    if (need[id]) return;
    need[id] = true;
    if (const ir::Instr* d = defs_[id]) for (ir::ValueId x : d->args) self(self, x);
  };
  for (const ir::Instr* l : loads) {
    if (const auto t = tma_.find(l); t != tma_.end()) {  // a TMA copy needs its block's first row and column only
      for (ir::ValueId x : {t->second.row0, t->second.col0})
        if (x >= 0) mark(mark, x);
      continue;
    }
    for (ir::ValueId x : l->args) mark(mark, x);
  }
  // Copies are issued in every iteration (predicated off past the loop's end, where they read nothing),
  // so that every iteration commits the same number of groups.
  const std::string next = fresh("tf_ahead");
  os_ << "  {\n  const int " << next << " = " << iv << ";\n  const bool " << next << "_on = " << next << " < " << v(loop.args[1]) << ";\n";
  os_ << "  const int " << v(loop.block_args[0]) << " = " << next << ";\n";
  // Values of the body (emitted before these copies when they come mid-body) hold this iteration's
  // values: the copies compute what they need again, in a scope of their own over the loop-invariant ones.
  const std::vector<bool> in_body = body_values(loop);
  std::vector<std::map<std::string, std::string>> body_memo(std::make_move_iterator(memo_.begin() + memo_floor),
                                                            std::make_move_iterator(memo_.end()));
  memo_.resize(memo_floor);
  memo_.emplace_back();
  const std::vector<bool>* outer_fresh = prefetch_fresh_;
  prefetch_fresh_ = &in_body;
  for (const ir::Instr& b : loop.body)
    if (b.result >= 0 && need[b.result] && fn_.values[b.result].rank == 0)
      os_ << "  " << reg_type(b.result) << " const " << v(b.result) << " = " << scalar(b) << ";\n";
  std::vector<const ir::Instr*> by_tma;
  for (const ir::Instr* l : loads) {
    if (tma_.count(l)) by_tma.push_back(l);
    else copy_into(*l, piped_.at(l), phase, next + "_on");
  }
  if (!by_tma.empty()) tma_prefetch(by_tma, phase, next + "_on");
  prefetch_fresh_ = outer_fresh;
  memo_.pop_back();
  memo_.insert(memo_.end(), std::make_move_iterator(body_memo.begin()), std::make_move_iterator(body_memo.end()));
  os_ << "  }\n";
}

void TileEmitter::emit_pending_prefetch() {
  if (!pending_prefetch_ || pending_prefetch_depth_ != loop_depth_) return;
  auto emit = std::move(pending_prefetch_);
  pending_prefetch_ = nullptr;
  pending_prefetch_depth_ = -1;
  emit();
}

// What a loop carries (its tiles) plus the largest dot result it computes besides (a dot that becomes a
// carried value accumulates in its place) must fit in the 255 registers a thread has, with room for
// addresses and fragments; otherwise the kernel would spill every iteration. Checked before compiling,
// with what to shrink.
void TileEmitter::check_registers() const {
  constexpr int kBudget = 200;
  auto dots = [&](const std::vector<ir::Instr>& block, const std::vector<ir::ValueId>& yields) {
    int widest = 0;
    for (const ir::Instr& in : block)
      if (in.op == Op::dot && std::find(yields.begin(), yields.end(), in.result) == yields.end())
        widest = std::max(widest, a_.home[in.result].layout.per_thread());
    return widest;
  };
  int need = dots(fn_.body, {});
  std::string what = "its largest dot result";
  ir::walk(fn_.body, [&](const ir::Instr& in) {
    if (in.op != Op::loop) return;
    int carried = 0;
    for (std::size_t k = 1; k < in.block_args.size(); ++k)
      if (fn_.values[in.block_args[k]].rank > 0) carried += a_.home[in.block_args[k]].layout.per_thread();
    if (carried + dots(in.body, in.yields) > need) {
      need = carried + dots(in.body, in.yields);
      what = "the tiles its loop carries and the dot results the loop computes besides";
    }
  });
  if (need > kBudget)
    throw std::invalid_argument("tilefuse: kernel '" + fn_.name + "': " + what + " take " + std::to_string(need) +
                                " registers per thread, more than the " + std::to_string(kBudget) + " a thread can hold without "
                                "spilling; use smaller blocks (tile sizes) or more warps (num_warps)");
}

std::int64_t TileEmitter::allocate(std::int64_t bytes, std::int64_t align) {
  const std::int64_t at = (shared_top_ + align - 1) / align * align;
  shared_top_ = at + (bytes + 15) / 16 * 16;
  shared_high_ = std::max(shared_high_, shared_top_);
  return at;
}

int TileEmitter::layout_id(const TileLayout2& l) {
  for (std::size_t k = 0; k < layouts_.size(); ++k)
    if (layouts_[k].same(l)) return static_cast<int>(k);
  const int k = static_cast<int>(layouts_.size());
  layouts_.push_back(l);
  // This thread's part of each coordinate: the lane's and the warp's bits.
  for (int dim = 0; dim < l.rank; ++dim) {
    std::string expr;
    auto add = [&](const std::vector<passes::Basis>& bases, const char* who) {
      for (std::size_t b = 0; b < bases.size(); ++b)
        if (bases[b][dim] != 0)
          expr += std::string(expr.empty() ? "" : " + ") + "((" + who + " >> " + std::to_string(b) + ") & 1) * " +
                  std::to_string(bases[b][dim]);
    };
    add(l.lane, "lane");
    add(l.warp, "warp");
    coords_ << "  const int tf_L" << k << "_" << dim << " = " << (expr.empty() ? "0" : expr) << ";\n";
  }
  return k;
}

std::string TileEmitter::coord(const TileLayout2& l, int dim, const std::string& e) {
  std::string expr = "tf_L" + std::to_string(layout_id(l)) + "_" + std::to_string(dim);
  for (std::size_t b = 0; b < l.reg.size(); ++b)
    if (l.reg[b][dim] != 0) expr += " + ((" + e + " >> " + std::to_string(b) + ") & 1) * " + std::to_string(l.reg[b][dim]);
  return expr;
}

std::string TileEmitter::part_expr(const TileLayout2& l, unsigned dropped, const std::string& e) const {
  std::string expr;
  int bit = 0;
  bool identity = true;
  for (std::size_t k = 0; k < l.reg.size(); ++k) {
    const passes::Basis& b = l.reg[k];
    const bool kept = (!(dropped & 1u) && b[0] != 0) || (!(dropped & 2u) && b[1] != 0);
    if (!kept) continue;
    identity = identity && static_cast<int>(k) == bit;
    expr += std::string(expr.empty() ? "" : " | ") + "(((" + e + " >> " + std::to_string(k) + ") & 1) << " + std::to_string(bit) + ")";
    ++bit;
  }
  if (bit == 0) return "0";
  if (identity) return bit == static_cast<int>(l.reg.size()) ? e : "(" + e + " & " + std::to_string((1 << bit) - 1) + ")";
  return "(" + expr + ")";
}

bool TileEmitter::packed_by_dot(ir::ValueId id) const {
  const ir::Instr* d = defs_[id];
  if (!d || d->op != Op::cast || users_[id].empty()) return false;
  const passes::TileHome& from = a_.home[d->args[0]];
  if (fn_.values[d->args[0]].dtype != ir::DType::f32 || from.where != Where::registers || !from.layout.mma || from.layout.warps_n != 1)
    return false;
  for (const ir::Instr* u : users_[id])
    if (u->op != Op::dot || u->args[0] != id || u->args[1] == id) return false;
  return true;
}

bool TileEmitter::moved_as_words(ir::ValueId id) const {
  const ir::ValueType& t = fn_.values[id];
  if (t.rank == 0 || (t.dtype != ir::DType::f16 && t.dtype != ir::DType::bf16) || users_[id].size() != 1) return false;
  const ir::Instr* d = defs_[id];
  if (!d || (d->op != Op::load && d->op != Op::stage_gather) || a_.home[id].where != Where::registers) return false;
  // Its one use is the value operand (not the pointer, offsets or mask) of a store, which writes its own
  // dtype, or of a scatter to a stage of its dtype.
  const ir::Instr& u = *users_[id][0];
  if (u.op != Op::store && u.op != Op::stage_scatter) return false;
  if (u.args[1] != id || u.args[0] == id || (u.args.size() > 2 && u.args[2] == id)) return false;
  return u.op == Op::store || fn_.stages.at(u.as<ir::attr::StageRef>().stage).dtype == t.dtype;
}

std::string TileEmitter::word_of(ir::ValueId value, ir::DType dtype, const std::string& element) const {
  return moved_as_words(value) ? element : text::to_storage(dtype, element);
}

std::string TileEmitter::declare_loaded(ir::ValueId result, int per_thread) const {
  const bool words = moved_as_words(result);
  return (words ? text::storage_type(fn_.values[result].dtype) : reg_type(result)) + " " + v(result) + "[" + std::to_string(per_thread) +
         "];" + (words ? "  // storage words, stored as read" : "");
}

std::string TileEmitter::kept_of(ir::ValueId result, ir::DType dtype, const std::string& word) const {
  return moved_as_words(result) ? word : text::from_storage(dtype, word);
}

std::string TileEmitter::v(ir::ValueId id) const {
  std::string name = "v";  // (appending: GCC 12 warns falsely about "v" + std::to_string)
  name += std::to_string(id);
  return name;
}

std::string TileEmitter::reg_type(ir::ValueId id) const {
  const ir::ValueType& t = fn_.values[id];
  const std::string type = text::reg_type(t);
  return t.pointer && a_.root[id] >= 0 && !a_.written[a_.root[id]] ? "const " + type : type;
}

TileLayout2 TileEmitter::layout_of(ir::ValueId id) const {
  const passes::TileHome& h = a_.home[id];
  return h.where == Where::registers ? h.layout : passes::default_layout(fn_.values[id], warps_);
}

void TileEmitter::assign(ir::ValueId id, const TileLayout2& l, const std::string& name, const std::string& expr) {
  os_ << "  " << reg_type(id) << " " << name << "[" << l.per_thread() << "];\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << l.per_thread() << "; ++e) " << name << "[e] = " << expr << ";\n";
}

std::string TileEmitter::get(ir::ValueId id, const TileLayout2& l) {
  const ir::ValueType& t = fn_.values[id];
  if (t.rank == 0) return v(id);
  const passes::TileHome& h = a_.home[id];
  if (h.where == Where::shared)
    throw std::logic_error("tilefuse codegen: kernel '" + fn_.name + "': %" + std::to_string(id) + " lives in shared memory");
  // Copies ahead compute the body's values again for their own iteration (prefetch).
  const bool again = prefetch_fresh_ && (*prefetch_fresh_)[id];
  if (h.where == Where::registers && h.layout.same(l) && !again) return v(id);
  const std::string key = std::to_string(id) + "@" + std::to_string(layout_id(l));
  for (auto s = memo_.rbegin(); s != memo_.rend(); ++s)
    if (auto it = s->find(key); it != s->end()) return it->second;
  const std::string name = v(id) + "_L" + std::to_string(layout_id(l));
  if (h.where == Where::registers && !again) {
    convert(id, v(id), h.layout, l, name);
  } else {
    compute(*defs_[id], l, name);
  }
  memo_.back()[key] = name;
  return name;
}

std::string TileEmitter::at(ir::ValueId id, const TileLayout2& l, const std::string& e) {
  const std::string name = get(id, l);
  return fn_.values[id].rank == 0 ? name : name + "[" + e + "]";
}

// A pure op computed in layout l: elementwise ops from their operands in l; expand and broadcast from
// their operand in the layout that drops the repeated dimension (no data moves); trans from the
// transposed layout.
void TileEmitter::compute(const ir::Instr& in, const TileLayout2& l, const std::string& name) {
  const ir::ValueType& t = fn_.values[in.result];
  switch (in.op) {
    case Op::arange: return assign(in.result, l, name, coord(l, 0));
    case Op::expand: {
      const int axis = in.as<ir::attr::Axis>().axis;  // 1: [n, 1], 0: [1, n]
      return assign(in.result, l, name, get(in.args[0], passes::operand_layout(fn_, in, l)) + "[" + part_expr(l, 1u << axis) + "]");
    }
    case Op::broadcast: {
      const auto& f = fn_.values[in.args[0]].dims;
      const unsigned dropped = (f[0] == 1 && t.dims[0] != 1 ? 1u : 0u) | (f[1] == 1 && t.dims[1] != 1 ? 2u : 0u);
      return assign(in.result, l, name, get(in.args[0], passes::operand_layout(fn_, in, l)) + "[" + part_expr(l, dropped) + "]");
    }
    case Op::trans: return assign(in.result, l, name, get(in.args[0], passes::operand_layout(fn_, in, l)) + "[e]");
    default: break;
  }
  std::vector<std::string> a;
  for (ir::ValueId x : in.args) a.push_back(at(x, l));
  if (rounded_by_stores(fn_, a_, in)) return assign(in.result, l, name, a[0] + "  /* rounded by its stores */");
  assign(in.result, l, name, elementwise_expr(fn_, in, a));
}

std::string TileEmitter::scalar(const ir::Instr& in) {
  switch (in.op) {
    case Op::param: return param_value(fn_, opt_, in.as<ir::attr::Param>().index);
    case Op::program_id: return std::string("(int)blockIdx.") + "xyz"[in.as<ir::attr::Axis>().axis];
    case Op::num_programs: return std::string("(int)gridDim.") + "xyz"[in.as<ir::attr::Axis>().axis];
    default: {
      std::vector<std::string> a;
      for (ir::ValueId x : in.args) a.push_back(v(x));
      return elementwise_expr(fn_, in, a);
    }
  }
}

void TileEmitter::instr(const ir::Instr& in) {
  os_ << "  // " << ir::print(fn_, in);
  if (!in.where.empty()) os_ << "   [" << in.where << "]";
  os_ << "\n";
  if (in.op == Op::loop) return loop(in);
  if (in.op == Op::store) return store(in);
  if (ir::is_grid_order(in.op)) {
    os_ << "  " << text::grid_order(in.op) << "\n";
    return;
  }
  if (ir::is_stage_indexed(in.op)) return stage_indexed(in);
  if (in.op == Op::stage_copy) return stage_copy(in);
  const ir::ValueType& t = fn_.values[in.result];
  if (in.op == Op::load) return a_.home[in.result].where == Where::shared ? shared_load(in) : load(in);
  if (ir::is_reduction(in.op)) return reduce_scalar(in);
  if (t.rank == 0) {
    os_ << "  " << reg_type(in.result) << " const " << v(in.result) << " = " << scalar(in) << ";\n";
    return;
  }
  switch (a_.home[in.result].where) {
    case Where::lazy: os_ << "  // (computed where it is used)\n"; return;
    case Where::shared: views_[in.result] = View{views_.at(in.args[0]).buffer, !views_.at(in.args[0]).transposed}; return;
    default: break;
  }
  if (ir::is_axis_reduction(in.op)) return reduce_along(in);
  if (in.op == Op::dot) return dot(in);
  if (packed_by_dot(in.result)) {
    os_ << "  // (packed into fragments by its dot, rounding there)\n";
    return;
  }
  compute(in, a_.home[in.result].layout, v(in.result));
}

// for (iv = lo; iv < hi; iv += step), the carried values in mutable arrays in their homes' layouts; the
// yields go through temporaries so that carried values swap correctly. What the body computes lazily or
// converts stays inside it.
void TileEmitter::loop(const ir::Instr& in) {
  const std::size_t carried = in.block_args.size() - 1;
  // A stage access in the body follows the previous iteration's, and one after the loop the last
  // iteration's: neither order is known at this point of the text (nor which copies are in flight).
  for (std::size_t k = 0; k < stage_copying_.size(); ++k) wait_for_copies(static_cast<int>(k));
  std::fill(stage_last_.begin(), stage_last_.end(), StageUse::unknown);
  for (std::size_t k = 0; k < carried; ++k) {
    const ir::ValueId b = in.block_args[k + 1], init = in.args[k + 3];
    if (fn_.values[b].rank == 0) {
      os_ << "  " << reg_type(b) << " " << v(b) << " = " << v(init) << ";\n";
      continue;
    }
    const TileLayout2& l = a_.home[b].layout;
    assign(b, l, v(b), get(init, l) + "[e]");
  }
  // Copies ahead: stage s of each pipelined load's buffer holds iteration i with i % S == s; the first
  // S - 1 iterations are copied before the loop, and each iteration copies the one S - 1 ahead.
  const int S = opt_.num_stages;
  const std::vector<const ir::Instr*> piped = S > 1 ? pipelined_loads(in) : std::vector<const ir::Instr*>{};
  // With dots that keep their wgmmas in flight into the next iteration, a stage is reused two iterations
  // after it was read instead of one: copies go S - 2 iterations ahead.
  const std::vector<const ir::Instr*> deferred = S >= 3 && !piped.empty() ? deferrable_dots(in, piped) : std::vector<const ir::Instr*>{};
  deferred_.insert(deferred.begin(), deferred.end());
  const int ahead = deferred.empty() ? S - 1 : S - 2;
  auto is_deferred = [&](std::size_t k) {
    return std::any_of(deferred.begin(), deferred.end(), [&](const ir::Instr* d) { return d->result == in.yields[k]; });
  };
  const std::string phase = "tf_stage" + std::to_string(loops_);
  const std::string bar = "tf_bar" + std::to_string(loops_++);
  const std::int64_t shared_before = shared_top_;  // the loop's stages are free again after it
  std::vector<const ir::Instr*> by_tma;
  for (const ir::Instr* l : piped)
    if (auto c = tma_copy(*l)) {
      c->index = static_cast<int>(tensor_maps_.size());
      tensor_maps_.push_back(c->map);
      tma_[l] = *c;
      by_tma.push_back(l);
    }
  const std::string outer_bar = tma_bar_;
  tma_bar_ = by_tma.empty() ? "" : bar;
  if (!by_tma.empty()) {
    // One mbarrier per stage; iteration i waits on stage i % S's for the phase of parity (i / S) & 1.
    os_ << "  // TMA copies for the loop below: stage s completes on mbarrier " << bar << "[s]\n";
    os_ << "  __shared__ __align__(8) unsigned long long " << bar << "[" << S << "];\n";
    os_ << "  const unsigned " << bar << "_at = tf_smem(" << bar << ");\n";
    os_ << "  unsigned " << bar << "_parity = 0;\n";
    os_ << "  if (tid == 0) tf_mbar_init<" << S << ">(" << bar << "_at);\n";
    barrier();
    reads_pending_ = false;
  }
  if (!piped.empty()) {
    std::vector<int> first_group;
    for (const ir::Instr* l : piped) {
      Buffer b;
      b.rows = static_cast<int>(fn_.values[l->result].dims[0]);
      b.cols = static_cast<int>(fn_.values[l->result].dims[1]);
      b.offset = allocate_operand(b.bytes() * S);
      b.phase = phase;
      piped_[l] = static_cast<int>(buffers_.size());
      buffers_.push_back(b);
    }
    os_ << "  // copies ahead for the loop below: " << S << " stages, " << ahead << " iteration" << (ahead > 1 ? "s" : "") << " ahead\n";
    for (int s = 0; s < ahead; ++s) {
      prefetch(in, piped, v(in.args[0]) + " + " + std::to_string(s) + " * " + v(in.args[2]), std::to_string(s), memo_.size());
      if (s == 0)
        for (const ir::Instr* l : piped) first_group.push_back(buffers_[piped_[l]].group);
    }
    for (std::size_t k = 0; k < piped.size(); ++k)
      buffers_[piped_[piped[k]]].group = tma_.count(piped[k]) ? Buffer::kTmaPending : first_group[k];
    os_ << "  int " << phase << " = 0;\n";
  }
  const std::string iv = v(in.block_args[0]);
  os_ << "  for (int " << iv << " = " << v(in.args[0]) << "; " << iv << " < " << v(in.args[1]) << "; " << iv << " += " << v(in.args[2])
      << ") {\n";
  std::ostringstream body;
  std::swap(os_, body);
  const std::size_t memo_floor = memo_.size();
  memo_.emplace_back();
  ++loop_depth_;
  reads_pending_ = true;  // the previous iteration's reads of shared buffers
  auto outer_pending = std::move(pending_prefetch_);
  const int outer_depth = pending_prefetch_depth_;
  pending_prefetch_ = nullptr;
  if (!piped.empty()) {
    // The copies for iteration iv + ahead go after the body's first barrier: every thread reaches it only
    // once done with the previous iteration (its reads of shared memory, its waits for earlier wgmmas), so
    // the stage they overwrite is free without a barrier of their own. That barrier is where the body
    // waits for this iteration's copies; issuing the next ones just after keeps them as far ahead.
    pending_prefetch_depth_ = loop_depth_;
    pending_prefetch_ = [this, &in, piped, ahead, S, phase, iv, memo_floor] {
      // The copies update their buffers' groups; this iteration's waits still refer to the copies issued
      // `ahead` iterations ago.
      std::vector<int> current;
      for (const ir::Instr* l : piped) current.push_back(buffers_[piped_[l]].group);
      prefetch(in, piped, iv + " + " + std::to_string(ahead) + " * " + v(in.args[2]),
               S == 2 ? "(" + phase + " ^ 1)" : "(" + phase + " + " + std::to_string(ahead) + ") % " + std::to_string(S), memo_floor);
      for (std::size_t k = 0; k < piped.size(); ++k) buffers_[piped_[piped[k]]].group = current[k];
    };
  }
  for (const ir::Instr& b : in.body) instr(b);
  for (std::size_t k = 0; k < stage_copying_.size(); ++k) wait_for_copies(static_cast<int>(k));
  std::fill(stage_last_.begin(), stage_last_.end(), StageUse::unknown);
  emit_pending_prefetch();  // a body without a barrier of its own: its copies at the end (after one)
  pending_prefetch_ = std::move(outer_pending);
  pending_prefetch_depth_ = outer_depth;
  if (!piped.empty()) os_ << "  " << phase << " = " << (S == 2 ? phase + " ^ 1" : "(" + phase + " + 1) % " + std::to_string(S)) << ";\n";
  if (!by_tma.empty()) os_ << "  if (" << phase << " == 0) " << bar << "_parity ^= 1;\n";
  os_ << "  // yield\n";
  for (std::size_t k = 0; k < carried; ++k) {
    const ir::ValueId b = in.block_args[k + 1];
    const std::string tmp = "tf_next_" + v(b);
    if (is_deferred(k)) {
      os_ << "  // (" << v(b) << ": accumulated in place by its dot)\n";
      continue;
    }
    if (fn_.values[b].rank == 0) os_ << "  const " << reg_type(b) << " " << tmp << " = " << v(in.yields[k]) << ";\n";
    else assign(b, a_.home[b].layout, tmp, get(in.yields[k], a_.home[b].layout) + "[e]");
  }
  for (std::size_t k = 0; k < carried; ++k) {
    const ir::ValueId b = in.block_args[k + 1];
    const std::string tmp = "tf_next_" + v(b);
    if (is_deferred(k)) continue;
    if (fn_.values[b].rank == 0) os_ << "  " << v(b) << " = " << tmp << ";\n";
    else os_ << "#pragma unroll\n  for (int e = 0; e < " << a_.home[b].layout.per_thread() << "; ++e) " << v(b) << "[e] = " << tmp << "[e];\n";
  }
  --loop_depth_;
  memo_.pop_back();
  reads_pending_ = true;
  std::swap(os_, body);
  std::istringstream lines(body.str());
  for (std::string line; std::getline(lines, line);) os_ << (line.rfind("#pragma", 0) == 0 ? "" : "  ") << line << "\n";
  os_ << "  }\n";
  // The last iteration's wgmmas finish before anything reads their accumulators or reuses their buffers.
  if (!deferred.empty()) os_ << "  tf_wgmma_wait<0>();  // the last iteration's wgmmas have finished\n";
  for (std::size_t k = 0; k < carried; ++k)
    if (is_deferred(k))
      os_ << "#pragma unroll\n  for (int e = 0; e < " << a_.home[in.block_args[k + 1]].layout.per_thread() << "; ++e) tf_wgmma_fence_operand("
          << v(in.block_args[k + 1]) << "[e]);\n";
  if (!piped.empty()) {
    // The last `ahead` iterations issued copies for iterations past the end (predicated off, they still
    // zero-fill their 16 bytes): they must land before anything reuses the loop's buffers (compute-
    // sanitizer's racecheck found the write-after-write in causal attention, whose second loop reuses them).
    if (by_tma.size() < piped.size()) os_ << "  tf_cp_wait<0>();  // every copy issued ahead has landed\n";
    for (Buffer& o : buffers_)
      if (o.group >= 0) o.group = -1;
    barrier();
    reads_pending_ = false;
  }
  tma_bar_ = outer_bar;
  shared_top_ = shared_before;
  for (std::size_t k = 0; k < carried; ++k) {
    const ir::ValueId b = in.block_args[k + 1], r = in.results[k];
    if (fn_.values[b].rank == 0) os_ << "  " << reg_type(r) << " " << v(r) << " = " << v(b) << ";\n";
    else assign(r, a_.home[r].layout, v(r), v(b) + "[e]");
  }
}

}  // namespace tilefuse::codegen
