// Global loads and stores of programs with 2D tiles, in runs of up to 16 bytes where the layout keeps a
// run in one thread's registers and the axis analysis proves the run contiguous and aligned (a run whose
// mask is not provably even is moved at once when every lane is in the mask, else lane by lane); and loads that only feed dots, copied straight into swizzled shared-memory buffers with
// 16-byte asynchronous copies (cp.async, zero-filled where masked), one commit group per load.
#include <algorithm>
#include <cmath>

#include "backend/codegen/text.hpp"
#include "backend/codegen/tile_emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using passes::TileLayout2;

int TileEmitter::vector_width(const TileLayout2& l, ir::ValueId ptr, ir::ValueId mask, ir::DType dt) const {
  int W = pointer_width(l, ptr, dt);
  if (mask >= 0 && !a_.axis[mask].always_true)
    while (W > 1 && a_.axis[mask].constancy < W) W /= 2;
  return W;
}

int TileEmitter::register_run(const TileLayout2& l) {
  const int last = l.rank - 1;
  int run = 1;
  for (const passes::Basis& b : l.reg) {
    if (b[last] != run || b[1 - last] != 0) break;
    run *= 2;
  }
  return run;
}

int TileEmitter::pointer_width(const TileLayout2& l, ir::ValueId ptr, ir::DType dt) const {
  const int bytes = ir::dtype_bytes(dt);
  int W = std::min(register_run(l), 16 / bytes);
  const passes::AxisInfo& p = a_.axis[ptr];
  while (W > 1 && (p.contiguity < W || p.divisibility < W * bytes)) W /= 2;
  return W;
}

std::string TileEmitter::every_lane(ir::ValueId mask, const TileLayout2& l, int W) {
  std::string all;
  for (int k = 0; k < W; ++k) all += (k ? " && " : "") + at(mask, l, k ? "e0 + " + std::to_string(k) : "e0");
  return all;
}

void TileEmitter::stage_indexed(const ir::Instr& in) {
  const bool store = in.op == ir::Op::stage_scatter;
  const int k = in.as<ir::attr::StageRef>().stage;
  const ir::Stage& st = fn_.stages.at(k);
  const ir::ValueId tile = store ? in.args[1] : in.result;
  const TileLayout2 l = store ? layout_of(tile) : a_.home[in.result].layout;
  const std::size_t mask_at = store ? 2 : 1;
  const ir::ValueId mask = in.args.size() > mask_at && !a_.axis[in.args[mask_at]].always_true ? in.args[mask_at] : -1;
  wait_for_copies(k);
  if (stage_last_[k] != StageUse::none && !(stage_last_[k] == StageUse::read && !store)) barrier();
  stage_last_[k] = store ? StageUse::write : StageUse::read;
  // Runs: as long as the layout keeps in one thread's registers and the offsets are provably contiguous
  // and aligned (the stage starts 16-byte aligned); each run then lies wholly inside or outside a stage
  // of a multiple of its length, and its mask must be even over it.
  const passes::AxisInfo& oi = a_.axis[in.args[0]];
  const bool inside = oi.within(st.size);  // the offsets provably stay in the stage
  int W = std::min(register_run(l), 16 / ir::dtype_bytes(st.dtype));
  while (W > 1 && (oi.contiguity < W || oi.divisibility < W || (!inside && st.size % W != 0) ||
                   (mask >= 0 && a_.axis[mask].constancy < W)))
    W /= 2;
  const std::string S = text::storage_type(st.dtype), off = get(in.args[0], l), base = "tf_stage" + std::to_string(k);
  std::string cond = inside ? "" : "(unsigned)" + off + "[e0] < " + std::to_string(st.size) + "u";
  if (mask >= 0) cond += (cond.empty() ? "" : " && ") + at(mask, l, "e0");
  const std::string read = W == 1 ? "tf_w[0] = " + base + "[" + off + "[e0]]" : "tf_load_vec<" + S + ", " + std::to_string(W) + ">(" + base + " + " + off + "[e0], tf_w)";
  if (store) {
    const std::string x = get(tile, l);
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
    os_ << "    " << (cond.empty() ? "" : "if (" + cond + ") ") << "{\n";
    os_ << "      " << S << " tf_w[" << W << "];\n";
    os_ << "#pragma unroll\n      for (int k = 0; k < " << W << "; ++k) tf_w[k] = " << word_of(tile, st.dtype, x + "[e0 + k]") << ";\n";
    if (W == 1) os_ << "      " << base << "[" << off << "[e0]] = tf_w[0];\n";
    else os_ << "      tf_store_vec<" << S << ", " << W << ">(" << base << " + " << off << "[e0], tf_w);\n";
    os_ << "    }\n  }\n";
    return;
  }
  const std::string r = v(in.result);
  std::string other = mask >= 0 ? at(in.args[2], l, "e0 + k") : text::literal(st.dtype, 0);
  if (moved_as_words(in.result)) other = text::to_storage(st.dtype, other);
  os_ << "  " << declare_loaded(in.result, l.per_thread()) << "\n";
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
  os_ << "    " << S << " tf_w[" << W << "];\n";
  os_ << "    " << (cond.empty() ? "" : "if (" + cond + ") ") << read << ";\n";
  const std::string value = kept_of(in.result, st.dtype, "tf_w[k]");
  os_ << "#pragma unroll\n    for (int k = 0; k < " << W << "; ++k) " << r << "[e0 + k] = " << (cond.empty() ? value : "(" + cond + ") ? " + value + " : " + other)
      << ";\n  }\n";
}

void TileEmitter::wait_for_copies(int k) {
  if (!stage_copying_[k]) return;
  os_ << "  tf_copy_wait();  // this thread's copies into stage @" << k << " have landed\n";
  std::fill(stage_copying_.begin(), stage_copying_.end(), false);  // (the wait is for all of them)
}

void TileEmitter::stage_copy(const ir::Instr& in) {
  const int k = in.as<ir::attr::StageRef>().stage;
  const ir::Stage& st = fn_.stages.at(k);
  const ir::ValueType& pt = fn_.values[in.args[1]];
  const TileLayout2 l = passes::default_layout(pt, warps_);
  const ir::ValueId mask = in.args.size() > 2 && !a_.axis[in.args[2]].always_true ? in.args[2] : -1;
  // The copy overwrites elements other threads may have read or written since the last barrier (copies
  // into one element with no access between them land in either order, as tl::Stage::copy says).
  if (stage_last_[k] != StageUse::none && stage_last_[k] != StageUse::copied) barrier();
  stage_last_[k] = StageUse::copied;
  const int bytes = ir::dtype_bytes(st.dtype);
  const passes::AxisInfo& oi = a_.axis[in.args[0]];
  const std::int64_t P = pt.dims[0];
  const bool inside = oi.bounded && oi.min >= 0 && oi.max <= st.size - P;  // every element lands in the stage
  // Runs of W elements: contiguous and aligned pointers held in one thread's registers, a stage offset
  // aligned to the run (the stage starts 16-byte aligned), wholly inside or outside the stage.
  int W = pointer_width(l, in.args[1], st.dtype);
  while (W > 1 && (oi.divisibility < W || (!inside && st.size % W != 0))) W /= 2;
  if (W * bytes < 4) W = 1;
  const bool lanes = mask >= 0 && W > 1 && a_.axis[mask].constancy < W;  // a run partly in the mask
  // Pointers and mask materialized before anything is emitted (they may be computed here, lazily).
  const std::string p = get(in.args[1], l), base = "tf_stage" + std::to_string(k), S = text::storage_type(st.dtype);
  if (mask >= 0) get(mask, l);
  auto index = [&](const std::string& e) { return v(in.args[0]) + " + " + coord(l, 0, e); };
  auto in_stage = [&](const std::string& e) { return inside ? std::string() : "(unsigned)(" + index(e) + ") < " + std::to_string(st.size) + "u"; };
  const std::string owner = owner_guard(l);
  if (!owner.empty()) os_ << "  if (" << owner << ") {  // (the tile is held more than once: its first holders copy it)\n";
  // One element, synchronously: 0 where the mask is off (its stage bounds tested unless its run's were:
  // a run lies wholly inside or outside the stage).
  auto element = [&](const std::string& e, const std::string& indent, bool run_tested) {
    const std::string one = "*" + bounds_.checked(p + "[" + e + "]", in, in.args[1], 1);
    const std::string value = mask >= 0 ? at(mask, l, e) + " ? " + one + " : (" + S + ")0" : one;
    const std::string c = run_tested ? std::string() : in_stage(e);
    os_ << indent << (c.empty() ? "" : "if (" + c + ") ") << base << "[" << index(e) << "] = " << value << ";\n";
  };
  if (W == 1) {
    os_ << "#pragma unroll\n  for (int e = 0; e < " << l.per_thread() << "; ++e)\n";
    element("e", "    ", false);
  } else {
    const std::string B = std::to_string(W * bytes);
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
    const std::string c = in_stage("e0");
    if (!c.empty()) os_ << "    if (" << c << ")\n";
    if (lanes) {
      // Every lane in the mask: one asynchronous copy of the run; else its lanes one by one.
      os_ << "    if (" << every_lane(mask, l, W) << ") tf_copy_async<" << B << ">(" << base << " + " << index("e0") << ", "
          << bounds_.checked(p + "[e0]", in, in.args[1], W) << ", true);\n";
      os_ << "    else\n#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e)\n";
      element("e", "        ", true);
    } else {
      const std::string on = mask >= 0 ? at(mask, l, "e0") : "true";
      os_ << "    tf_copy_async<" << B << ">(" << base << " + " << index("e0") << ", " << bounds_.checked(p + "[e0]", in, in.args[1], W, on)
          << ", " << on << ");\n";
    }
    os_ << "  }\n";
    stage_copying_[k] = true;
  }
  if (!owner.empty()) os_ << "  }\n";
}

void TileEmitter::load(const ir::Instr& in) {
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& l = a_.home[in.result].layout;
  const bool masked = in.args.size() > 1 && !a_.axis[in.args[1]].always_true;
  int W = pointer_width(l, in.args[0], t.dtype);
  // A mask that is not even over a run: the run moves at once when every lane is in, else lane by lane.
  const bool lanes = masked && W > 1 && a_.axis[in.args[1]].constancy < W;
  if (!lanes) W = vector_width(l, in.args[0], masked ? in.args[1] : -1, t.dtype);
  const std::string S = text::storage_type(t.dtype), p = get(in.args[0], l);
  const std::string cond = masked ? at(in.args[1], l, "e0") : "";
  const std::string lane = masked ? at(in.args[1], l, "e0 + k") : "";
  std::string other = masked ? at(in.args[2], l, "e0 + k") : text::literal(t.dtype, 0);
  if (moved_as_words(in.result)) other = text::to_storage(t.dtype, other);
  const std::string r = v(in.result);
  const int hint = text::cache_hint(in.as<ir::attr::Memory>().cache, t.dtype, opt_.l2_evict_last);
  os_ << "  " << declare_loaded(in.result, l.per_thread()) << "\n";
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
  os_ << "    " << S << " tf_w[" << W << "];\n";
  const std::string addr = bounds_.checked(p + "[e0]", in, in.args[0], W);
  const std::string read = W == 1 ? (hint ? "tf_w[0] = tf_ld<" + std::to_string(hint) + ", " + S + ">(" + addr + ")" : "tf_w[0] = *" + addr)
                                  : "tf_load_vec<" + S + ", " + std::to_string(W) + (hint ? ", " + std::to_string(hint) : "") + ">(" + addr +
                                        ", tf_w)";
  if (lanes) {
    const std::string one = bounds_.checked(p + "[e0 + k]", in, in.args[0], 1);
    os_ << "    if (" << every_lane(in.args[1], l, W) << ") " << read << ";\n";
    os_ << "    else {\n#pragma unroll\n      for (int k = 0; k < " << W << "; ++k) if (" << lane << ") tf_w[k] = "
        << (hint ? "tf_ld<" + std::to_string(hint) + ", " + S + ">(" + one + ")" : "*" + one) << ";\n    }\n";
  } else if (W == 1 && masked) {
    // One element: the mask picks the loaded word or `other` in storage form, and one widening follows
    // (a branch around the load and a select after the widening cost about 4 instructions more).
    const std::string load = hint ? "tf_ld<" + std::to_string(hint) + ", " + S + ">(" + addr + ")" : "*" + addr;
    os_ << "    tf_w[0] = " << cond << " ? " << load << " : " << text::to_storage(t.dtype, at(in.args[2], l, "e0")) << ";\n";
    os_ << "    " << r << "[e0] = " << kept_of(in.result, t.dtype, "tf_w[0]") << ";\n  }\n";
    return;
  } else {
    os_ << "    " << (cond.empty() ? "" : "if (" + cond + ") ") << read << ";\n";
  }
  const std::string value = kept_of(in.result, t.dtype, "tf_w[k]");
  const std::string test = lanes ? lane : cond;
  os_ << "#pragma unroll\n    for (int k = 0; k < " << W << "; ++k) " << r << "[e0 + k] = "
      << (test.empty() ? value : test + " ? " + value + " : " + other) << ";\n  }\n";
}

void TileEmitter::store(const ir::Instr& in) {
  const ir::ValueId value = in.args[1];
  const ir::ValueType& t = fn_.values[value];
  if (t.rank == 0) {  // a scalar through a scalar pointer
    const std::string S = text::storage_type(t.dtype);
    os_ << "  " << (in.args.size() > 2 ? "if (" + v(in.args[2]) + ") " : "") << "*" << bounds_.checked(v(in.args[0]), in, in.args[0], 1) << " = "
        << text::to_storage(t.dtype, v(value)) << ";\n";
    return;
  }
  if (tma_store(in)) return;
  const TileLayout2 l = layout_of(value);
  const bool masked = in.args.size() > 2 && !a_.axis[in.args[2]].always_true;
  int W = pointer_width(l, in.args[0], t.dtype);
  // A mask that is not even over a run: the run moves at once when every lane is in, else lane by lane.
  const bool lanes = masked && W > 1 && a_.axis[in.args[2]].constancy < W;
  if (!lanes) W = vector_width(l, in.args[0], masked ? in.args[2] : -1, t.dtype);
  const std::string S = text::storage_type(t.dtype), p = get(in.args[0], l), x = get(value, l);
  const std::string cond = masked ? (lanes ? every_lane(in.args[2], l, W) : at(in.args[2], l, "e0")) : "";
  const int hint = text::cache_hint(in.as<ir::attr::Memory>().cache, t.dtype, opt_.l2_evict_last);
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
  os_ << "    " << (cond.empty() ? "" : "if (" + cond + ") ") << "{\n";
  os_ << "      " << S << " tf_w[" << W << "];\n";
  os_ << "#pragma unroll\n      for (int k = 0; k < " << W << "; ++k) tf_w[k] = " << word_of(value, t.dtype, x + "[e0 + k]") << ";\n";
  const std::string addr = bounds_.checked(p + "[e0]", in, in.args[0], W);
  if (W == 1)
    os_ << "      " << (hint ? "tf_st<" + std::to_string(hint) + ", " + S + ">(" + addr + ", tf_w[0])" : "*" + addr + " = tf_w[0]") << ";\n";
  else
    os_ << "      tf_store_vec<" << S << ", " << W << (hint ? ", " + std::to_string(hint) : "") << ">(" << addr << ", tf_w);\n";
  if (lanes) {
    const std::string one = bounds_.checked(p + "[e0 + k]", in, in.args[0], 1);
    os_ << "    } else {\n#pragma unroll\n      for (int k = 0; k < " << W << "; ++k)\n        if (" << at(in.args[2], l, "e0 + k") << ") "
        << (hint ? "tf_st<" + std::to_string(hint) + ", " + S + ">(" + one + ", " + word_of(value, t.dtype, x + "[e0 + k]") + ")"
                 : "*" + one + " = " + word_of(value, t.dtype, x + "[e0 + k]"))
        << ";\n";
  }
  os_ << "    }\n  }\n";
}

std::string TileEmitter::swizzled(const Buffer& b, const std::string& row, const std::string& chunk, const std::string& phase_var) const {
  const int cpr = std::min(b.cols / 8, 8);  // 16-byte chunks per row of a column block
  std::string phase = "0";
  if (cpr == 8) phase = "((" + row + ") & 7)";
  else if (cpr == 4) phase = "(((" + row + ") >> 1) & 3)";
  else if (cpr == 2) phase = "(((" + row + ") >> 2) & 1)";
  const std::string base = phase_var.empty() ? std::to_string(b.offset) : std::to_string(b.offset) + " + " + phase_var + " * " + std::to_string(b.bytes());
  if (b.cols <= 64 || !uses_warpgroup_mma()) return base + " + (" + row + ") * " + std::to_string(b.cols * 2) + " + (((" + chunk + ") ^ " + phase + ") << 4)";
  // Wider rows, in kernels with warpgroup MMA: column blocks of 64 elements, each rows x 128 bytes (the
  // mma.sync path keeps whole rows, whose address arithmetic costs fewer registers).
  return base + " + ((" + chunk + ") >> 3) * " + std::to_string(std::int64_t{b.rows} * 128) + " + (" + row + ") * 128 + ((((" + chunk +
         ") & 7) ^ " + phase + ") << 4)";
}

// A load whose only uses are dot operands: each thread copies its 16-byte runs into the buffer with
// cp.async (zeros where masked), or, when runs are not provably whole, element by element. A pipelined
// load's copies were issued ahead by its loop: here it only names the stage this iteration reads.
void TileEmitter::shared_load(const ir::Instr& in) {
  if (auto it = piped_.find(&in); it != piped_.end()) {
    views_[in.result] = View{it->second, false};
    os_ << "  // (copied ahead into shared buffer " << it->second << ", stage " << buffers_[it->second].phase << ")\n";
    return;
  }
  const ir::ValueType& t = fn_.values[in.result];
  Buffer b;
  b.rows = static_cast<int>(t.dims[0]);
  b.cols = static_cast<int>(t.dims[1]);
  b.offset = allocate_operand(b.bytes());
  const int id = static_cast<int>(buffers_.size());
  buffers_.push_back(b);
  views_[in.result] = View{id, false};
  copy_into(in, id, "");
}

bool TileEmitter::other_is_plus_zero(const ir::Instr& load) const {
  const ir::Instr* d = defs_[load.args[2]];
  if (d->op == ir::Op::splat) d = defs_[d->args[0]];
  return d->op == ir::Op::constant && d->as<ir::attr::Constant>().value == 0.0 && !std::signbit(d->as<ir::attr::Constant>().value);
}

void TileEmitter::write_buffer(const Buffer& b, const TileLayout2& l, const std::string& x, ir::DType dt, int W) {
  const std::string owner = owner_guard(l);
  if (!owner.empty()) os_ << "  if (" << owner << ") {  // (held more than once: its first holders write it)\n";
  const std::string S = text::storage_type(dt);
  if (W == 1) {
    os_ << "#pragma unroll\n  for (int e = 0; e < " << l.per_thread() << "; ++e)\n";
    os_ << "    *reinterpret_cast<" << S << "*>(tf_shared + " << swizzled(b, coord(l, 0), "(" + coord(l, 1) + ") >> 3") << " + (("
        << coord(l, 1) << ") & 7) * 2) = " << text::to_storage(dt, x + "[e]") << ";\n";
  } else {
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += " << W << ") {\n";
    os_ << "    " << S << " tf_w[" << W << "];\n";
    os_ << "#pragma unroll\n    for (int k = 0; k < " << W << "; ++k) tf_w[k] = " << text::to_storage(dt, x + "[e0 + k]") << ";\n";
    os_ << "    tf_store_vec<" << S << ", " << W << ">(reinterpret_cast<" << S << "*>(tf_shared + "
        << swizzled(b, coord(l, 0, "e0"), "(" + coord(l, 1, "e0") + ") >> 3") << " + ((" << coord(l, 1, "e0") << ") & 7) * 2), tf_w);\n";
    os_ << "  }\n";
  }
  if (!owner.empty()) os_ << "  }\n";
}

std::string TileEmitter::owner_guard(const TileLayout2& l) {
  unsigned lanes = 0, warps = 0;
  for (std::size_t k = 0; k < l.lane.size(); ++k)
    if (l.lane[k] == passes::Basis{0, 0}) lanes |= 1u << k;
  for (std::size_t k = 0; k < l.warp.size(); ++k)
    if (l.warp[k] == passes::Basis{0, 0}) warps |= 1u << k;
  std::string g;
  if (lanes) g = "(lane & " + std::to_string(lanes) + ") == 0";
  if (warps) g += (g.empty() ? "" : " && ") + std::string("(warp & ") + std::to_string(warps) + ") == 0";
  return g;
}

void TileEmitter::copy_into(const ir::Instr& in, int id, const std::string& phase, const std::string& guard) {
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2 l = passes::default_layout(t, warps_);
  const bool masked = in.args.size() > 1 && !a_.axis[in.args[1]].always_true;
  const int W = vector_width(l, in.args[0], masked ? in.args[1] : -1, t.dtype);
  // A copy zero-fills masked runs, so it serves a load whose `other` is +0.
  const bool zero_other = !masked || other_is_plus_zero(in);
  if (reads_pending_) {
    barrier();
    reads_pending_ = false;
  }
  Buffer& b = buffers_[id];
  os_ << "  // -> shared buffer " << id << (phase.empty() ? "" : ", stage " + phase) << " (" << b.rows << "x" << b.cols
      << ", 16-byte chunks swizzled)\n";
  const std::string p = get(in.args[0], l);
  auto guarded = [&](const std::string& c) { return guard.empty() ? c : c.empty() || c == "true" ? guard : guard + " && " + c; };
  const std::string cond0 = guarded(masked ? at(in.args[1], l, "e0") : "true");
  const std::string cond = guarded(masked ? at(in.args[1], l, "e") : "");
  const std::string other = masked ? at(in.args[2], l, "e") : text::literal(t.dtype, 0);
  // A tile smaller than the program's threads is held twice or more: one holder of each element writes it.
  const std::string owner = owner_guard(l);
  if (!owner.empty()) os_ << "  if (" << owner << ") {  // (the tile is held more than once: its first holders copy it)\n";
  const std::string close = owner.empty() ? "" : "  }\n";
  if (W == 8 && zero_other) {
    os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << l.per_thread() << "; e0 += 8)\n";
    os_ << "    tf_cp16(tf_sbase + " << swizzled(b, coord(l, 0, "e0"), "(" + coord(l, 1, "e0") + ") >> 3", phase) << ", "
        << bounds_.checked(p + "[e0]", in, in.args[0], 8, cond0) << ", " << cond0 << ");\n";
    os_ << close << "  tf_cp_commit();\n";
    b.group = groups_committed_++;
  } else {
    const std::string S = text::storage_type(t.dtype);
    const std::string value = text::from_storage(t.dtype, "*" + bounds_.checked(p + "[e]", in, in.args[0], 1));
    os_ << "#pragma unroll\n  for (int e = 0; e < " << l.per_thread() << "; ++e)\n";
    os_ << "    *reinterpret_cast<" << S << "*>(tf_shared + " << swizzled(b, coord(l, 0), "(" + coord(l, 1) + ") >> 3", phase) << " + (("
        << coord(l, 1) << ") & 7) * 2) = " << text::to_storage(t.dtype, cond.empty() ? value : cond + " ? " + value + " : " + other)
        << ";\n";
    os_ << close << "  tf_cp_commit();  // (an empty group: keeps the count of groups the same in every iteration)\n";
    b.group = groups_committed_++;
  }
}

void TileEmitter::wait_for(int buffer) {
  Buffer& b = buffers_[buffer];
  if (b.group == -1) return;
  if (b.group == Buffer::kTmaPending) {
    // The stage's TMA copies (every TMA buffer of the loop's stage) have landed; the barrier after the
    // wait is the one after which the loop's next copies may overwrite the stage read two iterations ago.
    os_ << "  tf_mbar_wait(" << tma_bar_ << "_at + 8 * " << b.phase << ", " << tma_bar_ << "_parity);  // the stage's TMA copies have landed\n";
    for (Buffer& o : buffers_)
      if (o.group == Buffer::kTmaPending) o.group = -1;
    barrier();
    reads_pending_ = false;
    emit_pending_prefetch();
    return;
  }
  if (b.group >= 0) {
    const int later = groups_committed_ - 1 - b.group;
    os_ << "  tf_cp_wait<" << later << ">();  // buffer " << buffer << "'s copies have landed\n";
    for (Buffer& o : buffers_)
      if (o.group >= 0 && o.group <= b.group) o.group = -1;
  }
  b.group = -1;
  // wgmma reads shared memory through the async proxy: this thread's writes must be made visible to it.
  if (uses_warpgroup_mma()) os_ << "  tf_fence_async_shared();\n";
  barrier();
  for (Buffer& o : buffers_)
    if (o.group == -2) o.group = -1;  // written by plain stores: published by this barrier
  reads_pending_ = false;
  emit_pending_prefetch();  // the loop's copies ahead, now that the stage they overwrite is free
}

}  // namespace tilefuse::codegen
