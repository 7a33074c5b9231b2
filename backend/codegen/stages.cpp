// Lowering of shared-memory stages: their declaration in dynamic shared memory, asynchronous copies from
// global memory (cp.async), stores and loads of tiles, and the barriers and waits around them (none for a
// stage each thread reads back only what it wrote).
#include <algorithm>

#include "backend/codegen/emitter.hpp"
#include "backend/codegen/text.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

namespace {

std::string all_of(const std::vector<std::string>& parts) {
  std::string c;
  for (const auto& p : parts)
    if (!p.empty()) c += (c.empty() ? "" : " && ") + p;
  return c;
}

int stage_of(const ir::Instr& in) { return in.as<ir::attr::StageRef>().stage; }

}  // namespace

// Stages live in the block's dynamic shared memory (the runtime passes ir::stage_bytes per program, times
// the programs a block packs), each 16-byte aligned so that runs move as 16-byte accesses.
void Emitter::declare_stages() {
  copies_.open.assign(fn_.stages.size(), false);
  copies_.after.assign(fn_.stages.size(), -1);
  if (fn_.stages.empty()) return;
  const std::int64_t per_program = ir::stage_bytes(fn_.stages);
  os_ << "  extern __shared__ __align__(16) unsigned char tf_shared[];\n";
  const std::string program_base = packed_ ? " + (threadIdx.x >> 5) * " + std::to_string(per_program) : "";
  for (std::size_t k = 0; k < fn_.stages.size(); ++k) {
    const ir::Stage& st = fn_.stages[k];
    const std::string S = text::storage_type(st.dtype);
    os_ << "  // stage @" << k << ": " << ir::dtype_name(st.dtype) << "[" << st.size << "], "
        << (a_.stage_owned[k] ? "each thread reads back only what it wrote (no barriers)"
                              : "read across threads (a barrier before each access)")
        << "\n";
    os_ << "  " << S << "* const tf_stage" << k << " = reinterpret_cast<" << S << "*>(tf_shared + "
        << ir::stage_offset(fn_.stages, k) << program_base << ");\n";
  }
}

// The barrier before an access of a stage whose elements threads share (none for an owned stage).
void Emitter::stage_barrier(const ir::Instr& in) {
  if (!a_.stage_owned[stage_of(in)]) os_ << "  " << (packed_ ? "__syncwarp()" : "__syncthreads()") << ";\n";
}

bool Emitter::CopyState::any() const {
  for (std::size_t k = 0; k < open.size(); ++k)
    if (pending(k)) return true;
  return false;
}

void Emitter::CopyState::join(const CopyState& other) {
  for (std::size_t k = 0; k < after.size(); ++k)
    if (other.after[k] >= 0) after[k] = after[k] >= 0 ? std::min(after[k], other.after[k]) : other.after[k];
}

void Emitter::commit_copies(bool even_empty) {
  if (!even_empty && !copies_.any_open()) return;
  os_ << "  tf_copy_commit();\n";
  for (std::size_t k = 0; k < copies_.open.size(); ++k) {
    if (copies_.open[k]) copies_.after[k] = 0;
    else if (copies_.after[k] >= 0) ++copies_.after[k];
    copies_.open[k] = false;
  }
}

void Emitter::wait_all_copies() {
  if (!copies_.any()) return;
  os_ << "  tf_copy_wait();\n";
  std::fill(copies_.open.begin(), copies_.open.end(), false);
  std::fill(copies_.after.begin(), copies_.after.end(), -1);
}

void Emitter::wait_for_copies(int k) {
  if (!copies_.pending(k)) return;
  // Its newest copies are the newest group (open, or committed last with none open after them): all.
  if (copies_.open[k] || (copies_.after[k] == 0 && !copies_.any_open())) return wait_all_copies();
  commit_copies();
  const int groups = copies_.after[k];
  os_ << "  tf_copy_wait_groups<" << groups << ">();  // this thread's copies into stage @" << k << " have landed\n";
  for (int& a : copies_.after)
    if (a >= groups) a = -1;  // the groups that wait leaves in flight are the newest ones
}

// Before a stage access: this thread's copies into that stage must have landed (and, for a stage read
// across threads, everyone's: the barrier follows the wait). Copies in flight into other stages need no
// wait here where a later commit separates them.
void Emitter::stage_sync(const ir::Instr& in) {
  wait_for_copies(stage_of(in));
  stage_barrier(in);
}

// A tile wholly inside or outside the stage is tested once (see passes::AccessPlan).
std::string Emitter::tile_in(const ir::Instr& in, const passes::AccessPlan& p) const {
  if (p.inside || !p.whole) return "";
  return "(unsigned)" + v(in.args[0]) + " < " + std::to_string(fn_.stages.at(stage_of(in)).size) + "u";
}

std::string Emitter::element_in(const ir::Instr& in, const passes::AccessPlan& p, const passes::TileLayout& l,
                                const std::string& e) const {
  if (p.inside || p.whole) return "";
  return "(unsigned)(" + v(in.args[0]) + " + " + index_expr(l, e) + ") < " + std::to_string(fn_.stages.at(stage_of(in)).size) + "u";
}

// Global memory into a stage: runs of 4, 8 or 16 bytes as asynchronous copies (a run outside the mask
// writes zeros, a run in it up to some lane reads exactly up to there: tf_copy_async_prefix), anything
// narrower or unaligned, or a run masked otherwise, element by element (synchronously).
void Emitter::stage_copy(const ir::Instr& in) {
  // No wait for earlier copies: they target other elements (two copies into one element with no access
  // of the stage between them land in either order, as documented for tl::Stage::copy).
  stage_barrier(in);
  const ir::Stage& st = fn_.stages.at(stage_of(in));
  const passes::AccessPlan& plan = a_.plan(in);
  const auto& pt = fn_.values[in.args[1]];
  const auto& l = layout(pt);
  const std::string off = v(in.args[0]), base = "tf_stage" + std::to_string(stage_of(in)), p = v(in.args[1]);
  const std::string S = text::storage_type(st.dtype);
  const bool masked = plan.masked;
  const int bytes = ir::dtype_bytes(st.dtype);
  const int W = plan.vector;
  const int E = l.per_thread;
  if (W * bytes < 4) {
    const std::string c = all_of({live(pt), tile_in(in, plan), element_in(in, plan, l, "e")});
    const std::string one = bounds_.checked(p + "[e]", in, in.args[1], 1);
    const std::string value = masked ? v(in.args[2]) + "[e] ? *" + one + " : (" + S + ")0" : "*" + one;
    os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << (c.empty() ? "" : "if (" + c + ") ") << base << "["
        << off << " + " << index_expr(l) << "] = " << value << ";\n";
    return;
  }
  const std::string c = all_of({live(pt), tile_in(in, plan), element_in(in, plan, l, "e0")});
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ")";
  if (!c.empty()) os_ << " if (" << c << ")";
  if (plan.run == passes::RunMask::every_lane) {
    // Every lane in the mask: one asynchronous copy of the run; else its lanes one by one (masked: 0).
    std::string all;
    for (int k = 0; k < W; ++k) all += (k ? " && " : "") + v(in.args[2]) + "[e0 + " + std::to_string(k) + "]";
    const std::string one = bounds_.checked(p + "[e]", in, in.args[1], 1);
    const std::string dst = base + " + " + off + " + " + index_expr(l, "e0");
    os_ << " {\n    if (" << all << ") tf_copy_async<" << W * bytes << ">(" << dst << ", " << bounds_.checked(p + "[e0]", in, in.args[1], W)
        << ", true);\n";
    // A run whose lanes in the mask are its first ones (a row's end, or none of it) reads just those,
    // asynchronously, and zero-fills the rest; any other run goes lane by lane (masked lanes: 0).
    os_ << "    else {\n      unsigned tf_run = 0u;\n#pragma unroll\n      for (int k = 0; k < " << W << "; ++k) tf_run |= (unsigned)"
        << v(in.args[2]) << "[e0 + k] << k;\n";
    os_ << "      if ((tf_run & (tf_run + 1u)) == 0u) tf_copy_async_prefix<" << W * bytes << ">(" << dst << ", "
        << bounds_.checked(p + "[e0]", in, in.args[1], 1, "tf_run != 0u") << ", __popc(tf_run) * " << bytes << "u);\n";
    os_ << "      else\n#pragma unroll\n        for (int e = e0; e < e0 + " << W << "; ++e) " << base << "[" << off << " + " << index_expr(l)
        << "] = " << v(in.args[2]) << "[e] ? *" << one << " : (" << S << ")0;\n    }\n  }\n";
    copies_.open[stage_of(in)] = true;
    return;
  }
  const std::string on = masked ? v(in.args[2]) + "[e0]" : std::string("true");
  os_ << " tf_copy_async<" << W * bytes << ">(" << base << " + " << off << " + " << index_expr(l, "e0") << ", "
      << bounds_.checked(p + "[e0]", in, in.args[1], W, on) << ", " << on << ");\n";
  copies_.open[stage_of(in)] = true;
}

// Stage stores and loads (element offset + i for the tile's element i) and scatters and gathers (element
// offsets[i], each lane at its own offset, tested against the stage's bounds unless the offsets provably
// stay inside): element by element, or in runs of plan.vector (a run of gathered offsets is provably
// contiguous and aligned, so it lies wholly inside or outside the stage and its first offset decides).
void Emitter::stage_access(const ir::Instr& in) {
  const bool indexed = ir::is_stage_indexed(in.op);
  const bool store = in.op == ir::Op::stage_store || in.op == ir::Op::stage_scatter;
  const ir::Stage& st = fn_.stages.at(stage_of(in));
  const passes::AccessPlan& plan = a_.plan(in);
  const ir::ValueId tile = store ? in.args[1] : in.result;
  const auto& t = fn_.values[tile];
  const auto& l = layout(t);
  const std::string off = v(in.args[0]), base = "tf_stage" + std::to_string(stage_of(in));
  const std::size_t mask_at = store ? 2 : 1;
  const bool masked = plan.masked;
  const ir::ValueId mask = masked ? in.args[mask_at] : -1;
  stage_sync(in);
  // The stage element that element `e` of this thread's tile moves to or from.
  auto index = [&](const std::string& e) { return indexed ? off + "[" + e + "]" : off + " + " + index_expr(l, e); };
  // Elements outside [0, N) are masked off (see passes::AccessPlan's inside and whole).
  auto in_stage = [&](const std::string& e) {
    if (indexed) return plan.inside ? std::string() : "(unsigned)" + index(e) + " < " + std::to_string(st.size) + "u";
    return all_of({tile_in(in, plan), element_in(in, plan, l, e)});
  };
  auto cond = [&](const std::string& e) { return all_of({live(t), in_stage(e), masked ? v(mask) + "[" + e + "]" : ""}); };
  const int E = l.per_thread;
  const int W = plan.vector;
  const std::string r = store ? "" : v(in.result);
  const std::string other = store ? "" : masked ? v(in.args[2]) + "[e]" : text::literal(t.dtype, 0);
  if (!store) os_ << "  " << text::reg_type(t) << " " << r << "[" << E << "];\n";
  if (W == 1) {
    const std::string c = cond("e");
    const std::string addr = base + "[" + index("e") + "]";
    os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) ";
    if (store) {
      os_ << (c.empty() ? "" : "if (" + c + ") ") << addr << " = " << text::to_storage(st.dtype, v(in.args[1]) + "[e]") << ";\n";
    } else {
      const std::string value = text::from_storage(st.dtype, addr);
      os_ << r << "[e] = " << (c.empty() ? value : c + " ? " + value + " : " + other) << ";\n";
    }
    return;
  }
  const std::string c = cond("e0");
  const std::string in_run = c.empty() ? "    " : "      ";
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
  if (!c.empty()) os_ << "    if (" << c << ") {\n";
  const std::string addr = base + " + " + index("e0");
  if (store) store_run(in_run, st.dtype, W, v(in.args[1]), addr);
  else load_run(in_run, st.dtype, W, addr, r);
  if (!c.empty()) {
    os_ << "    }";
    if (!store) os_ << " else {\n#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) " << r << "[e] = " << other << ";\n    }";
    os_ << "\n";
  }
  os_ << "  }\n";
}

}  // namespace tilefuse::codegen
