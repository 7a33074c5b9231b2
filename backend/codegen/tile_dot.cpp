// dot on tensor cores: mma.sync m16n8k16 with f32 accumulators in the result's layout (each warp owns a
// block of the result), operands read from swizzled shared-memory buffers with ldmatrix (transposed when
// the operand's contraction dimension is not the buffer's contiguous one). An A operand that is itself a
// tensor-core result of the same warps (attention's probabilities) goes from registers to fragments
// directly, as FlashAttention-2 does, with no trip through shared memory. On sm_90 (Analysis::warpgroup_mma)
// a dot whose result has the warpgroup grid runs on wgmma instead: each group of four warps issues
// m64 x n x k16 products that read both operands straight from the same swizzled buffers (or A from
// registers), asynchronously, and waits for them once per dot.
#include <algorithm>
#include <stdexcept>

#include "backend/codegen/text.hpp"
#include "backend/codegen/tile_emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;
using passes::TileLayout2;
using passes::Where;

// A register operand (or a lazy one) written into a buffer of its own, element by element.
TileEmitter::View TileEmitter::operand_view(ir::ValueId id) {
  if (auto it = views_.find(id); it != views_.end()) return it->second;
  const ir::ValueType& t = fn_.values[id];
  const TileLayout2 l = layout_of(id);
  Buffer b;
  b.rows = static_cast<int>(t.dims[0]);
  b.cols = static_cast<int>(t.dims[1]);
  b.offset = allocate_operand(std::int64_t{b.rows} * b.cols * 2);
  b.group = -2;
  const int k = static_cast<int>(buffers_.size());
  buffers_.push_back(b);
  const std::string x = get(id, l);
  if (reads_pending_) {
    barrier();
    reads_pending_ = false;
  }
  os_ << "  // %" << id << " -> shared buffer " << k << " as a dot operand\n";
  const std::string owner = owner_guard(l);
  if (!owner.empty()) os_ << "  if (" << owner << ") {  // (held more than once: its first holders write it)\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << l.per_thread() << "; ++e)\n";
  os_ << "    *reinterpret_cast<tf_u16*>(tf_shared + " << swizzled(b, coord(l, 0), "(" + coord(l, 1) + ") >> 3") << " + (("
      << coord(l, 1) << ") & 7) * 2) = " << text::to_storage(t.dtype, x + "[e]") << ";\n";
  if (!owner.empty()) os_ << "  }\n";
  if (loop_depth_ == 0) views_[id] = View{k, false};
  return View{k, false};
}

void TileEmitter::dot(const ir::Instr& in) {
  if (warpgroup_dot(in)) return;
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& L = a_.home[in.result].layout;
  const ir::ValueId a = in.args[0], b = in.args[1];
  const ir::DType dt = fn_.values[a].dtype;
  const int M = static_cast<int>(t.dims[0]), N = static_cast<int>(t.dims[1]), K = static_cast<int>(fn_.values[a].dims[1]);
  const int wm = L.warps_m, wn = L.warps_n, WM = M / wm, WN = N / wn, MI = WM / 16, NI = WN / 8;
  const passes::TileHome& ha = a_.home[a];
  const bool a_regs = ha.where == Where::registers && ha.layout.mma && ha.layout.warps_n == 1 && ha.layout.warps_m == wm;
  View va, vb = operand_view(b);
  if (!a_regs) va = operand_view(a);
  // One wait covers both operands: copies land in commit order.
  if (!a_regs && buffers_[va.buffer].group > buffers_[vb.buffer].group) wait_for(va.buffer);
  wait_for(vb.buffer);
  if (!a_regs) wait_for(va.buffer);
  const std::string r = v(in.result);
  const std::string acc = in.args.size() > 2 ? get(in.args[2], L) + "[e]" : std::string("0.0f");
  os_ << "  float " << r << "[" << L.per_thread() << "];\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << L.per_thread() << "; ++e) " << r << "[e] = " << acc << ";\n";
  int log_wm = 0;
  while ((1 << log_wm) < wm) ++log_wm;
  os_ << "  {\n    const int tf_m0 = (warp & " << wm - 1 << ") * " << WM << ", tf_n0 = (warp >> " << log_wm << ") * " << WN
      << ";\n    const int tf_r8 = lane & 7, tf_mat = lane >> 3;\n";
  // A cast to f16/bf16 that only feeds dots is packed here from its f32 source (cvt.rn.*x2 rounds as the cast would).
  const std::string ra = !a_regs ? "" : packed_by_dot(a) ? v(defs_[a]->args[0]) : v(a);
  const int NIa = K / 8;  // a register A operand's 8-column tiles per warp
  const std::string pack = dt == ir::DType::bf16 ? "tf_pack_bf16x2" : "tf_pack_f16x2";
  os_ << "#pragma unroll\n    for (int kt = 0; kt < " << K / 16 << "; ++kt) {\n";
  os_ << "      unsigned tf_a[" << MI << "][4];\n";
  os_ << "#pragma unroll\n      for (int mi = 0; mi < " << MI << "; ++mi) {\n";
  if (a_regs) {
    // Fragment q of a 16x16 A block is the accumulator pair (h = q & 1) of its 8-column tile 2 kt + (q >> 1).
    for (int q = 0; q < 4; ++q) {
      const std::string e = "((mi * " + std::to_string(NIa) + " + 2 * kt + " + std::to_string(q >> 1) + ") * 2 + " + std::to_string(q & 1) + ") * 2";
      os_ << "        tf_a[mi][" << q << "] = " << pack << "(" << ra << "[" << e << "], " << ra << "[" << e << " + 1]);\n";
    }
  } else {
    const Buffer& B = buffers_[va.buffer];
    const bool k_contiguous = !va.transposed;  // a = buffer: a[m][k] with k contiguous; a = trans(buffer): m contiguous
    const std::string row = k_contiguous ? "tf_m0 + mi * 16 + tf_r8 + 8 * (tf_mat & 1)" : "kt * 16 + tf_r8 + 8 * (tf_mat >> 1)";
    const std::string chunk = k_contiguous ? "kt * 2 + (tf_mat >> 1)" : "(tf_m0 + mi * 16) / 8 + (tf_mat & 1)";
    os_ << "        " << (k_contiguous ? "tf_ldsm_x4" : "tf_ldsm_x4_t") << "(tf_sbase + " << swizzled(B, row, chunk) << ", tf_a[mi]);\n";
  }
  os_ << "      }\n";
  // B fragments two 8-column tiles at a time, each pair used at once: few registers live.
  const std::string mma = dt == ir::DType::bf16 ? "tf_mma_bf16" : "tf_mma_f16";
  {
    const Buffer& B = buffers_[vb.buffer];
    const bool k_contiguous = vb.transposed;  // b = buffer: b[k][n], n contiguous; b = trans(buffer): k contiguous
    if (NI % 2 == 0) {
      const std::string row = k_contiguous ? "tf_n0 + nj * 16 + tf_r8 + 8 * (tf_mat >> 1)" : "kt * 16 + tf_r8 + 8 * (tf_mat & 1)";
      const std::string chunk = k_contiguous ? "kt * 2 + (tf_mat & 1)" : "(tf_n0 + nj * 16) / 8 + (tf_mat >> 1)";
      os_ << "#pragma unroll\n      for (int nj = 0; nj < " << NI / 2 << "; ++nj) {\n        unsigned tf_q[4];\n";
      os_ << "        " << (k_contiguous ? "tf_ldsm_x4" : "tf_ldsm_x4_t") << "(tf_sbase + " << swizzled(B, row, chunk) << ", tf_q);\n";
      os_ << "#pragma unroll\n        for (int mi = 0; mi < " << MI << "; ++mi) {\n";
      os_ << "          " << mma << "(&" << r << "[(mi * " << NI << " + 2 * nj) * 4], tf_a[mi], tf_q[0], tf_q[1]);\n";
      os_ << "          " << mma << "(&" << r << "[(mi * " << NI << " + 2 * nj + 1) * 4], tf_a[mi], tf_q[2], tf_q[3]);\n        }\n      }\n";
    } else {
      const std::string row = k_contiguous ? "tf_n0 + tf_r8" : "kt * 16 + tf_r8 + 8 * (tf_mat & 1)";
      const std::string chunk = k_contiguous ? "kt * 2 + (tf_mat & 1)" : "tf_n0 / 8";
      os_ << "      unsigned tf_q[2];\n";
      os_ << "      " << (k_contiguous ? "tf_ldsm_x2" : "tf_ldsm_x2_t") << "(tf_sbase + " << swizzled(B, row, chunk) << ", tf_q);\n";
      os_ << "#pragma unroll\n      for (int mi = 0; mi < " << MI << "; ++mi) " << mma << "(&" << r << "[mi * 4], tf_a[mi], tf_q[0], tf_q[1]);\n";
    }
  }
  os_ << "    }\n  }\n";
  reads_pending_ = true;
}

namespace {
std::string n_operands(int first, int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += (i ? ", %" : "%") + std::to_string(first + i);
  return s;
}
}  // namespace

std::string TileEmitter::wgmma_helper(int n, ir::DType dt, bool a_regs, bool trans_a, bool trans_b) {
  const std::string ty = dt == ir::DType::bf16 ? "bf16" : "f16";
  const std::string name = "tf_wgmma_m64n" + std::to_string(n) + "k16_" + ty + (a_regs ? "_rs" : trans_a ? "_ss_m" : "_ss_k") + (trans_b ? "n" : "k");
  if (wgmma_helpers_.count(name)) return name;
  const int outs = n / 2;  // f32 accumulators per thread
  std::ostringstream h;
  h << "// D (f32, " << outs << " per thread) += A B for one m64 x n" << n << " x k16 step of a warpgroup: A " << (a_regs ? "from registers" : trans_a ? "M-major in shared memory" : "K-major in shared memory")
    << ", B " << (trans_b ? "N-major" : "K-major") << " in shared memory (" << ty << ").\n";
  h << "__device__ __forceinline__ void " << name << "(float* d, " << (a_regs ? "const unsigned (&a)[4]" : "unsigned long long a") << ", unsigned long long b) {\n";
  const int a_ops = a_regs ? 4 : 1;
  const int scale = outs + a_ops + 1;
  h << "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << scale << ", 0;\\n\"\n";
  h << "               \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << ty << "." << ty << " {" << n_operands(0, outs) << "}, "
    << (a_regs ? "{" + n_operands(outs, 4) + "}" : "%" + std::to_string(outs)) << ", %" << outs + a_ops << ", p, 1, 1, "
    << (a_regs ? "" : trans_a ? "1, " : "0, ") << (trans_b ? 1 : 0) << ";\\n}\\n\"\n               : ";
  for (int i = 0; i < outs; ++i) h << (i == 0 ? "" : i % 8 == 0 ? ",\n                 " : ", ") << "\"+f\"(d[" << i << "])";
  h << "\n               : " << (a_regs ? "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3])" : "\"l\"(a)") << ", \"l\"(b), \"r\"(1) : \"memory\");\n}\n";
  wgmma_helpers_[name] = h.str();
  return name;
}

bool TileEmitter::a_from_registers(const ir::Instr& in) const {
  const TileLayout2& L = a_.home[in.result].layout;
  const passes::TileHome& ha = a_.home[in.args[0]];
  return ha.where == Where::registers && ha.layout.mma && ha.layout.warps_n == 1 && ha.layout.warps_m == L.warps_m;
}

std::pair<int, bool> TileEmitter::operand_form(ir::ValueId id) const {
  if (auto it = views_.find(id); it != views_.end()) return {buffers_[it->second.buffer].cols, it->second.transposed};
  const ir::Instr* d = defs_[id];
  if (d && d->op == Op::trans && a_.home[id].where == Where::shared) {
    const auto [cols, transposed] = operand_form(d->args[0]);
    return {cols, !transposed};
  }
  return {static_cast<int>(fn_.values[id].dims[1]), false};
}

bool TileEmitter::warpgroup_fits(const ir::Instr& in) const {
  if (!uses_warpgroup_mma()) return false;
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& L = a_.home[in.result].layout;
  const int M = static_cast<int>(t.dims[0]), N = static_cast<int>(t.dims[1]);
  const int wm = L.warps_m, wn = L.warps_n, WN = N / wn;
  if (!L.mma || M / wm != 16 || wm % 4 != 0 || WN % 8 != 0 || WN > 256) return false;
  // wgmma reads rows of 32, 64 or 128 bytes; an M- or N-major operand's part for one warpgroup starts on a column block.
  const auto [cols_b, tb] = operand_form(in.args[1]);
  if (cols_b < 16 || (!tb && WN % std::min(cols_b, 64) != 0)) return false;
  return a_from_registers(in) || operand_form(in.args[0]).first >= 16;
}

std::vector<const ir::Instr*> TileEmitter::deferrable_dots(const ir::Instr& loop, const std::vector<const ir::Instr*>& piped) const {
  std::set<ir::ValueId> in_body;
  ir::walk(loop.body, [&](const ir::Instr& b) {
    if (b.result >= 0) in_body.insert(b.result);
    for (ir::ValueId r : b.results) in_body.insert(r);
  });
  // An operand whose buffer no iteration rewrites while the wgmmas reading it may still run: a load the
  // loop copies ahead (its stage is reused two iterations later), or a value from outside the loop.
  auto steady = [&](ir::ValueId x) {
    while (defs_[x] && defs_[x]->op == Op::trans) x = defs_[x]->args[0];
    return !in_body.count(x) || std::any_of(piped.begin(), piped.end(), [&](const ir::Instr* l) { return l->result == x; });
  };
  std::vector<const ir::Instr*> out;
  for (const ir::Instr& d : loop.body) {
    if (d.op != Op::dot || d.args.size() < 3 || !warpgroup_fits(d) || !steady(d.args[0]) || !steady(d.args[1])) continue;
    const ir::ValueId acc = d.args[2];
    bool yielded = false;
    for (std::size_t k = 0; k + 1 < loop.block_args.size(); ++k) yielded = yielded || (loop.block_args[k + 1] == acc && loop.yields[k] == d.result);
    if (yielded && users_[acc].size() == 1 && users_[d.result].size() == 1) out.push_back(&d);
  }
  return out;
}

bool TileEmitter::warpgroup_dot(const ir::Instr& in) {
  if (!warpgroup_fits(in)) return false;
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& L = a_.home[in.result].layout;
  const ir::ValueId a = in.args[0], b = in.args[1];
  const ir::DType dt = fn_.values[a].dtype;
  const int N = static_cast<int>(t.dims[1]), K = static_cast<int>(fn_.values[a].dims[1]);
  const int wm = L.warps_m, wn = L.warps_n, WN = N / wn;
  const bool a_regs = a_from_registers(in);
  const bool deferred = deferred_.count(&in) > 0;

  const View vb = operand_view(b);
  View va;
  if (!a_regs) va = operand_view(a);
  if (!a_regs && buffers_[va.buffer].group > buffers_[vb.buffer].group) wait_for(va.buffer);
  wait_for(vb.buffer);
  if (!a_regs) wait_for(va.buffer);
  // A deferred dot accumulates in place into its loop's carried array and leaves its wgmmas in flight.
  const std::string r = deferred ? v(in.args[2]) : v(in.result);
  if (!deferred) {
    const std::string acc = in.args.size() > 2 ? get(in.args[2], L) + "[e]" : std::string("0.0f");
    os_ << "  float " << r << "[" << L.per_thread() << "];\n";
    os_ << "#pragma unroll\n  for (int e = 0; e < " << L.per_thread() << "; ++e) " << r << "[e] = " << acc << ";\n";
  }
  int log_wm = 0;
  while ((1 << log_wm) < wm) ++log_wm;
  os_ << "  {  // on warpgroup MMA: warps 4g .. 4g + 3 compute rows tf_m0 .. tf_m0 + 63 and columns tf_n0 .. tf_n0 + " << WN - 1 << "\n";
  os_ << "    const int tf_m0 = ((warp & " << wm - 1 << ") >> 2) * 64, tf_n0 = (warp >> " << log_wm << ") * " << WN << ";\n";
  // The descriptor of an operand's 16-deep slice kt: rows of R bytes in 8-row groups of 8R (the stride
  // byte offset), column blocks rows x R apart (the leading byte offset of an M/N-major operand).
  auto descriptor = [&](const View& view, bool k_major, const std::string& mn0) {
    const Buffer& B = buffers_[view.buffer];
    const int R = std::min(B.cols, 64) * 2;
    const std::int64_t block = std::int64_t{B.rows} * R;
    const int swizzle = R == 128 ? 1 : R == 64 ? 2 : 3;
    std::string addr = "tf_sbase + " + std::to_string(B.offset) + (B.phase.empty() ? "" : " + " + B.phase + " * " + std::to_string(B.bytes()));
    if (k_major)
      addr += " + (kt * 32 / " + std::to_string(R) + ") * " + std::to_string(block) + " + (" + mn0 + ") * " + std::to_string(R) + " + kt * 32 % " + std::to_string(R);
    else
      addr += " + (" + mn0 + ") / " + std::to_string(R / 2) + " * " + std::to_string(block) + " + kt * " + std::to_string(16 * R);
    return "tf_wgmma_desc(" + addr + ", " + std::to_string(k_major ? 16 : block) + ", " + std::to_string(8 * R) + ", " + std::to_string(swizzle) + ")";
  };
  const bool b_k_major = vb.transposed;  // b = trans(buffer [n x k]): k contiguous
  const bool a_k_major = a_regs || !va.transposed;
  const std::string helper = wgmma_helper(WN, dt, a_regs, !a_k_major, !b_k_major);
  if (a_regs) {
    // Fragment q of a 16x16 A block is the accumulator pair (h = q & 1) of its 8-column tile 2 kt + (q >> 1),
    // exactly as for mma.sync: a warp's 16 rows of a wgmma's A are its rows of the result that made them.
    const std::string ra = packed_by_dot(a) ? v(defs_[a]->args[0]) : v(a);
    const std::string pack = dt == ir::DType::bf16 ? "tf_pack_bf16x2" : "tf_pack_f16x2";
    os_ << "    unsigned tf_a[" << K / 16 << "][4];\n";
    os_ << "#pragma unroll\n    for (int kt = 0; kt < " << K / 16 << "; ++kt) {\n";
    for (int q = 0; q < 4; ++q) {
      const std::string e = "((2 * kt + " + std::to_string(q >> 1) + ") * 2 + " + std::to_string(q & 1) + ") * 2";
      os_ << "      tf_a[kt][" << q << "] = " << pack << "(" << ra << "[" << e << "], " << ra << "[" << e << " + 1]);\n";
    }
    os_ << "    }\n";
  }
  os_ << "#pragma unroll\n    for (int e = 0; e < " << L.per_thread() << "; ++e) tf_wgmma_fence_operand(" << r << "[e]);\n";
  os_ << "    tf_wgmma_fence();\n";
  os_ << "#pragma unroll\n    for (int kt = 0; kt < " << K / 16 << "; ++kt)\n";
  os_ << "      " << helper << "(" << r << ", " << (a_regs ? "tf_a[kt]" : descriptor(va, a_k_major, "tf_m0")) << ",\n        "
      << descriptor(vb, b_k_major, "tf_n0") << ");\n";
  os_ << "    tf_wgmma_commit();\n";
  if (deferred) {
    // This iteration's products run on while the next one's copies land; the previous iteration's are
    // done (each warpgroup's, and after the loop's next barrier everyone's) before its stage is reused.
    os_ << "    tf_wgmma_wait<1>();  // the previous iteration's wgmmas have finished (these run on, into " << r << ")\n  }\n";
  } else {
    os_ << "    tf_wgmma_wait<0>();\n";
    os_ << "#pragma unroll\n    for (int e = 0; e < " << L.per_thread() << "; ++e) tf_wgmma_fence_operand(" << r << "[e]);\n  }\n";
  }
  reads_pending_ = true;
  return true;
}

}  // namespace tilefuse::codegen
