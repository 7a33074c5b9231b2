#include "backend/interp/interp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/ir/float16.hpp"
#include "backend/ir/philox.hpp"

namespace tilefuse::interp {

namespace {

using ir::DType;
using ir::Op;

// One SSA value of one program: floats as the f32 (or rounded f16/bf16) they hold, integers and masks as
// int64, pointers as element offsets into parameter `base`'s buffer.
struct Value {
  std::vector<double> f;
  std::vector<std::int64_t> i;
  int base = -1;
};

// Rounds a float result to the value's dtype, as the generated code does after each op.
double round_to(DType t, double x) {
  const float f = static_cast<float>(x);
  if (t == DType::f16) return round_to_half(f);
  if (t == DType::bf16) return round_to_bf16(f);
  return f;
}

std::int64_t wrap(DType t, std::int64_t x) {
  if (t == DType::i32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(x)));
  if (t == DType::i1) return x != 0;
  return x;
}

// Float to integer as cvt.rzi does: truncate, saturate, NaN to 0.
std::int64_t float_to_int(DType to, double x) {
  if (std::isnan(x)) return 0;
  const double lo = to == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = to == DType::i32 ? 2147483647.0 : 9223372036854775807.0;
  if (x <= lo) return static_cast<std::int64_t>(lo);
  if (x >= hi) return to == DType::i32 ? 2147483647 : std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(std::trunc(x));
}

class Program {
 public:
  Program(const ir::Function& fn, std::span<const HostArg> args) : fn_(fn), args_(args), vals_(fn.values.size()) {}

  void run(std::int64_t px, std::int64_t py, std::int64_t pz, std::int64_t gx, std::int64_t gy, std::int64_t gz) {
    start(px, py, pz, gx, gy, gz);
    run_block(fn_.body);
  }

  /// Sets the program id and grid for a run in steps (run_until_cluster_op).
  void start(std::int64_t px, std::int64_t py, std::int64_t pz, std::int64_t gx, std::int64_t gy, std::int64_t gz) {
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

  /// Runs top-level instructions from `pc` up to the next cluster reduction (left for the caller, which
  /// needs every program of the cluster there) or the end; returns where it stopped.
  std::size_t run_until_cluster_op(std::size_t pc) {
    for (; pc < fn_.body.size() && !ir::is_cluster_reduction(fn_.body[pc].op); ++pc) step(fn_.body[pc]);
    return pc;
  }

  /// The operand of the cluster reduction `in` in this program.
  float cluster_operand(const ir::Instr& in) const { return static_cast<float>(vals_[in.args[0]].f[0]); }
  /// Sets the result of the cluster reduction `in` in this program.
  void set_cluster_result(const ir::Instr& in, float v) { make(in).f[0] = v; }

 private:
  [[noreturn]] void fail(const ir::Instr& in, const std::string& why) const {
    throw InterpreterError("tilefuse interpreter: kernel '" + fn_.name + "', program (" + std::to_string(pid_[0]) +
                           "," + std::to_string(pid_[1]) + "," + std::to_string(pid_[2]) + "), '" +
                           ir::print(fn_, in) + "'" + (in.where.empty() ? "" : " [" + in.where + "]") + ": " + why);
  }

  const ir::ValueType& type(ir::ValueId v) const { return fn_.values[v]; }
  std::size_t size(ir::ValueId v) const { return static_cast<std::size_t>(type(v).numel()); }

  Value& make(const ir::Instr& in) {
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
  double read_float(const ir::Instr& in, int base, std::int64_t off, DType t) const {
    const HostArg& a = check_access(in, base, off, "load");
    const char* p = static_cast<const char*>(a.data) + off * ir::dtype_bytes(t);
    switch (t) {
      case DType::f32: { float x; std::memcpy(&x, p, 4); return x; }
      case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
      case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
      default: return 0;
    }
  }
  std::int64_t read_int(const ir::Instr& in, int base, std::int64_t off, DType t) const {
    const HostArg& a = check_access(in, base, off, "load");
    const char* p = static_cast<const char*>(a.data) + off * ir::dtype_bytes(t);
    if (t == DType::i32) { std::int32_t x; std::memcpy(&x, p, 4); return x; }
    std::int64_t x;
    std::memcpy(&x, p, 8);
    return x;
  }
  void write(const ir::Instr& in, int base, std::int64_t off, DType t, double f, std::int64_t i) const {
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
  const HostArg& check_access(const ir::Instr& in, int base, std::int64_t off, const char* what) const {
    const HostArg& a = args_[base];
    if (off < 0 || static_cast<std::size_t>(off) >= a.count)
      fail(in, std::string(what) + " through argument " + std::to_string(base) + " (" + fn_.params[base].name +
                   ") at element " + std::to_string(off) + ", outside its " + std::to_string(a.count) +
                   " elements (the mask let it through)");
    return a;
  }

  void run_block(const std::vector<ir::Instr>& block) {
    for (const ir::Instr& in : block) step(in);
  }

  // for (iv = lo; iv < hi; iv += step): carried values start as the inits and take the yields.
  void run_loop(const ir::Instr& in) {
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

  void step(const ir::Instr& in) {
    auto& V = vals_;
    if (in.op == Op::loop) return run_loop(in);
    auto arg = [&](std::size_t k) -> const Value& { return V[in.args.at(k)]; };
    // Element j of operand k (scalars broadcast, though tracing already splats them).
    auto fx = [&](std::size_t k, std::size_t j) { const auto& x = arg(k).f; return x.size() == 1 ? x[0] : x[j]; };
    auto ix = [&](std::size_t k, std::size_t j) { const auto& x = arg(k).i; return x.size() == 1 ? x[0] : x[j]; };
    switch (in.op) {
      case Op::param: {
        Value& r = make(in);
        const auto& t = type(in.result);
        const HostArg& a = args_[in.index];
        if (t.pointer) { r.base = static_cast<int>(in.index); r.i[0] = 0; }
        else if (ir::is_float(t.dtype)) r.f[0] = round_to(t.dtype, a.f);
        else r.i[0] = wrap(t.dtype, a.i);
        return;
      }
      case Op::program_id: make(in).i[0] = pid_[in.index]; return;
      case Op::num_programs: make(in).i[0] = grid_[in.index]; return;
      case Op::arange: {
        Value& r = make(in);
        for (std::size_t j = 0; j < r.i.size(); ++j) r.i[j] = static_cast<std::int64_t>(j);
        return;
      }
      case Op::constant: {
        Value& r = make(in);
        const auto& t = type(in.result);
        if (ir::is_float(t.dtype)) r.f[0] = round_to(t.dtype, in.number);
        else r.i[0] = wrap(t.dtype, static_cast<std::int64_t>(in.number));
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
        Value& st = stages_[in.index];
        const DType dt = fn_.stages[in.index].dtype;
        const std::int64_t off = ix(0, 0), n = fn_.stages[in.index].size;
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
        Value& st = stages_[in.index];
        const DType dt = fn_.stages[in.index].dtype;
        const std::int64_t off = ix(0, 0), n = fn_.stages[in.index].size;
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
        const Value& st = stages_[in.index];
        const DType dt = fn_.stages[in.index].dtype;
        const std::int64_t off = ix(0, 0), n = fn_.stages[in.index].size;
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

  void elementwise(const ir::Instr& in) {
    const auto& t = type(in.result);
    const auto& at = type(in.args[0]);
    Value& r = make(in);
    const std::size_t n = size(in.result);
    const bool float_operands = ir::is_float(at.dtype);
    for (std::size_t j = 0; j < n; ++j) {
      auto f = [&](std::size_t k) { const auto& x = vals_[in.args[k]].f; return static_cast<float>(x.size() == 1 ? x[0] : x[j]); };
      auto i = [&](std::size_t k) { const auto& x = vals_[in.args[k]].i; return x.size() == 1 ? x[0] : x[j]; };
      if (float_operands) {
        float x = 0;
        bool is_mask = true;
        switch (in.op) {
          case Op::lt: r.i[j] = f(0) < f(1); break;
          case Op::le: r.i[j] = f(0) <= f(1); break;
          case Op::gt: r.i[j] = f(0) > f(1); break;
          case Op::ge: r.i[j] = f(0) >= f(1); break;
          case Op::eq: r.i[j] = f(0) == f(1); break;
          case Op::ne: r.i[j] = f(0) != f(1); break;
          default: is_mask = false; break;
        }
        if (is_mask) continue;
        switch (in.op) {
          case Op::add: x = f(0) + f(1); break;
          case Op::sub: x = f(0) - f(1); break;
          case Op::mul: x = f(0) * f(1); break;
          case Op::div: x = f(0) / f(1); break;
          case Op::minimum: x = std::fmin(f(0), f(1)); break;
          case Op::maximum: x = std::fmax(f(0), f(1)); break;
          case Op::neg: x = -f(0); break;
          case Op::exp: x = std::exp(f(0)); break;
          case Op::exp2: x = std::exp2(f(0)); break;
          case Op::log: x = std::log(f(0)); break;
          case Op::sqrt: x = std::sqrt(f(0)); break;
          case Op::rsqrt: x = 1.0f / std::sqrt(f(0)); break;
          case Op::erf: x = std::erf(f(0)); break;
          case Op::abs: x = std::fabs(f(0)); break;
          default: fail(in, "unsupported float op");
        }
        r.f[j] = round_to(t.dtype, x);
        continue;
      }
      if (in.op == Op::select) {
        const bool c = i(0) != 0;
        if (ir::is_float(t.dtype)) {
          const auto& a = vals_[in.args[1]].f;
          const auto& b = vals_[in.args[2]].f;
          r.f[j] = c ? (a.size() == 1 ? a[0] : a[j]) : (b.size() == 1 ? b[0] : b[j]);
        } else {
          r.i[j] = c ? i(1) : i(2);
        }
        continue;
      }
      const DType d = at.dtype;
      std::int64_t x = 0;
      switch (in.op) {
        case Op::add: x = wrap(d, static_cast<std::int64_t>(static_cast<std::uint64_t>(i(0)) + static_cast<std::uint64_t>(i(1)))); break;
        case Op::sub: x = wrap(d, static_cast<std::int64_t>(static_cast<std::uint64_t>(i(0)) - static_cast<std::uint64_t>(i(1)))); break;
        case Op::mul: x = wrap(d, static_cast<std::int64_t>(static_cast<std::uint64_t>(i(0)) * static_cast<std::uint64_t>(i(1)))); break;
        case Op::div:
        case Op::rem:
          if (i(1) == 0) fail(in, "integer division by zero at element " + std::to_string(j));
          if (i(1) == -1) x = in.op == Op::div ? wrap(d, static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(i(0)))) : 0;
          else x = in.op == Op::div ? i(0) / i(1) : i(0) % i(1);
          break;
        case Op::minimum: x = std::min(i(0), i(1)); break;
        case Op::maximum: x = std::max(i(0), i(1)); break;
        case Op::neg: x = wrap(d, static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(i(0)))); break;
        case Op::abs: x = wrap(d, i(0) < 0 ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(i(0))) : i(0)); break;
        case Op::lt: x = i(0) < i(1); break;
        case Op::le: x = i(0) <= i(1); break;
        case Op::gt: x = i(0) > i(1); break;
        case Op::ge: x = i(0) >= i(1); break;
        case Op::eq: x = i(0) == i(1); break;
        case Op::ne: x = i(0) != i(1); break;
        case Op::logical_and: x = i(0) && i(1); break;
        case Op::logical_or: x = i(0) || i(1); break;
        case Op::logical_not: x = !i(0); break;
        default: fail(in, "unsupported integer op");
      }
      r.i[j] = x;
    }
  }

  const ir::Function& fn_;
  std::span<const HostArg> args_;
  std::vector<Value> vals_;
  std::vector<Value> stages_;  // this program's stages (Value's f or i by the stage's dtype)
  std::int64_t pid_[3] = {0, 0, 0};
  std::int64_t grid_[3] = {1, 1, 1};
};

}  // namespace

void run(const ir::Function& fn, std::int64_t gx, std::int64_t gy, std::int64_t gz, std::span<const HostArg> args,
         int cluster_size) {
  if (args.size() != fn.params.size())
    throw InterpreterError("tilefuse interpreter: kernel '" + fn.name + "' takes " + std::to_string(fn.params.size()) +
                           " arguments, got " + std::to_string(args.size()));
  const bool clustered = std::any_of(fn.body.begin(), fn.body.end(), [](const ir::Instr& in) { return ir::is_cluster_reduction(in.op); });
  if (!clustered) {
    Program p(fn, args);
    for (std::int64_t z = 0; z < gz; ++z)
      for (std::int64_t y = 0; y < gy; ++y)
        for (std::int64_t x = 0; x < gx; ++x) p.run(x, y, z, gx, gy, gz);
    return;
  }
  cluster_size = std::max(cluster_size, 1);  // a cluster of one program: each reduction gives its operand
  if (gx % cluster_size != 0)
    throw InterpreterError("tilefuse interpreter: kernel '" + fn.name + "': grid x = " + std::to_string(gx) +
                           " is not a multiple of the cluster size " + std::to_string(cluster_size));
  // The programs of one cluster run in lockstep between cluster reductions (which are top-level, so every
  // program stops at the same ones): each reduction combines the operands in rank order, as the GPU does.
  std::vector<Program> cluster;
  for (int k = 0; k < cluster_size; ++k) cluster.emplace_back(fn, args);
  for (std::int64_t z = 0; z < gz; ++z)
    for (std::int64_t y = 0; y < gy; ++y)
      for (std::int64_t x0 = 0; x0 < gx; x0 += cluster_size) {
        for (int k = 0; k < cluster_size; ++k) cluster[k].start(x0 + k, y, z, gx, gy, gz);
        for (std::size_t pc = 0;; ++pc) {
          std::size_t stop = pc;
          for (auto& p : cluster) stop = p.run_until_cluster_op(pc);
          if (stop >= fn.body.size()) break;
          const ir::Instr& in = fn.body[stop];
          float acc = cluster[0].cluster_operand(in);
          for (int k = 1; k < cluster_size; ++k) {
            const float v = cluster[k].cluster_operand(in);
            acc = in.op == ir::Op::cluster_max ? std::fmax(acc, v) : acc + v;
          }
          for (auto& p : cluster) p.set_cluster_result(in, acc);
          pc = stop;
        }
      }
}

}  // namespace tilefuse::interp
