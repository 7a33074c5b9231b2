// dot on sm_90's warpgroup MMA: for a result whose warp grid is whole warpgroups (four warps of 16 rows
// over 64 rows, tile_homes' warpgroup_grid), each warpgroup issues wgmma.mma_async m64 x n x k16 steps
// that read both operands from the swizzled buffers through descriptors (or A from registers, in the
// fragments mma.sync takes), asynchronously. A dot waits for its own products, except a loop's dot that
// accumulates into what the loop carries, which leaves them running into the next iteration
// (deferrable_dots; the loop in tile_emitter.cpp copies one iteration less ahead for it). The wgmma
// instructions are generated per shape beside the kernel (their operand lists depend on N).
#include <algorithm>
#include <bit>
#include <set>

#include "backend/codegen/tile_emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;
using passes::TileLayout2;
using passes::Where;

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

bool TileEmitter::warpgroup_fits(const ir::Instr& in) const {
  if (!uses_warpgroup_mma()) return false;
  const ir::ValueType& t = fn_.values[in.result];
  const TileLayout2& L = a_.home[in.result].layout;
  const int WN = static_cast<int>(t.dims[1]) / L.warps_n;
  if (!passes::on_warpgroups(L) || WN % 8 != 0 || WN > 256) return false;
  // wgmma reads buffers of 64- or 128-byte rows here (the 32-byte swizzle of 16-element rows is wgmma's too,
  // but has run on a GPU only N-major: such dots keep mma.sync); an M- or N-major operand's part for one
  // warpgroup starts on a column block.
  const auto [cols_b, tb] = operand_form(in.args[1]);
  if (cols_b < 32 || (!tb && WN % std::min(cols_b, 64) != 0)) return false;
  return a_from_registers(in) || operand_form(in.args[0]).first >= 32;
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
  const ir::DType dt = fn_.values[in.args[0]].dtype;
  const int N = static_cast<int>(t.dims[1]), K = static_cast<int>(fn_.values[in.args[0]].dims[1]);
  const int wm = L.warps_m, wn = L.warps_n, WN = N / wn;
  const bool a_regs = a_from_registers(in);
  const bool deferred = deferred_.count(&in) > 0;

  const auto [va, vb] = dot_operands(in, a_regs);
  // A deferred dot accumulates in place into its loop's carried array and leaves its wgmmas in flight.
  const std::string r = deferred ? v(in.args[2]) : v(in.result);
  if (!deferred) dot_result(in, r);
  os_ << "  {  // on warpgroup MMA: warps 4g .. 4g + 3 compute rows tf_m0 .. tf_m0 + 63 and columns tf_n0 .. tf_n0 + " << WN - 1 << "\n";
  os_ << "    const int tf_m0 = ((warp & " << wm - 1 << ") >> 2) * 64, tf_n0 = (warp >> " << std::bit_width(unsigned(wm)) - 1 << ") * " << WN << ";\n";
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
    // A from registers in the fragments mma.sync takes: a warp's 16 rows of a wgmma's A are its rows of the
    // result that made them.
    os_ << "    unsigned tf_a[" << K / 16 << "][4];\n";
    os_ << "#pragma unroll\n    for (int kt = 0; kt < " << K / 16 << "; ++kt) {\n";
    for (int q = 0; q < 4; ++q) os_ << "      tf_a[kt][" << q << "] = " << a_fragment(in, q, "") << ";\n";
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
