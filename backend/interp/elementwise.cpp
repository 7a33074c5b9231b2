// The interpreter's elementwise ops and reductions: float arithmetic and math in f32 (rounded to f16/bf16
// after each op, as the generated code does), integer arithmetic that wraps as the GPU's does,
// comparisons, masks, where, casts (optionally nudged for the fuzzer: set_cast_nudge), Philox draws, and
// tile reductions (pairwise f32 sums).
#include "backend/interp/program.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "backend/numerics/gelu.hpp"
#include "backend/numerics/philox.hpp"

namespace tilefuse::interp {

namespace {
thread_local std::uint64_t wrapped_count = 0;
}  // namespace

std::uint64_t wrapped_operations() { return wrapped_count; }

namespace {
thread_local bool reordered = false;
}  // namespace
void set_reordered_sums(bool on) { reordered = on; }
bool reordered_sums() { return reordered; }
namespace {
thread_local int nudge = 0;
}  // namespace
void set_cast_nudge(int direction) { nudge = direction > 0 ? 1 : direction < 0 ? -1 : 0; }
int cast_nudge() { return nudge; }
namespace {
thread_local bool flipped_zeros = false;
}  // namespace
void set_other_zeros(bool on) { flipped_zeros = on; }
bool other_zeros() { return flipped_zeros; }
void reset_wrapped_operations() { wrapped_count = 0; }

namespace detail {
void add_wrapped_operations(std::uint64_t n) { wrapped_count += n; }
}  // namespace detail

}  // namespace tilefuse::interp

namespace tilefuse::interp::detail {

// The exact result of a signed-integer op narrowed to `d` as two's complement (as the GPU's registers
// hold it), counting the results that did not fit: C++ and so the generated CUDA leave those undefined.
std::int64_t exact_or_wrapped(DType d, __int128 exact) {
  const std::int64_t w = wrap(d, static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<unsigned __int128>(exact))));
  if (static_cast<__int128>(w) != exact) ++wrapped_count;
  return w;
}

// Constants, splats, pointer offsets, random numbers and casts; everything else is arithmetic.
void Program::elementwise(const ir::Instr& in) {
  switch (in.op) {
    case Op::constant: {
    Value& r = make(in);
    const auto& t = type(in.result);
    const double value = in.as<ir::attr::Constant>().value;
    if (ir::is_float(t.dtype)) r.f[0] = round_to(t.dtype, value);
    else r.i[0] = wrap(t.dtype, static_cast<std::int64_t>(value));
      return;
    }
    case Op::splat: {
    const Value& x = arg(in, 0);
    Value& r = make(in);
    r.base = x.base;
    if (!x.f.empty()) std::fill(r.f.begin(), r.f.end(), x.f[0]);
    else std::fill(r.i.begin(), r.i.end(), x.i[0]);
      return;
    }
    case Op::ptr_add: {
    const int base = arg(in, 0).base;
    Value& r = make(in);
    r.base = base;
    for (std::size_t j = 0; j < r.i.size(); ++j) r.i[j] = ix(in, 0, j) + ix(in, 1, j);
      return;
    }
    case Op::rand: {
    Value& r = make(in);
    const std::uint64_t seed = static_cast<std::uint64_t>(ix(in, 0, 0));
    for (std::size_t j = 0; j < r.f.size(); ++j) r.f[j] = philox_uniform(seed, ix(in, 1, j));
      return;
    }
    case Op::cast: {
    const DType from = type(in.args[0]).dtype, to = type(in.result).dtype;
    Value& r = make(in);
    const std::size_t n = size(in.result);
    for (std::size_t j = 0; j < n; ++j) {
      if (ir::is_float(to)) r.f[j] = round_to(to, ir::is_float(from) ? fx(in, 0, j) : static_cast<double>(static_cast<float>(ix(in, 0, j))));
      else if (to == DType::i1) r.i[j] = ir::is_float(from) ? fx(in, 0, j) != 0 : ix(in, 0, j) != 0;
      else if (ir::is_float(from)) {
        const double x = fx(in, 0, j);
        r.i[j] = float_to_int(to, cast_nudge() == 0 ? x : x + cast_nudge() * std::abs(x) * 0x1p-16);
      }
      else r.i[j] = wrap(to, ix(in, 0, j));
    }
      return;
    }
    default: return arithmetic(in);
  }
}

void Program::reduce(const ir::Instr& in) {
  const auto& t = type(in.result);
  const std::size_t n = size(in.args[0]);
  Value& r = make(in);
  if (ir::is_float(t.dtype) && in.op == Op::reduce_sum) {
    std::vector<float> level(n);
    for (std::size_t j = 0; j < n; ++j) level[j] = static_cast<float>(fx(in, 0, j));
    r.f[0] = round_to(t.dtype, tree_sum(std::move(level)));
  } else if (ir::is_float(t.dtype)) {
    float acc = in.op == Op::reduce_max ? -std::numeric_limits<float>::infinity()
                                        : std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < n; ++j) {
      const float x = static_cast<float>(fx(in, 0, j));
      acc = in.op == Op::reduce_max ? float_max(acc, x) : float_min(acc, x);
    }
    r.f[0] = round_to(t.dtype, acc);
  } else {
    std::int64_t acc = in.op == Op::reduce_sum ? 0
                       : in.op == Op::reduce_max ? std::numeric_limits<std::int64_t>::min()
                                                 : std::numeric_limits<std::int64_t>::max();
    for (std::size_t j = 0; j < n; ++j) {
      const std::int64_t x = ix(in, 0, j);
      acc = in.op == Op::reduce_sum ? exact_or_wrapped(t.dtype, static_cast<__int128>(acc) + x)
            : in.op == Op::reduce_max ? std::max(acc, x)
                                      : std::min(acc, x);
    }
    r.i[0] = acc;
  }
}

namespace {

// Element j of operand k of `in` (a scalar operand broadcasts).
template <class V>
auto element(const V& x, std::size_t j) {
  return x.size() == 1 ? x[0] : x[j];
}

// The result of comparison `op` on (a, b), or nothing when `op` is not a comparison.
std::optional<bool> float_compare(Op op, float a, float b) {
  switch (op) {
    case Op::lt: return a < b;
    case Op::le: return a <= b;
    case Op::gt: return a > b;
    case Op::ge: return a >= b;
    case Op::eq: return a == b;
    case Op::ne: return a != b;
    default: return std::nullopt;
  }
}


}  // namespace

void Program::arithmetic(const ir::Instr& in) {
  const auto& t = type(in.result);
  Value& r = make(in);
  const std::size_t n = size(in.result);
  const bool float_operands = ir::is_float(type(in.args[0]).dtype);
  for (std::size_t j = 0; j < n; ++j) {
    if (float_operands) float_element(in, j, r, t.dtype);
    else if (in.op == Op::select && ir::is_float(t.dtype)) r.f[j] = ix(in, 0, j) != 0 ? element(arg(in, 1).f, j) : element(arg(in, 2).f, j);
    else r.i[j] = int_element(in, j);
  }
}

void Program::float_element(const ir::Instr& in, std::size_t j, Value& r, DType result) const {
  auto f = [&](std::size_t k) { return static_cast<float>(fx(in, k, j)); };
  if (in.args.size() == 2)
    if (const std::optional<bool> bit = float_compare(in.op, f(0), f(1))) {
      r.i[j] = *bit;  // a comparison's result is i1, held in r.i (r.f is empty)
      return;
    }
  float x = 0;
  switch (in.op) {
    case Op::add: x = f(0) + f(1); break;
    case Op::sub: x = f(0) - f(1); break;
    case Op::mul: x = f(0) * f(1); break;
    case Op::div: x = f(0) / f(1); break;
    case Op::minimum: x = float_min(f(0), f(1)); break;
    case Op::maximum: x = float_max(f(0), f(1)); break;
    case Op::neg: x = -f(0); break;
    case Op::exp: x = std::exp(f(0)); break;
    case Op::exp2: x = std::exp2(f(0)); break;
    case Op::log: x = std::log(f(0)); break;
    case Op::sqrt: x = std::sqrt(f(0)); break;
    case Op::rsqrt: x = 1.0f / std::sqrt(f(0)); break;
    case Op::erf: x = std::erf(f(0)); break;
    case Op::gelu: x = numerics::gelu(f(0)); break;
    case Op::abs: x = std::fabs(f(0)); break;
    default: fail(in, "unsupported float op");
  }
  r.f[j] = round_to(result, x);
}

std::int64_t Program::int_element(const ir::Instr& in, std::size_t j) const {
  auto i = [&](std::size_t k) { return ix(in, k, j); };
  const DType d = type(in.args[0]).dtype;
  switch (in.op) {
    case Op::select: return i(0) != 0 ? i(1) : i(2);
    case Op::add: return exact_or_wrapped(d, static_cast<__int128>(i(0)) + i(1));
    case Op::sub: return exact_or_wrapped(d, static_cast<__int128>(i(0)) - i(1));
    case Op::mul: return exact_or_wrapped(d, static_cast<__int128>(i(0)) * i(1));
    case Op::div:
    case Op::rem:
      if (i(1) == 0) fail(in, "integer division by zero at element " + std::to_string(j));
      if (i(1) == -1) return in.op == Op::div ? exact_or_wrapped(d, -static_cast<__int128>(i(0))) : 0;
      return in.op == Op::div ? i(0) / i(1) : i(0) % i(1);
    case Op::minimum: return std::min(i(0), i(1));
    case Op::maximum: return std::max(i(0), i(1));
    case Op::neg: return exact_or_wrapped(d, -static_cast<__int128>(i(0)));
    case Op::abs: return exact_or_wrapped(d, i(0) < 0 ? -static_cast<__int128>(i(0)) : static_cast<__int128>(i(0)));
    case Op::lt: return i(0) < i(1);
    case Op::le: return i(0) <= i(1);
    case Op::gt: return i(0) > i(1);
    case Op::ge: return i(0) >= i(1);
    case Op::eq: return i(0) == i(1);
    case Op::ne: return i(0) != i(1);
    case Op::logical_and: return i(0) && i(1);
    case Op::logical_or: return i(0) || i(1);
    case Op::logical_not: return !i(0);
    default: fail(in, "unsupported integer op");
  }
}

}  // namespace tilefuse::interp::detail
