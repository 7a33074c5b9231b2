// The sample kernels' programs exactly as a launch would run them (kernels::*_programs), for tests that
// read their IR, generated code or compile reports. Traced for the interpreter's target, so no GPU is
// needed.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dsl/tl.hpp"
#include "kernels/layernorm/layernorm.hpp"
#include "kernels/softmax/softmax.hpp"

namespace tilefuse::test {

inline const kernels::RowOptions kInterpreter{Backend::interpreter};

/// kInterpreter with one row per program at every width (narrow rows are otherwise packed several to a
/// program as a 2D tile).
inline kernels::RowOptions one_row_per_program() {
  kernels::RowOptions opt = kInterpreter;
  opt.tuning.pack_rows = false;
  return opt;
}

/// The one-program softmax for rows of `cols` elements of `dtype`, one row per program.
inline const Program& softmax_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::softmax_programs(kernels::RowVariant::one_program, dtype, cols, one_row_per_program()).at(0);
}

/// The one-program LayerNorm for rows of `cols` elements of `dtype`, one row per program.
inline const Program& layernorm_program(ir::DType dtype, std::int64_t cols) {
  return *kernels::layernorm_programs(kernels::RowVariant::one_program, dtype, cols, one_row_per_program()).at(0);
}

/// Whether LayerNorm `variant` (automatic: layernorm_auto's choice for `rows` rows of `cols` elements of
/// `element_bytes` on `backend`) reads each row twice: the looped and split kernels, whose one-pass
/// shifted variance allows 1e-4 on rstd where the two-pass kernels give 1e-5.
inline bool layernorm_reads_twice(kernels::RowVariant variant, std::int64_t rows, std::int64_t cols, int element_bytes, Backend backend) {
  if (variant == kernels::RowVariant::automatic) variant = kernels::layernorm_choice(rows, cols, element_bytes, {backend});
  return kernels::find_variant(kernels::layernorm_variants(), variant, "layernorm").reads == 2;
}

/// Each program's sum and max of its 32 elements of `in`, combined over its cluster or resident group,
/// written to out[2 pid] and out[2 pid + 1] (the cluster and resident-group tests).
inline void group_total_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out) {
  auto pid = tl::program_id(0);
  auto x = tl::load(in + pid * 32 + tl::arange<32>());
  auto total = tl::cluster_sum(tl::sum(x));
  auto top = tl::cluster_max(tl::max(x));
  tl::store(out + pid * 2, total);
  tl::store(out + pid * 2 + 1, top);
}

/// Rows of `size` x 32 elements of `in`, one a cluster of `size` programs at a time: cluster c takes rows
/// c, c + G, ... (G clusters), each program its 32 elements of the row; their sum and max over the
/// cluster, cluster reductions inside a loop, go to out[2 i] and out[2 i + 1] for each element block i.
inline void cluster_rows_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> rows, tl::Scalar<tl::i32> size) {
  auto pid = tl::program_id(0);
  auto rank = pid % size;
  tl::for_range(pid / size, rows, tl::num_programs(0) / size, [&](tl::Scalar<tl::i32> row) {
    auto block = row * size + rank;
    auto x = tl::load(in + block * 32 + tl::arange<32>());
    tl::store(out + block * 2, tl::cluster_sum(tl::sum(x)));
    tl::store(out + block * 2 + 1, tl::cluster_max(tl::max(x)));
  });
}

/// An input of cluster_rows_program: `rows` rows over clusters (or groups) of `size`, normal values drawn
/// from a generator seeded with `size`.
inline std::vector<float> cluster_rows_input(int rows, int size) {
  std::vector<float> in(static_cast<std::size_t>(rows) * size * 32);
  std::mt19937 gen(size);
  std::normal_distribution<float> dist;
  for (float& x : in) x = dist(gen);
  return in;
}

/// What cluster_rows_program writes for `rows` rows over clusters of `size`, in float64.
inline std::vector<double> cluster_rows_expected(const std::vector<float>& in, int rows, int size) {
  std::vector<double> out(static_cast<std::size_t>(rows) * size * 2);
  for (int r = 0; r < rows; ++r) {
    double sum = 0, top = -INFINITY;
    for (int i = 0; i < size * 32; ++i) {
      sum += in[static_cast<std::size_t>(r) * size * 32 + i];
      top = std::max<double>(top, in[static_cast<std::size_t>(r) * size * 32 + i]);
    }
    for (int k = 0; k < size; ++k) out[(r * size + k) * 2] = sum, out[(r * size + k) * 2 + 1] = top;
  }
  return out;
}

/// Blocks of 256 elements of `in` (n of them) doubled into `out` through two stages in turn, program p
/// taking blocks p, p + G, ... (G programs) two at a time: the next block's copy is issued into one stage
/// while the other is read, so a wait for one stage leaves the other's copy in flight (cp.async groups).
inline void double_buffer_program(tl::Ptr<tl::f32> in, tl::Ptr<tl::f32> out, tl::Scalar<tl::i32> n) {
  tl::Stage<tl::f32, 256> a, b;
  auto idx = tl::arange<256>();
  auto g = tl::num_programs(0);
  auto block_mask = [&](tl::Scalar<tl::i32> block) { return idx < tl::where(block < n, tl::scalar<tl::i32>(256), tl::scalar<tl::i32>(0)); };
  a.copy(0, in + tl::program_id(0) * 256 + idx, block_mask(tl::program_id(0)));
  tl::for_range(tl::program_id(0), n, g * 2, [&](tl::Scalar<tl::i32> block) {
    auto next = block + g;
    b.copy(0, in + next * 256 + idx, block_mask(next));
    tl::store(out + block * 256 + idx, a.load<256>(0) * 2.0);
    a.copy(0, in + (next + g) * 256 + idx, block_mask(next + g));
    tl::store(out + next * 256 + idx, b.load<256>(0) * 2.0, block_mask(next));
  });
}

/// KernelOptions of group_total_program over resident groups: one warp per program.
inline KernelOptions resident_group_options() {
  KernelOptions o{1, {"in", "out"}};
  o.resident_groups = true;
  return o;
}

}  // namespace tilefuse::test
