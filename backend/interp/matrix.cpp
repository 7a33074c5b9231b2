// The interpreter's 2D operations: expand, broadcast and trans move elements between row-major tiles;
// reductions along an axis combine as the 1D reductions do (sums in f32 by a pairwise tree); dot adds
// exact f16/bf16 products to its f32 accumulator 16 at a time, one rounding per step of 16 in k order, as
// the tensor cores' m16n8k16 steps do.
#include "backend/interp/program.hpp"

namespace tilefuse::interp::detail {

namespace {

// Row and column counts of a 2D (or, for 1D, [1, n]) value type.
std::int64_t rows_of(const ir::ValueType& t) { return t.rank == 2 ? t.dims[0] : 1; }
std::int64_t cols_of(const ir::ValueType& t) { return t.rank == 2 ? t.dims[1] : t.dims[0]; }

// One tensor-core step as the hardware is measured to do it (products exact; every term aligned to the
// largest one's exponent and cut toward zero to f32's 24 bits there; the sum cut toward zero to f32),
// rather than the exact sum rounded once: the interpreter's other way of summing (set_reordered_sums).
float truncated_step(float acc, const double* terms, std::int64_t n) {
  double big = std::abs(static_cast<double>(acc)), exact = acc;
  for (std::int64_t k = 0; k < n; ++k) big = std::max(big, std::abs(terms[k])), exact += terms[k];
  if (!std::isfinite(exact) || big == 0.0) return static_cast<float>(exact);
  int e = 0;
  std::frexp(big, &e);
  const double quantum = std::ldexp(1.0, e - 24);
  double sum = std::trunc(static_cast<double>(acc) / quantum) * quantum;
  for (std::int64_t k = 0; k < n; ++k) sum += std::trunc(terms[k] / quantum) * quantum;
  if (std::abs(sum) > std::numeric_limits<float>::max()) return static_cast<float>(sum);  // overflow: infinity
  float f = static_cast<float>(sum);
  if (std::abs(static_cast<double>(f)) > std::abs(sum)) f = std::nextafter(f, 0.0f);
  return f;
}

}  // namespace

void Program::shape(const ir::Instr& in) {
  const ir::ValueType& t = type(in.result);
  const ir::ValueType& x = type(in.args[0]);
  const Value& src = arg(in, 0);  // (SSA: the result is another value, so make() leaves it as it is)
  Value& r = make(in);
  r.base = src.base;
  const std::int64_t R = rows_of(t), C = cols_of(t);
  for (std::int64_t i = 0; i < R; ++i)
    for (std::int64_t j = 0; j < C; ++j) {
      std::int64_t from = 0;
      if (in.op == Op::trans) from = j * cols_of(x) + i;
      else if (in.op == Op::expand) from = i * C + j;  // [n, 1] and [1, n] hold x in order
      else from = (rows_of(x) == 1 ? 0 : i) * cols_of(x) + (cols_of(x) == 1 ? 0 : j);  // broadcast
      const std::size_t to = static_cast<std::size_t>(i * C + j);
      if (!r.f.empty()) r.f[to] = src.f[static_cast<std::size_t>(from)];
      else r.i[to] = src.i[static_cast<std::size_t>(from)];
    }
}

void Program::reduce_along(const ir::Instr& in) {
  const ir::ValueType& t = type(in.result);
  const ir::ValueType& x = type(in.args[0]);
  const int axis = in.as<ir::attr::Axis>().axis;
  const std::int64_t R = x.dims[0], C = x.dims[1];
  const std::int64_t outer = axis == 1 ? R : C, inner = axis == 1 ? C : R;
  Value& r = make(in);
  for (std::int64_t o = 0; o < outer; ++o) {
    auto at = [&](std::int64_t k) { return static_cast<std::size_t>(axis == 1 ? o * C + k : k * C + o); };
    if (ir::is_float(t.dtype)) {
      std::vector<float> xs(static_cast<std::size_t>(inner));
      for (std::int64_t k = 0; k < inner; ++k) xs[static_cast<std::size_t>(k)] = static_cast<float>(fx(in, 0, at(k)));
      float acc;
      if (in.op == Op::sum_along) {
        acc = tree_sum(std::move(xs));
      } else {
        acc = in.op == Op::max_along ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
        for (float v : xs) acc = in.op == Op::max_along ? float_max(acc, v) : float_min(acc, v);
      }
      r.f[static_cast<std::size_t>(o)] = round_to(t.dtype, acc);
    } else {
      std::int64_t acc = in.op == Op::sum_along ? 0
                         : in.op == Op::max_along ? std::numeric_limits<std::int64_t>::min()
                                                  : std::numeric_limits<std::int64_t>::max();
      for (std::int64_t k = 0; k < inner; ++k) {
        const std::int64_t v = ix(in, 0, at(k));
        acc = in.op == Op::sum_along ? wrap(t.dtype, acc + v) : in.op == Op::max_along ? std::max(acc, v) : std::min(acc, v);
      }
      r.i[static_cast<std::size_t>(o)] = acc;
    }
  }
}

void Program::dot(const ir::Instr& in) {
  const ir::ValueType& a = type(in.args[0]);
  const ir::ValueType& b = type(in.args[1]);
  const std::int64_t M = a.dims[0], K = a.dims[1], N = b.dims[1];
  const bool has_acc = in.args.size() == 3;
  Value& r = make(in);
  // As a tensor core does it (mma.sync m16n8k16): each step of 16 along K adds its 16 products, exact
  // (f16 and bf16 products fit a double), to the f32 accumulator with one rounding to f32; the steps
  // go in order of K. So an exact sum beyond f32's range overflows where the GPU's does (found by the
  // fuzzer: products rounded to f32 one by one had made inf - inf = NaN where the GPU gave -inf).
  constexpr std::int64_t kStep = 16;
  const bool one_by_one = reordered_sums();  // (interp.hpp)
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      float acc = has_acc ? static_cast<float>(fx(in, 2, static_cast<std::size_t>(i * N + j))) : 0.0f;
      if (one_by_one) {  // the tensor cores' own way, as measured of them: see truncated_step
        for (std::int64_t k0 = 0; k0 < K; k0 += kStep) {
          double terms[kStep];
          const std::int64_t n = std::min(K, k0 + kStep) - k0;
          for (std::int64_t k = 0; k < n; ++k)
            terms[k] = fx(in, 0, static_cast<std::size_t>(i * K + k0 + k)) * fx(in, 1, static_cast<std::size_t>((k0 + k) * N + j));
          acc = truncated_step(acc, terms, n);
        }
        r.f[static_cast<std::size_t>(i * N + j)] = acc;
        continue;
      }
      for (std::int64_t k0 = 0; k0 < K; k0 += kStep) {
        double step = acc;
        for (std::int64_t k = k0; k < std::min(K, k0 + kStep); ++k)
          step += fx(in, 0, static_cast<std::size_t>(i * K + k)) * fx(in, 1, static_cast<std::size_t>(k * N + j));
        acc = static_cast<float>(step);
      }
      r.f[static_cast<std::size_t>(i * N + j)] = acc;
    }
}

}  // namespace tilefuse::interp::detail
