// Test kernels that exercise every DSL op, with float64 references, shared by the interpreter tests
// (no device) and the GPU tests (GPU vs interpreter vs float64).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dsl/tl.hpp"
#include "kernels/reference.hpp"

namespace tilefuse::testkit {

namespace tl = tilefuse::tl;

/// One float op: its name and its float64 meaning (x an input element, a = |x| + 0.5).
struct FloatOp {
  const char* name;
  std::function<double(double x)> ref;
};

/// The float ops float_ops_program writes, in order: out[k * n + i] = op_k(x[i]).
inline const std::vector<FloatOp>& float_ops() {
  static const std::vector<FloatOp> ops = {
      {"exp", [](double x) { return std::exp(x); }},
      {"exp2", [](double x) { return std::exp2(x); }},
      {"log(a)", [](double x) { return std::log(std::abs(x) + 0.5); }},
      {"sqrt(a)", [](double x) { return std::sqrt(std::abs(x) + 0.5); }},
      {"rsqrt(a)", [](double x) { return 1.0 / std::sqrt(std::abs(x) + 0.5); }},
      {"abs", [](double x) { return std::abs(x); }},
      {"neg", [](double x) { return -x; }},
      {"x*x", [](double x) { return x * x; }},
      {"x+x", [](double x) { return x + x; }},
      {"x-1", [](double x) { return x - 1; }},
      {"x/a", [](double x) { return x / (std::abs(x) + 0.5); }},
      {"minimum(x,0.25)", [](double x) { return std::min(x, 0.25); }},
      {"maximum(x,0.25)", [](double x) { return std::max(x, 0.25); }},
      {"where(x>0,x,0)", [](double x) { return x > 0 ? x : 0.0; }},
      {"where(x<=-1|x>=1,2,x)", [](double x) { return (x <= -1 || x >= 1) ? 2.0 : x; }},
      {"cast(i32(x*10))", [](double x) { return std::trunc(x * 10); }},
      {"x==x&!(x!=x)", [](double) { return 1.0; }},
      {"1-x", [](double x) { return 1 - x; }},
      {"erf", [](double x) { return std::erf(x); }},
      {"gelu", [](double x) { return reference::gelu(x); }},
  };
  return ops;
}

/// Applies every float op to x[0..n) (n <= BLOCK) and writes the results one row of n per op.
template <class T, int BLOCK>
void float_ops_program(tl::Ptr<T> x, tl::Ptr<T> out, tl::Scalar<tl::i32> n) {
  auto i = tl::arange<BLOCK>();
  auto mask = i < n;
  auto v = tl::load(x + i, mask, 1.0);
  auto a = tl::abs(v) + 0.5;
  int k = 0;
  auto put = [&](auto value) { tl::store(out + (k++) * n + i, value, mask); };
  put(tl::exp(v));
  put(tl::exp2(v));
  put(tl::log(a));
  put(tl::sqrt(a));
  put(tl::rsqrt(a));
  put(tl::abs(v));
  put(-v);
  put(v * v);
  put(v + v);
  put(v - 1);
  put(v / a);
  put(tl::minimum(v, 0.25));
  put(tl::maximum(v, 0.25));
  put(tl::where(v > 0, v, 0.0));
  put(tl::where((v <= -1.0) | (v >= 1.0), 2.0, v));
  put(tl::cast<T>(tl::cast<tl::i32>(v * 10.0)));
  put(tl::cast<T>(tl::cast<tl::i32>((v == v) & !(v != v))));
  put(1.0 - v);
  put(tl::erf(v));
  put(tl::gelu(v));
}

/// The integer ops int_ops_program writes, with their int64 meanings (results wrap to 32 bits).
struct IntOp {
  const char* name;
  std::function<std::int64_t(std::int64_t a, std::int64_t b)> ref;
};

/// The integer ops, in the order int_ops_program writes them.
inline const std::vector<IntOp>& int_ops() {
  static const std::vector<IntOp> ops = {
      {"a+b", [](std::int64_t a, std::int64_t b) { return a + b; }},
      {"a-b", [](std::int64_t a, std::int64_t b) { return a - b; }},
      {"a*b", [](std::int64_t a, std::int64_t b) { return a * b; }},
      {"a/b", [](std::int64_t a, std::int64_t b) { return a / b; }},
      {"a%b", [](std::int64_t a, std::int64_t b) { return a % b; }},
      {"minimum", [](std::int64_t a, std::int64_t b) { return std::min(a, b); }},
      {"maximum", [](std::int64_t a, std::int64_t b) { return std::max(a, b); }},
      {"abs(a)", [](std::int64_t a, std::int64_t) { return a < 0 ? -a : a; }},
      {"-a", [](std::int64_t a, std::int64_t) { return -a; }},
      {"a<b", [](std::int64_t a, std::int64_t b) { return std::int64_t{a < b}; }},
      {"sum(a) (row)", [](std::int64_t, std::int64_t) { return 0; }},  // checked separately
      {"max(a) (row)", [](std::int64_t, std::int64_t) { return 0; }},
      {"min(b) (row)", [](std::int64_t, std::int64_t) { return 0; }},
      {"program_id + num_programs (element p)", [](std::int64_t, std::int64_t) { return 0; }},
      // Chains of integer max and min over negations: ptxas 12.8-13.x fused these into VIMNMX3 on sm_90
      // and dropped negations (the prelude's tf_imax says more).
      {"max(-a, -b, -(a-b))", [](std::int64_t a, std::int64_t b) { return std::max({-a, -b, -(a - b)}); }},
      {"max(max(a, -a), b)", [](std::int64_t a, std::int64_t b) { return std::max({a, -a, b}); }},
      {"min(-a, -b, -(a+b))", [](std::int64_t a, std::int64_t b) { return std::min({-a, -b, -(a + b)}); }},
      {"max(-a, b, a+b)", [](std::int64_t a, std::int64_t b) { return std::max({-a, b, a + b}); }},
      {"max(where(a > -b, a, -b), 0 - a)", [](std::int64_t a, std::int64_t b) { return std::max({a, -b, -a}); }},
  };
  return ops;
}

/// Integer ops on a[i], b[i] (b never 0), one row of n per op (rows 10 to 13 hold broadcast scalars);
/// wide[i] = i64(a[i]) * b[i].
template <int BLOCK>
void int_ops_program(tl::Ptr<tl::i32> a, tl::Ptr<tl::i32> b, tl::Ptr<tl::i32> out, tl::Ptr<tl::i64> wide,
                     tl::Scalar<tl::i32> n) {
  auto i = tl::arange<BLOCK>();
  auto mask = i < n;
  auto x = tl::load(a + i, mask);
  auto y = tl::load(b + i, mask, 1);
  int k = 0;
  auto put = [&](auto value) { tl::store(out + (k++) * n + i, value, mask); };
  put(x + y);
  put(x - y);
  put(x * y);
  put(x / y);
  put(x % y);
  put(tl::minimum(x, y));
  put(tl::maximum(x, y));
  put(tl::abs(x));
  put(-x);
  put(tl::cast<tl::i32>(x < y));
  tl::store(wide + i, tl::cast<tl::i64>(x) * tl::cast<tl::i64>(y), mask);
  put(tl::sum(tl::where(mask, x, 0)));
  put(tl::max(tl::where(mask, x, -2147483647 - 1)));
  put(tl::min(tl::where(mask, y, 2147483647)));
  // One element per program, so programs do not race for it.
  tl::store(out + k++ * n + tl::program_id(0), tl::program_id(0) + tl::num_programs(0));
  put(tl::maximum(tl::maximum(-x, -y), -(x - y)));
  put(tl::maximum(tl::maximum(x, -x), y));
  put(tl::minimum(tl::minimum(-x, -y), -(x + y)));
  put(tl::maximum(tl::maximum(-x, y), x + y));
  put(tl::maximum(tl::where(x > -y, x, -y), 0 - x));
}

/// Stage semantics in one program: a masked copy of x[0, 256) into a 512-element stage at `at` (the
/// masked tail copies 0), read back as y; then 2x over the same elements and a read of 128 elements at
/// at + 64 under a mask (other -1) as z, which other threads wrote (a barrier). Elements outside the stage
/// are dropped on write and read as `other` (0 where none is given).
inline void stage_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> y, tl::Ptr<tl::f32> z, tl::Scalar<tl::i32> n,
                          tl::Scalar<tl::i32> at) {
  auto c256 = tl::arange<256>();
  auto c128 = tl::arange<128>();
  tl::Stage<tl::f32, 512> stage;
  stage.copy(at, x + c256, c256 < n);
  tl::store(y + c256, stage.load<256>(at));
  stage.store(at, tl::load(x + c256, c256 < n) * 2.0);
  tl::store(z + c128, stage.load<128>(at + 64, c128 < 100, -1.0));
}

/// A stage copy in a program with 2D tiles (code generation then takes its tile emitter): a 512-element
/// stage set to -1, x[0, 256) copied into it at `at` under the mask i < n (0 past n, elements outside the
/// stage dropped), the stage gathered back as y; and x[0, 256) copied to w as a [2, 128] tile.
inline void stage_copy_2d_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::f32> y, tl::Ptr<tl::f32> w, tl::Scalar<tl::i32> n,
                                  tl::Scalar<tl::i32> at) {
  tl::Stage<tl::f32, 512> stage;
  auto all = tl::arange<512>();
  stage.scatter(all, -1.0f);
  auto c256 = tl::arange<256>();
  stage.copy(at, x + c256, c256 < n);
  tl::store(y + all, stage.gather(all));
  auto at2 = tl::arange<2>()(tl::all, tl::none) * 128 + tl::arange<128>()(tl::none, tl::all);
  tl::store(w + at2, tl::load(x + at2));
}

/// The float64 meaning of stage_copy_2d_program's y.
inline std::vector<double> stage_copy_2d_reference(const std::vector<float>& x, int n, int at) {
  std::vector<double> y(512, -1.0);
  for (int i = 0; i < 256; ++i)
    if (at + i >= 0 && at + i < 512) y[at + i] = i < n ? x[i] : 0.0;
  return y;
}

/// The float64 meaning of stage_program: y and z for inputs x, n and at.
inline void stage_reference(const std::vector<float>& x, int n, int at, std::vector<double>& y, std::vector<double>& z) {
  auto in_stage = [&](int q) { return q >= 0 && q < 512; };
  y.assign(256, 0.0);
  z.assign(128, -1.0);
  for (int i = 0; i < 256; ++i) y[i] = in_stage(at + i) && i < n ? x[i] : 0.0;
  for (int j = 0; j < 100; ++j)
    if (in_stage(at + 64 + j)) z[j] = 64 + j < n ? 2.0 * x[64 + j] : 0.0;
}

/// Every kind of global access with a cache hint: per row of n elements (stride n), y = 2 x + x[0] + h
/// with x read streaming (masked, in runs), x[0] as an L2-only scalar and y written L2-only; halves h
/// read and written whole under the evict-last policy; the row's sum written as a streaming scalar.
template <int BLOCK>
void hinted_copy_program(tl::Ptr<tl::f32> x, tl::Ptr<tl::bf16> h, tl::Ptr<tl::f32> y, tl::Ptr<tl::bf16> h_out,
                         tl::Ptr<tl::f32> sums, tl::Scalar<tl::i32> n) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n;
  auto xv = tl::load(x + row * n + cols, mask, tl::Cache::streaming);
  auto first = tl::load(x + row * n, tl::Cache::l2_only);
  auto hv = tl::load(h + row * BLOCK + cols, tl::Cache::evict_last);
  tl::store(y + row * n + cols, xv * 2.0 + first + tl::cast<tl::f32>(hv), mask, tl::Cache::l2_only);
  tl::store(h_out + row * BLOCK + cols, hv, tl::Cache::evict_last);
  tl::store(sums + row, tl::sum(xv), tl::Cache::streaming);
}

/// float64 reference of hinted_copy_program (x rows x n, h rows x block, n <= block): y and sums.
inline void hinted_copy_reference(const std::vector<float>& x, const std::vector<bfloat16>& h, int rows, int n, int block,
                                  std::vector<double>& y, std::vector<double>& sums) {
  y.assign(x.size(), 0.0);
  sums.assign(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) {
      y[r * n + i] = 2.0 * x[r * n + i] + x[r * n] + static_cast<float>(h[r * block + i]);
      sums[r] += x[r * n + i];
    }
}

/// Stage gathers and scatters, 1D: x (256 elements) scattered to the stage reversed and shifted by `at`
/// (offsets outside the stage dropped), then y[i] = element i gathered back (masked to i < n, 2 elsewhere).
inline void gather_1d_program(tl::Ptr<const tl::f32> x, tl::Ptr<tl::f32> y, tl::Scalar<tl::i32> n, tl::Scalar<tl::i32> at) {
  tl::Stage<tl::f32, 256> stage;
  auto i = tl::arange<256>();
  stage.scatter(i, 0.0f);
  stage.scatter((255 - i) + at, tl::load(x + i));
  tl::store(y + i, stage.gather(i, i < n, 2.0f));
}

/// 2D: x (R * C elements) scattered to the stage as one run 16 bytes at a time, gathered as the [R, C]
/// tile y[r][c] = stage[c * R + r + at] (0 outside the stage); then z[r][c] = stage[r * C + c] after
/// y + 1 was scattered back to [r * C + c] where r + c is even.
template <int R, int C>
void gather_2d_program(tl::Ptr<const tl::f32> x, tl::Ptr<tl::f32> y, tl::Ptr<tl::f32> z, tl::Scalar<tl::i32> at) {
  tl::Stage<tl::f32, R * C> stage;
  auto flat = tl::arange<R * C>();
  stage.scatter(flat, tl::load(x + flat));
  auto r = tl::arange<R>()(tl::all, tl::none);
  auto c = tl::arange<C>()(tl::none, tl::all);
  auto t = stage.gather(c * R + r + at);
  tl::store(y + r * C + c, t);
  stage.scatter(r * C + c, t + 1.0f, (r + c) % 2 == 0);
  tl::store(z + r * C + c, stage.gather(r * C + c));
}

/// The float64 meaning of gather_1d_program and gather_2d_program.
inline std::vector<double> gather_1d_reference(const std::vector<float>& x, int n, int at) {
  std::vector<double> st(256, 0.0), y(256);
  for (int i = 0; i < 256; ++i)
    if (255 - i + at >= 0 && 255 - i + at < 256) st[255 - i + at] = x[i];
  for (int i = 0; i < 256; ++i) y[i] = i < n ? st[i] : 2.0;
  return y;
}
inline void gather_2d_reference(const std::vector<float>& x, int R, int C, int at, std::vector<double>& y, std::vector<double>& z) {
  const int N = R * C;
  y.assign(N, 0.0);
  z.assign(x.begin(), x.end());
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int q = c * R + r + at;
      y[r * C + c] = q >= 0 && q < N ? x[q] : 0.0;
    }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      if ((r + c) % 2 == 0) z[r * C + c] = static_cast<float>(y[r * C + c] + 1.0);
}

}  // namespace tilefuse::testkit
