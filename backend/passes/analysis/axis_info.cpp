// Axis (alignment and range) analysis: for every integer and pointer value, runs of contiguous elements,
// the power of two dividing each run's start, known ranges, mask constancy and loop bounds.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>

#include "backend/ir/ops.hpp"
#include "backend/passes/analysis/analysis.hpp"

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
  if (index.uniform || index.constancy >= kUnknownLarge) return kUnknownLarge;
  const std::int64_t g = std::min({index.contiguity, index.divisibility, bound.divisibility});
  return g < 1 ? 1 : std::bit_floor(static_cast<std::uint64_t>(g));
}

// a + b, saturating at the int64 limits (the unbounded ends of a range).
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  constexpr auto lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  if (b > 0 && a > hi - b) return hi;
  if (b < 0 && a < lo - b) return lo;
  return a + b;
}

// The induction variable of `for iv in [lo, end) by step`: uniform, divisible by what divides lo and the
// step, below `end` by a whole step when end - lo is a multiple of it (else by one), and within
// [lo, the last start before end] when lo and end are bounded.
AxisInfo induction_variable(const AxisInfo& lo, const AxisInfo& end, const AxisInfo& step) {
  AxisInfo iv;
  iv.uniform = true;
  iv.divisibility = std::min(lo.divisibility, step.divisibility);
  const bool constant_step = step.bounded && step.min == step.max && step.min > 0;
  const std::int64_t S = constant_step ? step.min : 0;
  const bool whole_steps = constant_step && std::has_single_bit(static_cast<std::uint64_t>(S)) &&
                           std::min(lo.divisibility, end.divisibility) >= S;
  iv.below = end.source;
  iv.headroom = whole_steps ? S : 1;
  if (lo.bounded && end.bounded && end.max < std::numeric_limits<std::int64_t>::max()) {
    iv.bounded = true;
    iv.min = lo.min;
    iv.max = end.max - 1;
    if (constant_step && lo.min == lo.max) iv.max = lo.min + std::max<std::int64_t>(0, (end.max - 1 - lo.min) / S) * S;
    else if (whole_steps) iv.max = end.max - S;
    // Every value is a multiple of its divisibility: the largest below end is too.
    const std::int64_t d = iv.divisibility;
    if (d > 1 && d < kUnknownLarge && iv.max >= 0) iv.max = iv.max / d * d;
  }
  return iv;
}

// The per-op rules of the analysis; each fills `r`, the info of `in`'s result of type `t`.
class AxisAnalysis {
 public:
  AxisAnalysis(const ir::Function& fn, const std::vector<int>& divisibility)
      : fn_(fn), divisibility_(divisibility), info_(fn.values.size()) {}

  std::vector<AxisInfo> run() {
    ir::walk(fn_.body, [&](const ir::Instr& in) {
      if (ir::op_info(in.op).region) return loop(in);
      if (in.result >= 0) value(in);
    });
    return std::move(info_);
  }

 private:
  const AxisInfo& arg(const ir::Instr& in, std::size_t i) const { return info_[in.args[i]]; }

  void loop(const ir::Instr& in) {
    // The induction variable is uniform; lo + k * step is divisible by what divides both.
    AxisInfo& iv = info_[in.block_args[0]];
    iv = induction_variable(arg(in, 0), arg(in, 1), arg(in, 2));
    iv.source = in.block_args[0];
    // Carried values change between iterations: only scalars are known to be uniform.
    for (std::size_t k = 1; k < in.block_args.size(); ++k) info_[in.block_args[k]].uniform = fn_.values[in.block_args[k]].rank == 0;
    for (ir::ValueId r : in.results) info_[r].uniform = fn_.values[r].rank == 0;
  }

  void value(const ir::Instr& in) {
    const ir::ValueType& t = fn_.values[in.result];
    AxisInfo& r = info_[in.result];
    r.uniform = t.rank == 0;
    if (t.rank == 0) r.source = in.result;
    switch (in.op) {
      case ir::Op::param:
      case ir::Op::arange:
      case ir::Op::constant:
      case ir::Op::splat: leaf(in, t, r); break;
      case ir::Op::lt:
      case ir::Op::le:
      case ir::Op::ge:
      case ir::Op::logical_not:
      case ir::Op::logical_and:
      case ir::Op::logical_or: mask(in, r); break;
      case ir::Op::cast: cast(in, t, r); break;
      case ir::Op::add:
      case ir::Op::sub: add_sub(in, t, r); break;
      case ir::Op::mul: {
        const auto& a = arg(in, 0);
        const auto& b = arg(in, 1);
        r.contiguity = 1;
        r.uniform = a.uniform && b.uniform;
        // Runs survive a multiplication by exactly 1 only, which simplify already removed; so the result's
        // runs are single elements, each divisible by what divides every element of each factor (found
        // with (pid * 32 + arange) * stride, whose elements were taken to be multiples of 32).
        r.divisibility = std::min(kUnknownLarge, every_element(a) * every_element(b));
        if (ir::is_int(t.dtype)) scale_range(a, b, t, r, true) || scale_range(b, a, t, r, true);
        break;
      }
      case ir::Op::div:
        r.uniform = arg(in, 0).uniform && arg(in, 1).uniform;
        if (ir::is_int(t.dtype)) scale_range(arg(in, 0), arg(in, 1), t, r, false);
        break;
      case ir::Op::minimum:
      case ir::Op::maximum: min_max(in, t, r); break;
      case ir::Op::select: choice(in, t, r); break;
      case ir::Op::expand:
      case ir::Op::broadcast: shape(in, r); break;
      case ir::Op::ptr_add: {
        // Byte address of each run: base alignment and offset divisibility times the element size.
        const std::int64_t elem = ir::dtype_bytes(t.dtype);
        const auto& p = arg(in, 0);
        const auto& o = arg(in, 1);
        r.contiguity = t.rank < 2 || row_constant(p) ? o.contiguity : row_constant(o) ? p.contiguity : 1;
        r.uniform = p.uniform && o.uniform;
        r.divisibility = std::min(p.divisibility, std::min(kUnknownLarge, o.divisibility * elem));
        break;
      }
      default:
        break;  // anything else: no runs, no known alignment
    }
    // 2D tiles: a value constant along each row (a column broadcast) stays so through arithmetic.
    if (t.rank == 2 && !ir::is_reduction(in.op) && in.op != ir::Op::load && in.op != ir::Op::expand &&
        in.op != ir::Op::broadcast && !in.args.empty() && !ir::is_axis_reduction(in.op) && in.op != ir::Op::dot &&
        in.op != ir::Op::trans) {
      bool rows_constant = true;
      for (ir::ValueId x : in.args) rows_constant = rows_constant && row_constant(info_[x]);
      if (rows_constant) r.constancy = kUnknownLarge;
    }
    if (r.uniform) r.constancy = kUnknownLarge;
  }

  // select(c, a, b) (tl::where) of integers, each element a's or b's: what divides every element of both, and the range
  // that holds both (a bound of `where(row < n_rows, 512, 0)` stays a multiple of its blocks: the mask
  // `arange < bound` is then constant over them).
  void choice(const ir::Instr& in, const ir::ValueType& t, AxisInfo& r) const {
    if (!ir::is_int(t.dtype) || t.pointer) return;
    const auto& c = arg(in, 0);
    const auto& a = arg(in, 1);
    const auto& b = arg(in, 2);
    r.uniform = c.uniform && a.uniform && b.uniform;
    r.divisibility = std::gcd(every_element(a), every_element(b));
    if (a.bounded && b.bounded) {
      r.bounded = true;
      r.min = std::min(a.min, b.min);
      r.max = std::max(a.max, b.max);
    }
  }

  // What divides every element of a value: its runs' starts' divisor when runs are single elements, else 1
  // (neighbours in a run differ by one).
  static std::int64_t every_element(const AxisInfo& x) { return x.contiguity > 1 ? 1 : x.divisibility; }

  // A value equal along each row of a 2D tile (a scalar, or a column [n, 1] broadcast along its rows).
  static bool row_constant(const AxisInfo& x) { return x.uniform || x.constancy >= kUnknownLarge; }

  // expand and broadcast of 2D tiles, whose runs are along the last dimension (the columns): a row [1, n]
  // keeps the 1D tile's runs; a column [n, 1] is constant along each row, and each of its elements starts
  // a run of its own, so what divides them all is what divides the 1D tile's every element: its runs'
  // start only when those runs are single elements (found by the fuzzer: rows[:, None] * 17 + cols was
  // taken to start every row 16-aligned, as rows' runs start, and loads were vectorized off alignment).
  void shape(const ir::Instr& in, AxisInfo& r) const {
    const ir::ValueType& t = fn_.values[in.result];
    const AxisInfo& x = arg(in, 0);
    r = x;
    r.uniform = false;
    r.source = -1;
    r.always_true = x.always_true;
    const bool column = in.op == ir::Op::expand ? in.as<ir::attr::Axis>().axis == 1 : fn_.values[in.args[0]].dims[1] == 1;
    if (column && !(in.op == ir::Op::broadcast && t.dims[1] == 1)) {
      if (x.contiguity > 1) r.divisibility = 1;
      r.contiguity = 1;
      r.constancy = kUnknownLarge;
    }
  }

  // Parameters (their specialized divisibility), aranges, constants and splats.
  void leaf(const ir::Instr& in, const ir::ValueType& t, AxisInfo& r) const {
    switch (in.op) {
      case ir::Op::param: {
        const int index = in.as<ir::attr::Param>().index;
        r.divisibility = index < static_cast<int>(divisibility_.size()) ? divisibility_[index] : 1;
        if (!t.pointer && ir::is_int(t.dtype) && r.divisibility > 16) {
          r.bounded = true;  // a positive multiple of its divisibility
          r.min = r.divisibility;
          r.max = std::numeric_limits<std::int64_t>::max();
        }
        break;
      }
      case ir::Op::arange:
        r.contiguity = t.dims[0];
        r.divisibility = kUnknownLarge;  // runs start at 0
        r.bounded = true;
        r.min = 0;
        r.max = t.dims[0] - 1;
        break;
      case ir::Op::constant: {
        const double value = in.as<ir::attr::Constant>().value;
        r.divisibility = ir::is_int(t.dtype) ? pow2_divisor(static_cast<std::int64_t>(value)) : 1;
        if (ir::is_int(t.dtype)) {
          r.bounded = true;
          r.min = r.max = static_cast<std::int64_t>(value);
        }
        break;
      }
      default:  // splat
        r = arg(in, 0);
        r.contiguity = 1;
        r.uniform = true;
        r.always_true = false;
        break;
    }
  }

  // Comparisons that index against a bound, and the logic of masks.
  void mask(const ir::Instr& in, AxisInfo& r) const {
    switch (in.op) {
      case ir::Op::lt:
      case ir::Op::le: {
        const auto& a = arg(in, 0);
        const auto& b = arg(in, 1);
        r.uniform = a.uniform && b.uniform;
        r.always_true = a.bounded && b.bounded && (in.op == ir::Op::lt ? a.max < b.min : a.max <= b.min);
        if (a.below >= 0 && a.below == b.source && a.headroom >= (in.op == ir::Op::lt ? 1 : 0)) r.always_true = true;
        if (in.op == ir::Op::lt) r.constancy = index_bound_constancy(a, b);
        break;
      }
      case ir::Op::ge:
        r.uniform = arg(in, 0).uniform && arg(in, 1).uniform;
        r.constancy = index_bound_constancy(arg(in, 0), arg(in, 1));  // the negation of lt
        break;
      case ir::Op::logical_not:
        r.uniform = arg(in, 0).uniform;
        r.constancy = arg(in, 0).constancy;
        break;
      default:  // and, or
        r.uniform = arg(in, 0).uniform && arg(in, 1).uniform;
        r.constancy = std::min(arg(in, 0).constancy, arg(in, 1).constancy);
        break;
    }
  }

  void cast(const ir::Instr& in, const ir::ValueType& t, AxisInfo& r) const {
    const ir::DType from = fn_.values[in.args[0]].dtype;
    if (!ir::is_int(t.dtype) || !ir::is_int(from)) {
      r.uniform = arg(in, 0).uniform;
      return;
    }
    r = arg(in, 0);
    if (ir::dtype_bytes(t.dtype) < ir::dtype_bytes(from)) {  // may wrap
      r.bounded = false;
      r.below = -1;
    }
    if (t.rank == 0) r.source = in.result;
  }

  void add_sub(const ir::Instr& in, const ir::ValueType& t, AxisInfo& r) const {
    // Adding a value that is constant along the runs keeps the runs, their starts divisible by the common
    // power of two; otherwise the runs are single elements, divisible by what divides every element of both.
    const auto& a = arg(in, 0);
    const auto& b = arg(in, 1);
    if (in.op == ir::Op::sub && !row_constant(b)) r.contiguity = 1;
    else if (row_constant(b)) r.contiguity = a.contiguity;
    else if (row_constant(a)) r.contiguity = b.contiguity;
    else r.contiguity = 1;
    r.divisibility = r.contiguity > 1 || (row_constant(a) && row_constant(b)) ? std::min(a.divisibility, b.divisibility)
                                                                              : std::min(every_element(a), every_element(b));
    r.uniform = a.uniform && b.uniform;
    if (ir::is_int(t.dtype) && a.bounded && b.bounded) {
      r.bounded = true;
      r.min = in.op == ir::Op::add ? saturating_add(a.min, b.min) : saturating_add(a.min, -b.max);
      r.max = in.op == ir::Op::add ? saturating_add(a.max, b.max) : saturating_add(a.max, -b.min);
      if (ir::dtype_bytes(t.dtype) == 4 && (r.min < std::numeric_limits<std::int32_t>::min() || r.max > std::numeric_limits<std::int32_t>::max()))
        r.bounded = false;  // may wrap
    }
    if (in.op == ir::Op::add) {
      // (iv + c) stays below the loop's end by the headroom less c's largest element.
      auto below = [&](const AxisInfo& x, const AxisInfo& c) {
        if (x.below < 0 || !c.bounded || c.min < 0) return false;
        r.below = x.below;
        r.headroom = x.headroom - c.max;
        return true;
      };
      if (!below(a, b)) below(b, a);
    }
  }

  // The range of x * c (multiply) or x / c (C++ division, toward zero) for a positive constant c, from
  // x's range clipped to what t holds (an i32 is within the i32 limits even where the analysis knows no
  // bound): both are monotonic in x. A product that may leave t's range is not bounded (it may wrap).
  // Lets `(end / PIECE) * PIECE` keep end's bound, so that loops up to it index a stage without tests.
  static bool scale_range(const AxisInfo& x, const AxisInfo& c, const ir::ValueType& t, AxisInfo& r, bool multiply) {
    if (!c.bounded || c.min != c.max || c.min <= 0) return false;
    const bool narrow = ir::dtype_bytes(t.dtype) == 4;
    const std::int64_t type_min = narrow ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min();
    const std::int64_t type_max = narrow ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
    const std::int64_t lo = x.bounded ? std::max(x.min, type_min) : type_min, hi = x.bounded ? std::min(x.max, type_max) : type_max;
    if (!multiply) {
      r.bounded = true;
      r.min = lo / c.min;
      r.max = hi / c.min;
      return true;
    }
    const __int128 p_lo = static_cast<__int128>(lo) * c.min, p_hi = static_cast<__int128>(hi) * c.min;
    if (p_lo < type_min || p_hi > type_max) return false;
    r.bounded = true;
    r.min = static_cast<std::int64_t>(p_lo);
    r.max = static_cast<std::int64_t>(p_hi);
    return true;
  }

  void min_max(const ir::Instr& in, const ir::ValueType& t, AxisInfo& r) const {
    // The result is one of the operands, element by element: divisible by what divides every element of
    // both, within both ranges' hull.
    const auto& a = arg(in, 0);
    const auto& b = arg(in, 1);
    r.uniform = a.uniform && b.uniform;
    r.divisibility = std::min(every_element(a), every_element(b));
    if (a.bounded && b.bounded && ir::is_int(t.dtype)) {
      r.bounded = true;
      const bool lo = in.op == ir::Op::minimum;
      r.min = lo ? std::min(a.min, b.min) : std::max(a.min, b.min);
      r.max = lo ? std::min(a.max, b.max) : std::max(a.max, b.max);
    } else if (ir::is_int(t.dtype) && (a.bounded || b.bounded)) {
      // One known side still bounds the result on that side: min(n, C) <= C, max(n, C) >= C.
      const AxisInfo& k = a.bounded ? a : b;
      r.bounded = true;
      if (in.op == ir::Op::minimum) {
        r.min = std::numeric_limits<std::int64_t>::min();
        r.max = k.max;
      } else {
        r.min = k.min;
        r.max = std::numeric_limits<std::int64_t>::max();
      }
    }
  }

  const ir::Function& fn_;
  const std::vector<int>& divisibility_;
  std::vector<AxisInfo> info_;
};

}  // namespace

std::vector<AxisInfo> analyze_axis_info(const ir::Function& fn, const std::vector<int>& param_divisibility) {
  return AxisAnalysis(fn, param_divisibility).run();
}

}  // namespace tilefuse::passes
