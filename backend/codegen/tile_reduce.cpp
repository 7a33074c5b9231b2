// Reductions in programs with 2D tiles (along an axis to a 1D tile, or a 1D tile to a scalar) and layout
// conversions. A reduction combines a thread's own elements first, then across the lanes that hold other
// elements of the reduced axis (shuffles), then across warps through shared memory; floats combine in
// f32 and f16/bf16 sums round once. A conversion writes the tile to shared memory in one layout and
// reads it back in another.
#include "backend/codegen/text.hpp"
#include "backend/codegen/tile_emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;
using passes::TileLayout2;

namespace {

// The identity and the combining expression of a reduction op over dtype dt.
std::string identity(Op op, ir::DType dt) {
  const bool fl = ir::is_float(dt);
  if (op == Op::sum_along || op == Op::reduce_sum) return fl ? "0.0f" : "0";
  const bool mx = op == Op::max_along || op == Op::reduce_max;
  if (fl) return mx ? "-__int_as_float(0x7f800000)" : "__int_as_float(0x7f800000)";
  if (dt == ir::DType::i64) return mx ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  return mx ? "(-2147483647 - 1)" : "2147483647";
}
std::string combine_expr(Op op, ir::DType dt, const std::string& a, const std::string& b) {
  const bool fl = ir::is_float(dt);
  if (op == Op::sum_along || op == Op::reduce_sum) return a + " + " + b;
  const bool mx = op == Op::max_along || op == Op::reduce_max;
  return std::string(fl ? (mx ? "fmaxf(" : "fminf(") : (mx ? "tf_imax(" : "tf_imin(")) + a + ", " + b + ")";
}

}  // namespace

void TileEmitter::reduce_along(const ir::Instr& in) {
  const ir::ValueId x = in.args[0];
  const int axis = in.as<ir::attr::Axis>().axis;
  const TileLayout2 p = layout_of(x);
  const TileLayout2& s = a_.home[in.result].layout;
  const ir::DType dt = fn_.values[in.result].dtype;
  const std::string xs = get(x, p), r = v(in.result);
  const std::string type = ir::is_float(dt) ? "float" : text::reg_type(fn_.values[in.result]);
  os_ << "  " << type << " " << r << "[" << s.per_thread() << "];\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << s.per_thread() << "; ++e) " << r << "[e] = " << identity(in.op, dt) << ";\n";
  const std::string to = r + "[" + part_expr(p, 1u << axis) + "]";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << p.per_thread() << "; ++e) " << to << " = " << combine_expr(in.op, dt, to, xs + "[e]") << ";\n";
  combine(in, p, 1u << axis, &s, r, type);
  if (in.op == Op::sum_along && (dt == ir::DType::f16 || dt == ir::DType::bf16))
    os_ << "#pragma unroll\n  for (int e = 0; e < " << s.per_thread() << "; ++e) " << r << "[e] = " << text::rounded(dt, r + "[e]") << ";\n";
}

void TileEmitter::reduce_scalar(const ir::Instr& in) {
  const ir::ValueId x = in.args[0];
  const TileLayout2 p = layout_of(x);
  const ir::DType dt = fn_.values[in.result].dtype;
  const std::string xs = get(x, p), acc = fresh("tf_acc");
  const std::string type = ir::is_float(dt) ? "float" : text::reg_type(fn_.values[in.result]);
  os_ << "  " << type << " " << acc << "[1] = {" << identity(in.op, dt) << "};\n";
  os_ << "#pragma unroll\n  for (int e = 0; e < " << p.per_thread() << "; ++e) " << acc << "[0] = "
      << combine_expr(in.op, dt, acc + "[0]", xs + "[e]") << ";\n";
  combine(in, p, 1u, nullptr, acc, type);
  const std::string value = in.op == Op::reduce_sum ? text::rounded(dt, acc + "[0]") : acc + "[0]";
  os_ << "  const " << text::reg_type(fn_.values[in.result]) << " " << v(in.result) << " = " << value << ";\n";
}

void TileEmitter::combine(const ir::Instr& in, const TileLayout2& full, unsigned dims, const TileLayout2* s, const std::string& r,
                          const std::string& type) {
  const ir::DType dt = fn_.values[in.result].dtype;
  const int n = s ? s->per_thread() : 1;
  auto reduced = [&](const passes::Basis& b) { return ((dims & 1u) && b[0] != 0) || ((dims & 2u) && b[1] != 0); };
  for (std::size_t k = 0; k < full.lane.size(); ++k)
    if (reduced(full.lane[k]))
      os_ << "#pragma unroll\n  for (int e = 0; e < " << n << "; ++e) " << r << "[e] = "
          << combine_expr(in.op, dt, r + "[e]", "__shfl_xor_sync(0xffffffffu, " + r + "[e], " + std::to_string(1 << k) + ")") << ";\n";
  int mask = 0;
  for (std::size_t k = 0; k < full.warp.size(); ++k)
    if (reduced(full.warp[k])) mask |= 1 << k;
  if (mask == 0) return;
  // Across warps: each warp's partials to shared memory, then every thread combines the warps that share
  // its place along the kept axis.
  const int len = s ? s->dims[0] : 1;
  need_scratch(std::int64_t{warps_} * len * 8);
  const std::string slot = s ? coord(*s, 0) : "0";
  os_ << "  {\n    " << type << "* const tf_part = reinterpret_cast<" << type << "*>(tf_scratch);\n";
  os_ << "#pragma unroll\n    for (int e = 0; e < " << n << "; ++e) tf_part[warp * " << len << " + " << slot << "] = " << r << "[e];\n";
  os_ << "    __syncthreads();\n";
  os_ << "#pragma unroll\n    for (int e = 0; e < " << n << "; ++e) {\n      " << type << " tf_c = " << identity(in.op, dt) << ";\n";
  os_ << "#pragma unroll\n      for (int w = 0; w < " << warps_ << "; ++w)\n        if ((w & " << ~mask << ") == (warp & " << ~mask
      << ")) tf_c = " << combine_expr(in.op, dt, "tf_c", "tf_part[w * " + std::to_string(len) + " + " + slot + "]") << ";\n";
  os_ << "      " << r << "[e] = tf_c;\n    }\n    __syncthreads();\n  }\n";
}

void TileEmitter::convert(ir::ValueId id, const std::string& from, const TileLayout2& a, const TileLayout2& b, const std::string& to) {
  const ir::ValueType& t = fn_.values[id];
  const std::string type = reg_type(id);
  const int bytes = t.pointer || t.dtype == ir::DType::i64 ? 8 : 4;
  need_scratch(t.numel() * bytes);
  auto index = [&](const TileLayout2& l) {
    return l.rank == 1 ? coord(l, 0) : "(" + coord(l, 0) + ") * " + std::to_string(l.dims[1]) + " + " + coord(l, 1);
  };
  os_ << "  // %" << id << " to layout L" << layout_id(b) << " through shared memory\n";
  os_ << "  " << type << " " << to << "[" << b.per_thread() << "];\n  {\n";
  os_ << "    " << type << "* const tf_x = reinterpret_cast<" << type << "*>(tf_scratch);\n";
  // A tile held more than once (smaller than the program's threads) is written by one holder of each element.
  const std::string owner = owner_guard(a);
  if (!owner.empty()) os_ << "    if (" << owner << ") {  // (the tile is held more than once: its first holders write it)\n";
  os_ << "#pragma unroll\n    for (int e = 0; e < " << a.per_thread() << "; ++e) tf_x[" << index(a) << "] = " << from << "[e];\n";
  if (!owner.empty()) os_ << "    }\n";
  os_ << "    __syncthreads();\n";
  os_ << "#pragma unroll\n    for (int e = 0; e < " << b.per_thread() << "; ++e) " << to << "[e] = tf_x[" << index(b) << "];\n";
  os_ << "    __syncthreads();\n  }\n";
}

}  // namespace tilefuse::codegen
