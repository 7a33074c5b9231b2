#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "backend/passes/passes.hpp"

namespace tilefuse::passes {

namespace {

constexpr std::int64_t kUnknownLarge = std::int64_t{1} << 30;  // divisibility of 0 (every power of two)

std::int64_t pow2_divisor(std::int64_t v) {
  if (v == 0) return kUnknownLarge;
  std::int64_t d = 1;
  while ((v % (d * 2)) == 0 && d < kUnknownLarge) d *= 2;
  return d;
}

// Aligned block length over which `index < bound` cannot change: the index steps by one from a multiple of
// the block and the uniform bound is a multiple of it, so a block lies wholly below or wholly above.
std::int64_t index_bound_constancy(const AxisInfo& index, const AxisInfo& bound) {
  if (!bound.uniform) return 1;
  if (index.uniform) return kUnknownLarge;
  const std::int64_t g = std::min({index.contiguity, index.divisibility, bound.divisibility});
  return g < 1 ? 1 : std::bit_floor(static_cast<std::uint64_t>(g));
}

}  // namespace

std::vector<AxisInfo> analyze_axis_info(const ir::Function& fn, const std::vector<int>& param_divisibility) {
  std::vector<AxisInfo> info(fn.values.size());
  ir::walk(fn.body, [&](const ir::Instr& in) {
    if (in.op == ir::Op::loop) {
      // The induction variable is uniform; lo + k * step is divisible by what divides both.
      AxisInfo& iv = info[in.block_args[0]];
      iv.uniform = true;
      iv.divisibility = std::min(info[in.args[0]].divisibility, info[in.args[2]].divisibility);
      // Carried values change between iterations: only scalars are known to be uniform.
      for (std::size_t k = 1; k < in.block_args.size(); ++k) info[in.block_args[k]].uniform = fn.values[in.block_args[k]].rank == 0;
      for (ir::ValueId r : in.results) info[r].uniform = fn.values[r].rank == 0;
      return;
    }
    if (in.result < 0) return;
    const ir::ValueType& t = fn.values[in.result];
    AxisInfo& r = info[in.result];
    auto arg = [&](std::size_t i) { return info[in.args[i]]; };
    r.uniform = t.rank == 0;
    switch (in.op) {
      case ir::Op::param:
        r.divisibility = in.index < static_cast<std::int64_t>(param_divisibility.size()) ? param_divisibility[in.index] : 1;
        if (!t.pointer && ir::is_int(t.dtype) && r.divisibility > 16) {
          r.bounded = true;  // a positive multiple of its divisibility
          r.min = r.divisibility;
          r.max = std::numeric_limits<std::int64_t>::max();
        }
        break;
      case ir::Op::arange:
        r.contiguity = t.dims[0];
        r.divisibility = kUnknownLarge;  // runs start at 0
        r.bounded = true;
        r.min = 0;
        r.max = t.dims[0] - 1;
        break;
      case ir::Op::constant:
        r.divisibility = ir::is_int(t.dtype) ? pow2_divisor(static_cast<std::int64_t>(in.number)) : 1;
        if (ir::is_int(t.dtype)) {
          r.bounded = true;
          r.min = r.max = static_cast<std::int64_t>(in.number);
        }
        break;
      case ir::Op::splat:
        r = arg(0);
        r.contiguity = 1;
        r.uniform = true;
        r.always_true = false;
        break;
      case ir::Op::lt:
      case ir::Op::le: {
        const auto a = arg(0), b = arg(1);
        r.uniform = a.uniform && b.uniform;
        r.always_true = a.bounded && b.bounded && (in.op == ir::Op::lt ? a.max < b.min : a.max <= b.min);
        if (in.op == ir::Op::lt) r.constancy = index_bound_constancy(a, b);
        break;
      }
      case ir::Op::ge:
        r.uniform = arg(0).uniform && arg(1).uniform;
        r.constancy = index_bound_constancy(arg(0), arg(1));  // the negation of lt
        break;
      case ir::Op::logical_not:
        r.uniform = arg(0).uniform;
        r.constancy = arg(0).constancy;
        break;
      case ir::Op::logical_and:
      case ir::Op::logical_or:
        r.uniform = arg(0).uniform && arg(1).uniform;
        r.constancy = std::min(arg(0).constancy, arg(1).constancy);
        break;
      case ir::Op::cast:
        if (ir::is_int(t.dtype) && ir::is_int(fn.values[in.args[0]].dtype)) {
          r = arg(0);
          if (ir::dtype_bytes(t.dtype) < ir::dtype_bytes(fn.values[in.args[0]].dtype)) r.bounded = false;  // may wrap
        } else {
          r.uniform = arg(0).uniform;
        }
        break;
      case ir::Op::add:
      case ir::Op::sub: {
        // Adding a value that is constant along the runs keeps the runs; alignment is the common power of two.
        const bool a_uniform = arg(0).uniform, b_uniform = arg(1).uniform;
        const auto a = arg(0), b = arg(1);
        if (in.op == ir::Op::sub && !b_uniform) r.contiguity = 1;
        else if (b_uniform) r.contiguity = a.contiguity;
        else if (a_uniform) r.contiguity = b.contiguity;
        else r.contiguity = 1;
        r.divisibility = std::min(a.divisibility, b.divisibility);
        r.uniform = a_uniform && b_uniform;
        break;
      }
      case ir::Op::mul: {
        const auto a = arg(0), b = arg(1);
        r.contiguity = 1;
        r.uniform = a.uniform && b.uniform;
        r.divisibility = std::min(kUnknownLarge, a.divisibility * b.divisibility);
        // Runs survive a multiplication by exactly 1 only, which simplify already removed.
        break;
      }
      case ir::Op::minimum:
      case ir::Op::maximum: {
        // The result is one of the operands: divisible by what divides both, within both ranges' hull.
        const auto a = arg(0), b = arg(1);
        r.uniform = a.uniform && b.uniform;
        r.divisibility = std::min(a.divisibility, b.divisibility);
        if (a.bounded && b.bounded && ir::is_int(t.dtype)) {
          r.bounded = true;
          const bool lo = in.op == ir::Op::minimum;
          r.min = lo ? std::min(a.min, b.min) : std::max(a.min, b.min);
          r.max = lo ? std::min(a.max, b.max) : std::max(a.max, b.max);
        }
        break;
      }
      case ir::Op::ptr_add: {
        // Byte address of each run: base alignment and offset divisibility times the element size.
        const std::int64_t elem = ir::dtype_bytes(t.dtype);
        const auto p = arg(0), o = arg(1);
        r.contiguity = o.contiguity;
        r.uniform = p.uniform && o.uniform;
        r.divisibility = std::min(p.divisibility, std::min(kUnknownLarge, o.divisibility * elem));
        break;
      }
      default:
        break;  // anything else: no runs, no known alignment
    }
    if (r.uniform) r.constancy = kUnknownLarge;
  });
  return info;
}

}  // namespace tilefuse::passes
