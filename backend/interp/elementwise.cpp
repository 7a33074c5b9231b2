// The interpreter's elementwise ops: float arithmetic and math in f32 (rounded to f16/bf16 after each
// op, as the generated code does), integer arithmetic that wraps as the GPU's does, comparisons, masks
// and where.
#include "backend/interp/program.hpp"

#include <algorithm>

namespace tilefuse::interp::detail {

void Program::elementwise(const ir::Instr& in) {
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

}  // namespace tilefuse::interp::detail
