// The CPU interpreter: runs a traced program's IR over host memory, program by program, with the GPU's
// semantics (masks, `other`, f16/bf16 rounding after each op, reductions), checking every access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "backend/ir/ir.hpp"

namespace tilefuse::interp {

/// A kernel argument in host memory or as a scalar; the parameter's IR type says which field applies.
struct HostArg {
  void* data = nullptr;   ///< pointer parameters: host address of element 0
  std::size_t count = 0;  ///< pointer parameters: elements reachable from data
  std::int64_t i = 0;     ///< integer parameters
  double f = 0;           ///< float parameters
};

/// Raised for accesses outside a buffer, integer division by zero and similar program errors; what()
/// names the kernel, the program id, the argument and the element.
class InterpreterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Signed-integer operations (add, sub, mul, neg, abs, division of the most negative value by -1, integer
/// sums) whose exact result did not fit their dtype, in this thread's runs since the last reset: the
/// interpreter wraps them (two's complement), while C++, and so the generated CUDA, leaves signed overflow
/// undefined, so a program with any may differ on the GPU. The differential fuzzer reads it.
std::uint64_t wrapped_operations();
/// Sets this thread's wrapped_operations() to 0.
void reset_wrapped_operations();

/// While on (for this thread's runs), float sums go in another order and rounding that are just as valid:
/// reductions and sums along an axis add one by one from the last element instead of by a pairwise tree;
/// dot's steps of 16 cut their terms and their sum toward zero, as tensor cores are measured to (instead
/// of rounding the exact sum to nearest); cluster sums combine ranks from the last. The GPU is free to
/// order and round its sums its own way (warp shuffles, tensor-core steps), so a program whose results
/// change under this depends on that: the differential fuzzer calls such a program's differences explained.
void set_reordered_sums(bool on);
/// Whether set_reordered_sums is on for this thread.
bool reordered_sums();

/// While `direction` is 1 or -1 (for this thread's runs), a cast from float to integer first moves its input
/// by a relative 2^-16 toward +inf or -inf; 0, the default, casts the value as it is. The GPU's exp, erf and
/// division are within their documented bounds of the interpreter's, and an exact integer made from such a
/// value by a truncating cast may land on the other side of an integer: the differential fuzzer calls a
/// difference explained when every differing element lies between the two nudged runs.
void set_cast_nudge(int direction);
/// This thread's set_cast_nudge direction.
int cast_nudge();

/// While on (for this thread's runs), a float maximum or minimum of +0 and -0 (elementwise, a reduction,
/// along an axis, across a cluster) gives the other zero than by default (-0 for the maximum, +0 for the
/// minimum; by default -0 is below +0). IEEE leaves the choice
/// open and the GPU's max and min make it their own way; a zero's sign then shows in a division by it
/// (+inf against -inf) or a copysign: the differential fuzzer calls a program's differences explained when
/// each differing output also changes in the interpreter with this on.
void set_other_zeros(bool on);
/// Whether set_other_zeros is on for this thread.
bool other_zeros();

/// Runs `fn` for every program of the grid (x fastest), in order; with cluster reductions, the
/// `cluster_size` programs of each cluster along x in lockstep between them.
void run(const ir::Function& fn, std::int64_t grid_x, std::int64_t grid_y, std::int64_t grid_z,
         std::span<const HostArg> args, int cluster_size = 1);

}  // namespace tilefuse::interp
