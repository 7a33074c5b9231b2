// Lowering of global loads and stores: scalars, element-by-element accesses, and vector runs of up to
// 16 bytes (the analysis's AccessPlan says how wide and how a run is tested against its mask), halves
// gathered and stored as 32-bit words, and cache hints (tl::Cache) on every access.
#include "backend/codegen/emitter.hpp"
#include "backend/codegen/text.hpp"

namespace tilefuse::codegen {

using ir::DType;

namespace {

// What a cache hint (text::cache_hint) adds to tf_load_vec's or tf_store_vec's template arguments.
std::string hint_arg(int hint) { return hint ? ", " + std::to_string(hint) : ""; }
// The element at address `addr` (of storage type S) read with cache hint `hint`.
std::string read(const std::string& S, const std::string& addr, int hint) {
  return hint ? "tf_ld<" + std::to_string(hint) + ", " + S + ">(" + addr + ")" : "*" + addr;
}
// `value` (of storage type S) written to `addr` with cache hint `hint`.
std::string write(const std::string& S, const std::string& addr, const std::string& value, int hint) {
  return hint ? "tf_st<" + std::to_string(hint) + ", " + S + ">(" + addr + ", " + value + ")" : "*" + addr + " = " + value;
}

// "m[e0] && m[e0 + 1] && ..." over a run of W, or "" when nothing is masked.
template <class Pred>
std::string every_lane(Pred pred, int W) {
  std::string all;
  for (int k = 0; k < W; ++k) {
    const std::string c = pred(k ? "e0 + " + std::to_string(k) : std::string("e0"));
    if (c.empty()) return pred("e0");  // nothing but (maybe) the uniform live flag
    all += (k ? " && " : "") + c;
  }
  return all;
}

bool narrow(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace

std::string Emitter::lane_test(const std::string& live, ir::ValueId mask, const std::string& idx) const {
  if (mask < 0) return live;
  return live + (live.empty() ? "" : " && ") + v(mask) + "[" + idx + "]";
}

template <class Pred>
std::string Emitter::run_test(const passes::AccessPlan& p, Pred pred) const {
  switch (p.run) {
    case passes::RunMask::first_lane: return pred("e0");
    case passes::RunMask::last_lane: return pred("e0 + " + std::to_string(p.vector - 1));
    default: return every_lane(pred, p.vector);
  }
}

void Emitter::load(const ir::Instr& in) {
  const auto& t = fn_.values[in.result];
  const passes::AccessPlan& plan = a_.plan(in);
  const std::string p = v(in.args[0]);
  const bool masked = plan.masked;
  const std::string S = text::storage_type(t.dtype);
  const int hint = text::cache_hint(in.as<ir::attr::Memory>().cache, t.dtype, opt_.l2_evict_last);
  if (t.rank == 0) {
    const std::string value = text::from_storage(t.dtype, read(S, bounds_.checked(p, in, in.args[0], 1), hint));
    os_ << "  const " << text::reg_type(t) << " " << v(in.result) << " = "
        << (masked ? v(in.args[1]) + " ? " + value + " : " + v(in.args[2]) : value) << ";\n";
    return;
  }
  const int E = per_thread(t);
  const int W = plan.vector;
  const std::string lv = live(t);
  auto pred = [&](const std::string& idx) { return lane_test(lv, masked ? in.args[1] : -1, idx); };
  const std::string r = v(in.result);
  os_ << "  " << text::reg_type(t) << " " << r << "[" << E << "];\n";
  const std::string other = masked ? v(in.args[2]) + "[e]" : text::literal(t.dtype, 0);
  if (W == 1) {
    const std::string cond = pred("e");
    const std::string value = text::from_storage(t.dtype, read(S, bounds_.checked(p + "[e]", in, in.args[0], 1), hint));
    os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << r << "[e] = "
        << (cond.empty() ? value : cond + " ? " + value + " : " + other) << ";\n";
    return;
  }
  // Vector path: a run of W elements is contiguous and aligned; take it in one access when every lane of
  // the run is in the mask, else element by element (the ragged tail of a row). Halves are gathered raw
  // for every run first and widened afterwards: widening inside the run's branch would wait for each
  // access before issuing the next, one memory round trip per run instead of one per tile.
  // Halves are gathered as words of two (W is even here) and widened in place.
  const bool halves = narrow(t.dtype);
  const std::string dst = halves ? "raw" + std::to_string(in.result) : r;
  const std::string conv_other = halves ? text::to_storage(t.dtype, other) : other;
  auto element = [&](const std::string& addr) { return halves ? addr : text::from_storage(t.dtype, addr); };
  if (halves) os_ << "  unsigned " << dst << "[" << E / 2 << "];\n";
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
  const std::string all = run_test(plan, pred);
  const std::string in_run = all.empty() ? "    " : "      ";  // the run's body, inside the mask test if any
  if (!all.empty()) os_ << "    if (" << all << ") {\n";
  if (halves) {
    os_ << in_run << "unsigned raw[" << W / 2 << "];\n";
    os_ << in_run << "tf_load_vec<unsigned, " << W / 2 << hint_arg(hint) << ">(reinterpret_cast<const unsigned*>("
        << bounds_.checked(p + "[e0]", in, in.args[0], W) << "), raw);\n";
    os_ << "#pragma unroll\n" << in_run << "for (int k = 0; k < " << W / 2 << "; ++k) " << dst << "[e0 / 2 + k] = raw[k];\n";
  } else {
    os_ << in_run << S << " raw[" << W << "];\n";
    os_ << in_run << "tf_load_vec<" << S << ", " << W << hint_arg(hint) << ">(" << bounds_.checked(p + "[e0]", in, in.args[0], W) << ", raw);\n";
    os_ << "#pragma unroll\n" << in_run << "for (int k = 0; k < " << W << "; ++k) " << dst << "[e0 + k] = raw[k];\n";
  }
  if (all.empty()) {
    os_ << "  }\n";
  } else {
    os_ << "    } else {\n";
    const std::string cond = pred("e");
    // A mask constant over the run is false on all of it here: the run takes `other` without loading.
    const std::string one = bounds_.checked(p + "[e]", in, in.args[0], 1);
    const std::string value = plan.run == passes::RunMask::first_lane ? conv_other
                              : cond.empty() ? element(read(S, one, hint))
                                             : cond + " ? " + element(read(S, one, hint)) + " : " + conv_other;
    if (halves) {
      os_ << "#pragma unroll\n      for (int e2 = e0; e2 < e0 + " << W << "; e2 += 2) {\n";
      os_ << "        unsigned word = 0;\n";
      os_ << "#pragma unroll\n        for (int h = 0; h < 2; ++h) { const int e = e2 + h; const tf_u16 half = " << value
          << "; word |= (unsigned)half << (16 * h); }\n";
      os_ << "        " << dst << "[e2 / 2] = word;\n      }\n";
    } else {
      os_ << "#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) " << dst << "[e] = " << value << ";\n";
    }
    os_ << "    }\n  }\n";
  }
  if (halves)
    os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; e += 2) { " << r << "[e] = " << text::from_word(t.dtype, dst + "[e / 2]", 0)
        << "; " << r << "[e + 1] = " << text::from_word(t.dtype, dst + "[e / 2]", 1) << "; }\n";
}

void Emitter::store(const ir::Instr& in) {
  const auto& pt = fn_.values[in.args[0]];
  const passes::AccessPlan& plan = a_.plan(in);
  const std::string p = v(in.args[0]);
  const bool masked = plan.masked;
  const DType dt = pt.dtype;
  const std::string S = text::storage_type(dt);
  const int hint = text::cache_hint(in.as<ir::attr::Memory>().cache, dt, opt_.l2_evict_last);
  if (pt.rank == 0) {
    // Every thread holds the scalar; one writes it.
    os_ << "  if (tid == 0" << (masked ? " && " + v(in.args[2]) : "") << ") "
        << write(S, bounds_.checked(p, in, in.args[0], 1), text::to_storage(dt, v(in.args[1])), hint) << ";\n";
    return;
  }
  const int E = layout(pt).per_thread;
  const int W = plan.vector;
  const std::string lv = live(pt);
  auto pred = [&](const std::string& idx) { return lane_test(lv, masked ? in.args[2] : -1, idx); };
  const std::string val = v(in.args[1]);
  if (W == 1) {
    const std::string cond = pred("e");
    os_ << "#pragma unroll\n  for (int e = 0; e < " << E << "; ++e) " << (cond.empty() ? "" : "if (" + cond + ") ")
        << write(S, bounds_.checked(p + "[e]", in, in.args[0], 1), text::to_storage(dt, val + "[e]"), hint) << ";\n";
    return;
  }
  os_ << "#pragma unroll\n  for (int e0 = 0; e0 < " << E << "; e0 += " << W << ") {\n";
  const std::string all = run_test(plan, pred);
  const std::string in_run = all.empty() ? "    " : "      ";
  if (!all.empty()) os_ << "    if (" << all << ") {\n";
  store_run(in_run, dt, W, val, bounds_.checked(p + "[e0]", in, in.args[0], W), hint);
  if (all.empty()) {
    os_ << "  }\n";
    return;
  }
  if (plan.run == passes::RunMask::first_lane) {  // the run is wholly outside the mask: nothing to write
    os_ << "    }\n  }\n";
    return;
  }
  const std::string cond = pred("e");
  os_ << "    } else {\n#pragma unroll\n      for (int e = e0; e < e0 + " << W << "; ++e) "
      << (cond.empty() ? "" : "if (" + cond + ") ") << write(S, bounds_.checked(p + "[e]", in, in.args[0], 1), text::to_storage(dt, val + "[e]"), hint)
      << ";\n";
  os_ << "    }\n  }\n";
}

// Stores the run of W elements of register tile `val` at e0 to `addr` as one access: halves are rounded
// and packed two to a word (one conversion per pair), everything else converted element by element.
void Emitter::store_run(const std::string& indent, DType dt, int W, const std::string& val, const std::string& addr, int hint) {
  const std::string H = hint_arg(hint);
  if (narrow(dt) && W >= 2) {
    os_ << indent << "unsigned raw[" << W / 2 << "];\n";
    os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W / 2 << "; ++k) raw[k] = "
        << (dt == DType::bf16 ? "tf_pack_bf16x2(" : "tf_pack_f16x2(") << val << "[e0 + 2 * k], " << val << "[e0 + 2 * k + 1]);\n";
    os_ << indent << "tf_store_vec<unsigned, " << W / 2 << H << ">(reinterpret_cast<unsigned*>(" << addr << "), raw);\n";
    return;
  }
  const std::string S = text::storage_type(dt);
  os_ << indent << S << " raw[" << W << "];\n";
  os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W << "; ++k) raw[k] = " << text::to_storage(dt, val + "[e0 + k]")
      << ";\n";
  os_ << indent << "tf_store_vec<" << S << ", " << W << H << ">(" << addr << ", raw);\n";
}

// Loads the run of W elements at `addr` into register tile `r` at e0 as one access: halves as W / 2
// words, each widened in place (see text::from_word), everything else element by element.
void Emitter::load_run(const std::string& indent, DType dt, int W, const std::string& addr, const std::string& r) {
  if (narrow(dt) && W >= 2) {
    os_ << indent << "unsigned raw[" << W / 2 << "];\n";
    os_ << indent << "tf_load_vec<unsigned, " << W / 2 << ">(reinterpret_cast<const unsigned*>(" << addr << "), raw);\n";
    os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W / 2 << "; ++k) { " << r
        << "[e0 + 2 * k] = " << text::from_word(dt, "raw[k]", 0) << "; " << r << "[e0 + 2 * k + 1] = " << text::from_word(dt, "raw[k]", 1)
        << "; }\n";
    return;
  }
  const std::string S = text::storage_type(dt);
  os_ << indent << S << " raw[" << W << "];\n";
  os_ << indent << "tf_load_vec<" << S << ", " << W << ">(" << addr << ", raw);\n";
  os_ << "#pragma unroll\n" << indent << "for (int k = 0; k < " << W << "; ++k) " << r << "[e0 + k] = "
      << text::from_storage(dt, "raw[k]") << ";\n";
}

}  // namespace tilefuse::codegen
