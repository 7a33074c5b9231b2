// dot on tensor cores: mma.sync m16n8k16 with f32 accumulators in the result's layout (each warp owns a
// block of the result), operands read from swizzled shared-memory buffers with ldmatrix (transposed when
// the operand's contraction dimension is not the buffer's contiguous one). An A operand that is itself a
// tensor-core result of the same warps (attention's probabilities) goes from registers to fragments
// directly, as FlashAttention-2 does, with no trip through shared memory. On sm_90 a dot whose result has
// the warpgroup grid runs on wgmma instead (tile_wgmma.cpp); the operand buffers are the same.
#include <bit>
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
  write_buffer(b, l, x, t.dtype, 1);
  if (loop_depth_ == 0) views_[id] = View{k, false};
  return View{k, false};
}

void TileEmitter::dot(const ir::Instr& in) {
  if (warpgroup_dot(in)) return;
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& L = a_.home[in.result].layout;
  const ir::ValueId a = in.args[0];
  const ir::DType dt = fn_.values[a].dtype;
  const int M = static_cast<int>(t.dims[0]), N = static_cast<int>(t.dims[1]), K = static_cast<int>(fn_.values[a].dims[1]);
  const int wm = L.warps_m, wn = L.warps_n, WM = M / wm, WN = N / wn, MI = WM / 16, NI = WN / 8;
  const bool a_regs = a_from_registers(in);
  const auto [va, vb] = dot_operands(in, a_regs);
  const std::string r = v(in.result);
  dot_result(in, r);
  os_ << "  {\n    const int tf_m0 = (warp & " << wm - 1 << ") * " << WM << ", tf_n0 = (warp >> " << std::bit_width(unsigned(wm)) - 1 << ") * " << WN
      << ";\n    const int tf_r8 = lane & 7, tf_mat = lane >> 3;\n";
  os_ << "#pragma unroll\n    for (int kt = 0; kt < " << K / 16 << "; ++kt) {\n";
  os_ << "      unsigned tf_a[" << MI << "][4];\n";
  os_ << "#pragma unroll\n      for (int mi = 0; mi < " << MI << "; ++mi) {\n";
  if (a_regs) {
    for (int q = 0; q < 4; ++q) os_ << "        tf_a[mi][" << q << "] = " << a_fragment(in, q, "mi * " + std::to_string(K / 8) + " + ") << ";\n";
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

std::pair<TileEmitter::View, TileEmitter::View> TileEmitter::dot_operands(const ir::Instr& in, bool a_regs) {
  View va, vb = operand_view(in.args[1]);
  if (!a_regs) va = operand_view(in.args[0]);
  // One wait covers both operands: copies land in commit order.
  if (!a_regs && buffers_[va.buffer].group > buffers_[vb.buffer].group) wait_for(va.buffer);
  wait_for(vb.buffer);
  if (!a_regs) wait_for(va.buffer);
  return {va, vb};
}

void TileEmitter::dot_result(const ir::Instr& in, const std::string& r) {
  const TileLayout2& L = a_.home[in.result].layout;
  const std::string acc = in.args.size() > 2 ? get(in.args[2], L) + "[e]" : std::string("0.0f");
  os_ << "  float " << r << "[" << L.per_thread() << "];\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << L.per_thread() << "; ++e) " << r << "[e] = " << acc << ";\n";
}

// Fragment q of a 16x16 A block is the accumulator pair (h = q & 1) of its 8-column tile 2 kt + (q >> 1),
// for mma.sync and wgmma alike. A cast to f16/bf16 that only feeds dots is packed here from its f32 source
// (cvt.rn.*x2 rounds as the cast would).
std::string TileEmitter::a_fragment(const ir::Instr& in, int q, const std::string& first_tile) {
  const ir::ValueId a = in.args[0];
  const std::string ra = packed_by_dot(a) ? v(defs_[a]->args[0]) : v(a);
  const std::string pack = fn_.values[a].dtype == ir::DType::bf16 ? "tf_pack_bf16x2" : "tf_pack_f16x2";
  const std::string e = "((" + first_tile + "2 * kt + " + std::to_string(q >> 1) + ") * 2 + " + std::to_string(q & 1) + ") * 2";
  return pack + "(" + ra + "[" + e + "], " + ra + "[" + e + " + 1])";
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

}  // namespace tilefuse::codegen
