// The interpreter's program state (program.hpp): start, control flow, memory accesses with bounds
// checks, stages, reductions, casts and random numbers.
#include "backend/interp/program.hpp"

#include <algorithm>
#include <cstring>


namespace tilefuse::interp::detail {

void Program::start(std::int64_t px, std::int64_t py, std::int64_t pz, std::int64_t gx, std::int64_t gy, std::int64_t gz) {
  pid_[0] = px, pid_[1] = py, pid_[2] = pz;
  grid_[0] = gx, grid_[1] = gy, grid_[2] = gz;
  // Each program starts with fresh stages. Shared memory holds garbage until written: floats start as
  // NaN and integers as a pattern, so that a read of an element no store wrote shows in the results.
  stages_.resize(fn_.stages.size());
  for (std::size_t k = 0; k < fn_.stages.size(); ++k) {
    const ir::Stage& st = fn_.stages[k];
    if (ir::is_float(st.dtype)) stages_[k].f.assign(st.size, std::numeric_limits<double>::quiet_NaN());
    else stages_[k].i.assign(st.size, wrap(st.dtype, 0x5a5a5a5a5a5a5a5all));
  }
  stage_epoch_.assign(fn_.stages.size(), 1);
  copied_in_.resize(fn_.stages.size());
  for (std::size_t k = 0; k < fn_.stages.size(); ++k) copied_in_[k].assign(fn_.stages[k].size, 0);
}

void Program::fail(const ir::Instr& in, const std::string& why) const {
  throw InterpreterError("tilefuse interpreter: kernel '" + fn_.name + "', program (" + std::to_string(pid_[0]) + "," +
                         std::to_string(pid_[1]) + "," + std::to_string(pid_[2]) + "), '" + ir::print(fn_, in) + "'" +
                         (in.where.empty() ? "" : " [" + in.where + "]") + ": " + why);
}

Value& Program::make(const ir::Instr& in) {
  Value& r = vals_[in.result];
  const auto& t = type(in.result);
  const std::size_t n = static_cast<std::size_t>(t.numel());
  r.base = -1;
  if (ir::is_float(t.dtype) && !t.pointer) {
    r.f.assign(n, 0.0);
    r.i.clear();
  } else {
    r.i.assign(n, 0);
    r.f.clear();
  }
  return r;
}

// Reads element `off` of parameter `base`'s buffer as a register value.
double Program::read_float(const ir::Instr& in, int base, std::int64_t off, DType t) const {
  const HostArg& a = check_access(in, base, off, "load");
  const char* p = static_cast<const char*>(a.data) + off * ir::dtype_bytes(t);
  switch (t) {
    case DType::f32: { float x; std::memcpy(&x, p, 4); return x; }
    case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
    case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
    default: return 0;
  }
}
std::int64_t Program::read_int(const ir::Instr& in, int base, std::int64_t off, DType t) const {
  const HostArg& a = check_access(in, base, off, "load");
  const char* p = static_cast<const char*>(a.data) + off * ir::dtype_bytes(t);
  if (t == DType::i32) { std::int32_t x; std::memcpy(&x, p, 4); return x; }
  std::int64_t x;
  std::memcpy(&x, p, 8);
  return x;
}
void Program::write(const ir::Instr& in, int base, std::int64_t off, DType t, double f, std::int64_t i) const {
  const HostArg& a = check_access(in, base, off, "store");
  char* p = static_cast<char*>(a.data) + off * ir::dtype_bytes(t);
  switch (t) {
    case DType::f32: { const float x = static_cast<float>(f); std::memcpy(p, &x, 4); break; }
    case DType::f16: { const std::uint16_t h = float_to_half_bits(static_cast<float>(f)); std::memcpy(p, &h, 2); break; }
    case DType::bf16: { const std::uint16_t h = float_to_bf16_bits(static_cast<float>(f)); std::memcpy(p, &h, 2); break; }
    case DType::i32: { const std::int32_t x = static_cast<std::int32_t>(i); std::memcpy(p, &x, 4); break; }
    case DType::i64: std::memcpy(p, &i, 8); break;
    case DType::i1: break;
  }
}
// Whether a load or store carries a mask (stage copies: the same operand positions).
bool Program::masked(const ir::Instr& in) const {
  const std::size_t mask_at = in.op == Op::store || in.op == Op::stage_copy || in.op == Op::stage_store ||
                                   in.op == Op::stage_scatter
                               ? 2
                               : 1;
  return in.args.size() > mask_at;
}

const HostArg& Program::check_access(const ir::Instr& in, int base, std::int64_t off, const char* what) const {
  const HostArg& a = args_[base];
  if (off < 0 || static_cast<std::size_t>(off) >= a.count)
    fail(in, std::string(what) + " through argument " + std::to_string(base) + " (" + fn_.params[base].name +
                 ") at element " + std::to_string(off) + ", outside its " + std::to_string(a.count) + " elements" +
                 (masked(in) ? " (the mask let it through)" : " (the access has no mask)"));
  return a;
}

void Program::run_block(const std::vector<ir::Instr>& block) {
  for (const ir::Instr& in : block) step(in);
}

// for (iv = lo; iv < hi; iv += step): carried values start as the inits and take the yields.
void Program::run_loop(const ir::Instr& in) {
  const std::int64_t lo = vals_[in.args[0]].i[0], hi = vals_[in.args[1]].i[0], st = vals_[in.args[2]].i[0];
  if (st <= 0 && lo < hi) fail(in, "loop step must be positive, got " + std::to_string(st));
  const std::size_t carried = in.block_args.size() - 1;
  for (std::size_t k = 0; k < carried; ++k) vals_[in.block_args[k + 1]] = vals_[in.args[k + 3]];
  for (std::int64_t iv = lo; iv < hi; iv += st) {
    Value& v = vals_[in.block_args[0]];
    v = Value{};
    v.i.assign(1, iv);
    run_block(in.body);
    std::vector<Value> next(carried);
    for (std::size_t k = 0; k < carried; ++k) next[k] = vals_[in.yields[k]];
    for (std::size_t k = 0; k < carried; ++k) vals_[in.block_args[k + 1]] = std::move(next[k]);
  }
  for (std::size_t k = 0; k < carried; ++k) vals_[in.results[k]] = vals_[in.block_args[k + 1]];
}

// One instruction, dispatched by its op-table family (as code generation lowers it).
void Program::step(const ir::Instr& in) {
  switch (ir::op_info(in.op).family) {
    case ir::Family::geometry: return geometry(in);
    case ir::Family::elementwise: return elementwise(in);
    case ir::Family::memory: return in.op == Op::load ? load(in) : store(in);
    case ir::Family::reduction: return reduce(in);
    case ir::Family::stage:
      switch (in.op) {
        case Op::stage_load:
        case Op::stage_gather: return stage_load(in);
        case Op::stage_copy: return stage_copy(in);
        default: return stage_store(in);
      }
    case ir::Family::control: return run_loop(in);
    case ir::Family::cluster: {
      if (!combine_) fail(in, "a cluster reduction runs only in a cluster's lockstep (run())");
      const float r = combine_(in, cluster_operand(in));
      return set_cluster_result(in, r);
    }
    case ir::Family::shape: return shape(in);
    case ir::Family::axis_reduction: return reduce_along(in);
    case ir::Family::dot: return dot(in);
    case ir::Family::grid: return;  // launches run one after another here: nothing overlaps to order
  }
}

void Program::geometry(const ir::Instr& in) {
  switch (in.op) {
    case Op::param: {
    Value& r = make(in);
    const auto& t = type(in.result);
    const int index = in.as<ir::attr::Param>().index;
    const HostArg& a = args_[index];
    if (t.pointer) { r.base = index; r.i[0] = 0; }
    else if (ir::is_float(t.dtype)) r.f[0] = round_to(t.dtype, a.f);
    else r.i[0] = wrap(t.dtype, a.i);
      return;
    }
    case Op::program_id: make(in).i[0] = pid_[in.as<ir::attr::Axis>().axis]; return;
    case Op::num_programs: make(in).i[0] = grid_[in.as<ir::attr::Axis>().axis]; return;
    default: {  // arange
    Value& r = make(in);
    for (std::size_t j = 0; j < r.i.size(); ++j) r.i[j] = static_cast<std::int64_t>(j);
      return;
    }
  }
}

}  // namespace tilefuse::interp::detail
