// Each CASE_* is a user mistake that must not compile; the test checks the static_assert sentence.
// With no CASE_* defined the file compiles: that is the control.
#include <span>
#include <vector>

#include "dsl/tl.hpp"

namespace tl = tilefuse::tl;

void program(tl::Ptr<tl::f32> x, tl::Ptr<tl::i32> idx, tl::Scalar<tl::i32> n) {
  auto cols = tl::arange<128>();
  auto v = tl::load(x + cols, cols < n, 0.0f);
#ifdef CASE_SHAPE_MISMATCH
  auto other = tl::arange<256>();
  auto bad = cols + other;
#endif
#ifdef CASE_STORE_WRONG_DTYPE
  tl::store(idx + cols, v);
#endif
#ifdef CASE_ARANGE_NOT_POW2
  auto bad = tl::arange<100>();
#endif
#ifdef CASE_REDUCE_SCALAR
  auto bad = tl::sum(tl::sum(v));
#endif
#ifdef CASE_MIXED_FLOAT_DTYPES
  auto bad = v + tl::cast<tl::f16>(v);
#endif
#ifdef CASE_EXP_OF_INT
  auto bad = tl::exp(cols);
#endif
#ifdef CASE_FLOAT_LITERAL_INT_TILE
  auto bad = cols * 0.5;
#endif
#ifdef CASE_WHERE_NOT_MASK
  auto bad = tl::where(v, v, 0.0f);
#endif
#ifdef CASE_POINTER_TIMES
  auto bad = (x + cols) * 2;
#endif
#ifdef CASE_STAGE_WRONG_DTYPE
  tl::Stage<tl::f16, 256> stage;
  stage.store(0, v);
#endif
#ifdef CASE_STAGE_TOO_SMALL
  tl::Stage<tl::f32, 64> stage;
  auto bad = stage.load<128>(0);
#endif
#ifdef CASE_SCATTER_SHAPE
  tl::Stage<tl::f32, 256> stage;
  stage.scatter(tl::arange<64>(), v);
#endif
#ifdef CASE_LOOP_CARRIES_POINTER
  auto bad = tl::for_range(0, n, 1, std::tuple{x}, [&](auto, auto p) { return std::tuple{p + 1}; });
#endif
#ifdef CASE_LOOP_BODY_WRONG_RETURN
  auto bad = tl::for_range(0, n, 1, std::tuple{v}, [&](auto, auto acc) { return std::tuple{tl::cast<tl::f16>(acc)}; });
#endif
#ifdef CASE_DOT_INNER_MISMATCH
  auto bad = tl::dot(tl::zeros<tl::bf16, 16, 32>(), tl::zeros<tl::bf16, 16, 16>());
#endif
#ifdef CASE_DOT_F32
  auto bad = tl::dot(tl::zeros<tl::f32, 16, 16>(), tl::zeros<tl::f32, 16, 16>());
#endif
#ifdef CASE_DOT_MIXED
  auto bad = tl::dot(tl::zeros<tl::f16, 16, 16>(), tl::zeros<tl::bf16, 16, 16>());
#endif
#ifdef CASE_DOT_SMALL
  auto bad = tl::dot(tl::zeros<tl::f16, 8, 16>(), tl::zeros<tl::f16, 16, 16>());
#endif
#ifdef CASE_BROADCAST_MISMATCH
  auto bad = tl::zeros<tl::f32, 16, 32>() + tl::zeros<tl::f32, 16, 16>();
#endif
#ifdef CASE_1D_WITH_2D
  auto bad = tl::zeros<tl::f32, 128, 16>() + v;
#endif
#ifdef CASE_2D_NOT_POW2
  auto bad = tl::zeros<tl::f32, 16, 24>();
#endif
#ifdef CASE_REDUCE_2D_NO_AXIS
  auto bad = tl::max(tl::zeros<tl::f32, 16, 16>());
#endif
#ifdef CASE_EXPAND_2D
  auto bad = tl::zeros<tl::f32, 16, 16>()(tl::all, tl::none);
#endif
  auto [total] = tl::for_range(0, n, 1, std::tuple{v}, [&](auto, auto acc) { return std::tuple{acc + 1.0f}; });
  tl::store(x + cols, total * 2.0f, cols < n);
  tl::store(idx + cols, cols, cols < n);
}

#ifdef CASE_BAD_PARAM_TYPE
void bad_params(tl::Ptr<tl::f32> x, tl::Scalar<tl::f16> s) { tl::store(x, tl::cast<tl::f32>(s)); }
tilefuse::Kernel<&bad_params> bad_kernel("bad");
#endif

// A program that only loads through `in` declares it read-only; const memory binds to it.
void copy_program(tl::Ptr<const tl::f32> in, tl::Ptr<tl::f32> out) {
  auto cols = tl::arange<128>();
  auto v = tl::load(in + cols);
#ifdef CASE_STORE_THROUGH_CONST
  tl::store(in + cols, v);
#endif
  tl::store(out + cols, v);
}

void launch() {
  tilefuse::Kernel<&copy_program> copy("copy");
  const std::vector<float> input(128);
  std::vector<float> output(128);
  copy.launch({1}, input, output);
  copy.launch({1}, std::span<const float>(input), output);
#ifdef CASE_CONST_FOR_WRITABLE
  copy.launch({1}, input, input);
#endif
  tilefuse::Kernel<&program> k("program");
  std::vector<float> x(128);
  std::vector<int> idx(128);
#ifdef CASE_LAUNCH_WRONG_TYPE
  k.launch({1}, idx, idx, 128);
#elif defined(CASE_LAUNCH_WRONG_COUNT)
  k.launch({1}, x, idx);
#else
  k.launch({1}, x, idx, 128);
#endif
}
