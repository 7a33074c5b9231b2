// Row softmax: the fused one-program-per-row kernel, and the same computation as five separate kernels
// (max, subtract, exp, sum, divide), the unfused baseline that moves four times the bytes.
#pragma once

#include <bit>

#include "kernels/common.hpp"

namespace tilefuse::kernels {

namespace tl = tilefuse::tl;

/// Widest row one softmax program holds in registers (f32 elements).
inline constexpr std::int64_t kSoftmaxMaxCols = 16384;

/// Fused softmax of one row: load (masked tail = -inf), max, exp, sum, divide, store; computed in f32.
template <class T, int BLOCK>
void softmax_program(tl::Ptr<T> in, tl::Ptr<T> out, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto x = tl::cast<tl::f32>(tl::load(in + row * stride + cols, mask, -tl::inf));
  auto z = x - tl::max(x);
  auto num = tl::exp(z);
  tl::store(out + row * stride + cols, tl::cast<T>(num / tl::sum(num)), mask);
}

/// Unfused step 1: m[row] = max of the row.
template <class T, int BLOCK>
void row_max_program(tl::Ptr<T> x, tl::Ptr<T> m, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  tl::store(m + row, tl::max(tl::load(x + row * stride + cols, cols < n_cols, -tl::inf)));
}

/// Unfused step 2: z = x - m[row].
template <class T, int BLOCK>
void subtract_row_program(tl::Ptr<T> x, tl::Ptr<T> m, tl::Ptr<T> z, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::cast<tl::f32>(tl::load(x + row * stride + cols, mask)) - tl::cast<tl::f32>(tl::load(m + row));
  tl::store(z + row * stride + cols, tl::cast<T>(v), mask);
}

/// Unfused step 3: e = exp(z).
template <class T, int BLOCK>
void exp_program(tl::Ptr<T> z, tl::Ptr<T> e, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::exp(tl::cast<tl::f32>(tl::load(z + row * stride + cols, mask)));
  tl::store(e + row * stride + cols, tl::cast<T>(v), mask);
}

/// Unfused step 4: s[row] = sum of the row.
template <class T, int BLOCK>
void row_sum_program(tl::Ptr<T> e, tl::Ptr<T> s, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto v = tl::cast<tl::f32>(tl::load(e + row * stride + cols, cols < n_cols));
  tl::store(s + row, tl::cast<T>(tl::sum(v)));
}

/// Unfused step 5: y = e / s[row].
template <class T, int BLOCK>
void divide_row_program(tl::Ptr<T> e, tl::Ptr<T> s, tl::Ptr<T> y, tl::Scalar<tl::i32> stride, tl::Scalar<tl::i32> n_cols) {
  auto row = tl::program_id(0);
  auto cols = tl::arange<BLOCK>();
  auto mask = cols < n_cols;
  auto v = tl::cast<tl::f32>(tl::load(e + row * stride + cols, mask)) / tl::cast<tl::f32>(tl::load(s + row));
  tl::store(y + row * stride + cols, tl::cast<T>(v), mask);
}

/// The kernel object for a program at a given BLOCK, made (and traced) on first use.
template <auto Fn, int BLOCK>
Kernel<Fn>& row_kernel(const char* name, std::vector<std::string> params) {
  static Kernel<Fn> k(std::string(name) + "_" + std::to_string(BLOCK),
                      KernelOptions{row_warps(BLOCK, row_elements_per_thread()), std::move(params)});
  return k;
}

namespace detail {
inline void check_softmax_cols(const char* kernel, std::int64_t cols) {
  if (cols > kSoftmaxMaxCols)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the one-program row limit of " + std::to_string(kSoftmaxMaxCols) +
                                " elements (rows wider than that need the looped or split-row softmax)");
}
}  // namespace detail

/// The fused softmax kernel for element type T (tl::f32, tl::f16, tl::bf16) and row tile BLOCK.
template <class T, int BLOCK>
Kernel<&softmax_program<T, BLOCK>>& softmax_kernel() {
  return row_kernel<&softmax_program<T, BLOCK>, BLOCK>("softmax", {"in", "out", "stride", "n_cols"});
}

/// Unfused step 1 as a kernel (same warps per row as the fused kernel).
template <class T, int BLOCK>
auto& row_max_kernel() {
  return row_kernel<&row_max_program<T, BLOCK>, BLOCK>("row_max", {"x", "m", "stride", "n_cols"});
}
/// Unfused step 2 as a kernel.
template <class T, int BLOCK>
auto& subtract_row_kernel() {
  return row_kernel<&subtract_row_program<T, BLOCK>, BLOCK>("subtract_row", {"x", "m", "z", "stride", "n_cols"});
}
/// Unfused step 3 as a kernel.
template <class T, int BLOCK>
auto& exp_kernel() {
  return row_kernel<&exp_program<T, BLOCK>, BLOCK>("exp", {"z", "e", "stride", "n_cols"});
}
/// Unfused step 4 as a kernel.
template <class T, int BLOCK>
auto& row_sum_kernel() {
  return row_kernel<&row_sum_program<T, BLOCK>, BLOCK>("row_sum", {"e", "s", "stride", "n_cols"});
}
/// Unfused step 5 as a kernel.
template <class T, int BLOCK>
auto& divide_row_kernel() {
  return row_kernel<&divide_row_program<T, BLOCK>, BLOCK>("divide_row", {"e", "s", "y", "stride", "n_cols"});
}

/// out = softmax(in) over each of `rows` contiguous rows of `cols` elements, one program per row.
/// Buf is DeviceBuffer<H> (GPU or interpreter) or std::span<H> / std::vector<H> (interpreter), with
/// H = float, tilefuse::half or tilefuse::bfloat16. In place (in and out the same buffer) is allowed.
template <class Buf>
void softmax(Buf& in, Buf& out, std::int64_t rows, std::int64_t cols, const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax: elements must be float, tilefuse::half or tilefuse::bfloat16.");
  check_matrix("softmax", "in", in, rows, cols);
  check_matrix("softmax", "out", out, rows, cols);
  detail::check_softmax_cols("softmax", cols);
  with_block<kSoftmaxMaxCols>(cols, [&]<int BLOCK>() {
    softmax_kernel<T, BLOCK>().launch(LaunchConfig({rows}, opt.backend, opt.stream), in, out, cols, cols);
  });
}

/// The five unfused kernels' scratch: m and s hold one value per row, z and e a whole matrix each.
template <class Buf>
struct UnfusedScratch {
  Buf m, z, e, s;
};

/// softmax as five kernels (max, subtract, exp, sum, divide), each a round trip through memory.
template <class Buf>
void softmax_unfused(Buf& in, Buf& out, UnfusedScratch<Buf>& scratch, std::int64_t rows, std::int64_t cols,
                     const RowOptions& opt = {}) {
  using T = tl::dtype_of_host_t<element_of_t<Buf>>;
  static_assert(tl::is_float_tag<T>, "tilefuse softmax_unfused: elements must be float, half or bfloat16.");
  check_matrix("softmax_unfused", "in", in, rows, cols);
  check_matrix("softmax_unfused", "out", out, rows, cols);
  check_matrix("softmax_unfused", "scratch.z", scratch.z, rows, cols);
  check_matrix("softmax_unfused", "scratch.e", scratch.e, rows, cols);
  check_vector("softmax_unfused", "scratch.m", scratch.m, rows);
  check_vector("softmax_unfused", "scratch.s", scratch.s, rows);
  detail::check_softmax_cols("softmax_unfused", cols);
  const LaunchConfig cfg({rows}, opt.backend, opt.stream);
  with_block<kSoftmaxMaxCols>(cols, [&]<int BLOCK>() {
    row_max_kernel<T, BLOCK>().launch(cfg, in, scratch.m, cols, cols);
    subtract_row_kernel<T, BLOCK>().launch(cfg, in, scratch.m, scratch.z, cols, cols);
    exp_kernel<T, BLOCK>().launch(cfg, scratch.z, scratch.e, cols, cols);
    row_sum_kernel<T, BLOCK>().launch(cfg, scratch.e, scratch.s, cols, cols);
    divide_row_kernel<T, BLOCK>().launch(cfg, scratch.e, scratch.s, out, cols, cols);
  });
}

}  // namespace tilefuse::kernels
