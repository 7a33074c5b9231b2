// The interpreter's program state (program.hpp): start, control flow, memory accesses with bounds
// checks, stages, reductions, casts and random numbers.
#include "backend/interp/program.hpp"

#include <algorithm>
#include <cstring>

#include "backend/numerics/philox.hpp"

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
const HostArg& Program::check_access(const ir::Instr& in, int base, std::int64_t off, const char* what) const {
  const HostArg& a = args_[base];
  if (off < 0 || static_cast<std::size_t>(off) >= a.count)
    fail(in, std::string(what) + " through argument " + std::to_string(base) + " (" + fn_.params[base].name +
                 ") at element " + std::to_string(off) + ", outside its " + std::to_string(a.count) +
                 " elements (the mask let it through)");
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

void Program::step(const ir::Instr& in) {
  auto& V = vals_;
  if (ir::op_info(in.op).region) return run_loop(in);
  auto arg = [&](std::size_t k) -> const Value& { return V[in.args.at(k)]; };
  // Element j of operand k (scalars broadcast, though tracing already splats them).
  auto fx = [&](std::size_t k, std::size_t j) { const auto& x = arg(k).f; return x.size() == 1 ? x[0] : x[j]; };
  auto ix = [&](std::size_t k, std::size_t j) { const auto& x = arg(k).i; return x.size() == 1 ? x[0] : x[j]; };
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
    case Op::arange: {
      Value& r = make(in);
      for (std::size_t j = 0; j < r.i.size(); ++j) r.i[j] = static_cast<std::int64_t>(j);
      return;
    }
    case Op::constant: {
      Value& r = make(in);
      const auto& t = type(in.result);
      const double value = in.as<ir::attr::Constant>().value;
      if (ir::is_float(t.dtype)) r.f[0] = round_to(t.dtype, value);
      else r.i[0] = wrap(t.dtype, static_cast<std::int64_t>(value));
      return;
    }
    case Op::splat: {
      const Value& x = arg(0);
      Value& r = make(in);
      r.base = x.base;
      if (!x.f.empty()) std::fill(r.f.begin(), r.f.end(), x.f[0]);
      else std::fill(r.i.begin(), r.i.end(), x.i[0]);
      return;
    }
    case Op::ptr_add: {
      const int base = arg(0).base;
      Value& r = make(in);
      r.base = base;
      for (std::size_t j = 0; j < r.i.size(); ++j) r.i[j] = ix(0, j) + ix(1, j);
      return;
    }
    case Op::load: {
      const auto& t = type(in.result);
      const int base = arg(0).base;
      const bool masked = in.args.size() >= 2;
      Value& r = make(in);
      const std::size_t n = size(in.result);
      for (std::size_t j = 0; j < n; ++j) {
        const bool on = !masked || ix(1, j) != 0;
        if (ir::is_float(t.dtype)) r.f[j] = on ? read_float(in, base, ix(0, j), t.dtype) : (masked ? fx(2, j) : 0.0);
        else r.i[j] = on ? read_int(in, base, ix(0, j), t.dtype) : (masked ? ix(2, j) : 0);
      }
      return;
    }
    case Op::store: {
      const auto& pt = type(in.args[0]);
      const int base = arg(0).base;
      const bool masked = in.args.size() == 3;
      const std::size_t n = size(in.args[0]);
      for (std::size_t j = 0; j < n; ++j) {
        if (masked && ix(2, j) == 0) continue;
        if (ir::is_float(pt.dtype)) write(in, base, ix(0, j), pt.dtype, fx(1, j), 0);
        else write(in, base, ix(0, j), pt.dtype, 0, ix(1, j));
      }
      return;
    }
    case Op::reduce_max:
    case Op::reduce_min:
    case Op::reduce_sum: {
      const auto& t = type(in.result);
      const std::size_t n = size(in.args[0]);
      Value& r = make(in);
      if (ir::is_float(t.dtype) && in.op == Op::reduce_sum) {
        // f32 accumulation in a pairwise tree, like the GPU's thread/warp/block tree (the exact order
        // differs: tests compare with a tolerance), so the error grows with log n, not n.
        std::vector<float> level(n);
        for (std::size_t j = 0; j < n; ++j) level[j] = static_cast<float>(fx(0, j));
        while (level.size() > 1) {
          std::vector<float> next((level.size() + 1) / 2);
          for (std::size_t j = 0; j < next.size(); ++j)
            next[j] = 2 * j + 1 < level.size() ? level[2 * j] + level[2 * j + 1] : level[2 * j];
          level.swap(next);
        }
        r.f[0] = round_to(t.dtype, level.empty() ? 0.0f : level[0]);
      } else if (ir::is_float(t.dtype)) {
        float acc = in.op == Op::reduce_max ? -std::numeric_limits<float>::infinity()
                                            : std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < n; ++j) {
          const float x = static_cast<float>(fx(0, j));
          acc = in.op == Op::reduce_max ? std::fmax(acc, x) : std::fmin(acc, x);
        }
        r.f[0] = round_to(t.dtype, acc);
      } else {
        std::int64_t acc = in.op == Op::reduce_sum ? 0
                           : in.op == Op::reduce_max ? std::numeric_limits<std::int64_t>::min()
                                                     : std::numeric_limits<std::int64_t>::max();
        for (std::size_t j = 0; j < n; ++j) {
          const std::int64_t x = ix(0, j);
          acc = in.op == Op::reduce_sum ? wrap(t.dtype, acc + x) : in.op == Op::reduce_max ? std::max(acc, x) : std::min(acc, x);
        }
        r.i[0] = acc;
      }
      return;
    }
    case Op::stage_store: {
      // Element offset + j of the stage, where the mask allows and inside the stage (outside: dropped).
      Value& st = stages_[stage_of(in)];
      const DType dt = fn_.stages[stage_of(in)].dtype;
      const std::int64_t off = ix(0, 0), n = fn_.stages[stage_of(in)].size;
      const bool masked = in.args.size() == 3;
      for (std::size_t j = 0; j < size(in.args[1]); ++j) {
        const std::int64_t q = off + static_cast<std::int64_t>(j);
        if ((masked && ix(2, j) == 0) || q < 0 || q >= n) continue;
        if (ir::is_float(dt)) st.f[q] = round_to(dt, fx(1, j));
        else st.i[q] = wrap(dt, ix(1, j));
      }
      return;
    }
    case Op::stage_copy: {
      // Completes at once here; on the GPU it completes before the stage's next access, with the same result.
      Value& st = stages_[stage_of(in)];
      const DType dt = fn_.stages[stage_of(in)].dtype;
      const std::int64_t off = ix(0, 0), n = fn_.stages[stage_of(in)].size;
      const int base = arg(1).base;
      const bool masked = in.args.size() == 3;
      for (std::size_t j = 0; j < size(in.args[1]); ++j) {
        const std::int64_t q = off + static_cast<std::int64_t>(j);
        if (q < 0 || q >= n) continue;
        const bool on = !masked || ix(2, j) != 0;
        if (ir::is_float(dt)) st.f[q] = on ? read_float(in, base, ix(1, j), dt) : 0.0;
        else st.i[q] = on ? read_int(in, base, ix(1, j), dt) : 0;
      }
      return;
    }
    case Op::stage_load: {
      const Value& st = stages_[stage_of(in)];
      const DType dt = fn_.stages[stage_of(in)].dtype;
      const std::int64_t off = ix(0, 0), n = fn_.stages[stage_of(in)].size;
      const bool masked = in.args.size() == 3;
      Value& r = make(in);
      for (std::size_t j = 0; j < size(in.result); ++j) {
        const std::int64_t q = off + static_cast<std::int64_t>(j);
        const bool on = (!masked || ix(1, j) != 0) && q >= 0 && q < n;
        if (ir::is_float(dt)) r.f[j] = on ? st.f[q] : (masked ? fx(2, j) : 0.0);
        else r.i[j] = on ? st.i[q] : (masked ? ix(2, j) : 0);
      }
      return;
    }
    case Op::rand: {
      Value& r = make(in);
      const std::uint64_t seed = static_cast<std::uint64_t>(ix(0, 0));
      for (std::size_t j = 0; j < r.f.size(); ++j) r.f[j] = philox_uniform(seed, ix(1, j));
      return;
    }
    case Op::cast: {
      const DType from = type(in.args[0]).dtype, to = type(in.result).dtype;
      Value& r = make(in);
      const std::size_t n = size(in.result);
      for (std::size_t j = 0; j < n; ++j) {
        if (ir::is_float(to)) r.f[j] = round_to(to, ir::is_float(from) ? fx(0, j) : static_cast<double>(static_cast<float>(ix(0, j))));
        else if (to == DType::i1) r.i[j] = ir::is_float(from) ? fx(0, j) != 0 : ix(0, j) != 0;
        else if (ir::is_float(from)) r.i[j] = float_to_int(to, fx(0, j));
        else r.i[j] = wrap(to, ix(0, j));
      }
      return;
    }
    default: break;
  }
  elementwise(in);
}

}  // namespace tilefuse::interp::detail
