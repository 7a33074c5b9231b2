// The shape sweep (bench/sweep.cpp): a seeded generator of row-kernel shapes as users bring them, their
// benchmarks, and the summary of the x-copy distribution.
#pragma once

#include <cstdint>
#include <vector>

namespace tilefuse::bench {

/// One generated shape.
struct SweepShape {
  std::int64_t rows = 0, cols = 0;
  const char* dtype = "f32";
};

/// `count` shapes from `seed`: columns log-uniform in [16, 2^21] (even-numbered shapes a multiple of 8,
/// odd-numbered ones odd), rows so that the matrix holds 16 MB to 1 GB (log-uniform), dtypes f32, f16 and
/// bf16 in turn. Deterministic.
std::vector<SweepShape> sweep_shapes(int count, std::uint64_t seed);

/// Registers softmax_auto and layernorm_auto on every shape of sweep_shapes(count, seed), as
/// "sweep/softmax/ROWSxCOLS/DTYPE" and "sweep/layernorm/...".
void register_sweep(int count, std::uint64_t seed);

/// Prints each kernel's x-copy distribution over the sweep's shapes that ran: worst (and where), 5th
/// percentile, median.
void print_sweep_summary();

}  // namespace tilefuse::bench
