// The differential fuzzer: a seeded generator of well-typed random tile programs (IR built directly, so
// that every op, dtype and shape combination the verifier accepts can come up, not only those a C++ test
// spells), with arguments chosen to hit specialization edges (ragged tails, misaligned pointers, sizes
// divisible and not) and values at the edges of their types (NaN, infinities, denormals, integer
// extremes). Each case runs in the interpreter and, where there is one, on the GPU; the results must
// agree exactly for integers and masks and within the documented bounds for floats (compare()).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/ir/ir.hpp"
#include "backend/runtime/program.hpp"

namespace tilefuse::fuzz {

/// What a generated program is built around. Every family has the 1D or 2D frame (offsets, masks),
/// loads, random operations and stores; each adds its own operations.
enum class Family : std::uint8_t {
  rows,      ///< 1D tiles: elementwise math, comparisons, casts, where, reductions, loops
  stages,    ///< rows plus shared-memory stages: stores, loads, asynchronous copies, reads across threads
  clusters,  ///< rows plus cluster reductions over clusters of 2 or 4 programs (sm_90)
  tiles,     ///< 2D tiles with ragged rows and columns: broadcasting, reductions along an axis, trans,
             ///< dot (with and without an accumulator), and loops of dots over tiles loaded in the loop
};
/// "rows", "stages", "clusters" or "tiles".
const char* family_name(Family f);

/// One argument buffer of a case: `count` elements of `dtype` starting `shift` elements into its
/// allocation (a shift breaks the 16-byte alignment a fresh allocation has).
struct Buffer {
  ir::DType dtype = ir::DType::f32;
  std::size_t count = 0;
  std::size_t shift = 0;
  bool output = false;              ///< the program stores here
  std::vector<std::uint8_t> bytes;  ///< initial contents (outputs: a poison pattern)
};

/// A generated program and one launch of it.
struct Case {
  std::uint64_t seed = 0;
  Family family = Family::rows;
  ir::Function fn;
  KernelOptions options;
  Grid grid;
  std::vector<Buffer> buffers;      ///< one per pointer parameter, in parameter order
  std::vector<Arg> scalars;         ///< the scalar parameters' values, in parameter order
  std::vector<int> param_buffer;    ///< by parameter: its buffer index, or -1 for a scalar
  /// The launch's arguments over memory at `addresses` (one per buffer: the allocation's start).
  std::vector<Arg> arguments(const std::vector<std::uint64_t>& addresses, bool host) const;
};

/// The family a seed's program belongs to: half rows, an eighth stages, an eighth clusters, a quarter tiles.
Family family_of(std::uint64_t seed);
/// The case for `seed` (deterministic: a seed always gives the same program and data), of its family.
Case generate(std::uint64_t seed);
/// The case for `seed` in `family`. The rows family gives the programs the generator has always given
/// for a seed, so that regression seeds found before the other families existed keep their programs.
Case generate(std::uint64_t seed, Family family);

/// The contents of every buffer after a run.
using Memory = std::vector<std::vector<std::uint8_t>>;

/// Runs the case in the interpreter; `wrapped` (if given) receives how many signed-integer results did not
/// fit their dtype (interp::wrapped_operations): undefined in C++ and so on the GPU, where such a program
/// may differ (an explained disagreement).
Memory run_interpreter(const Case& c, Program& p, std::uint64_t* wrapped = nullptr);
/// Runs the case on the GPU (driver must be available).
Memory run_gpu(const Case& c, Program& p);

/// "" when `got` agrees with `want` (the interpreter's) on every output: exactly for integers and masks;
/// for floats, the same class (NaN, +inf, -inf, finite) and within rtol 2^-10 (f16/bf16: 2^-6) of each
/// other or atol scaled by the output's largest finite magnitude (see docs/design.md, "Fuzzing").
/// Otherwise the first disagreement, named.
/// With `differing`, every output is checked and the buffers that disagree are listed there.
std::string compare(const Case& c, const Memory& want, const Memory& got, std::vector<int>* differing = nullptr);

/// How a case's GPU run compares with its interpreter run.
enum class Verdict : std::uint8_t {
  agree,     ///< every output agrees (compare() is empty)
  overflow,  ///< they differ, and the interpreter wrapped a signed-integer result (undefined in the CUDA)
  division,  ///< they differ, and agree once tile division rounds correctly (KernelOptions::precise_division):
             ///< div.full.f32's 2 ulp crossed an integer in a truncating cast, or the like
  ordering,  ///< they differ, and every output that differs also changes in the interpreter when its float
             ///< sums go in another order (interp::set_reordered_sums): a sum whose result depends on its
             ///< order (cancellation, a truncating cast of a sum, a tensor-core step beyond f32's range)
  zeros,     ///< they differ, and every output that differs also changes in the interpreter when a float
             ///< max or min of +0 and -0 gives the other zero (interp::set_other_zeros): the zero's sign
             ///< is IEEE's choice, and showed in a division by it or the like
  casts,     ///< they differ, and every differing element lies between the interpreter's runs with each
             ///< float-to-integer cast's input moved by 2^-16 down and up (interp::set_cast_nudge): an
             ///< exp, erf or division within its bound crossed an integer in a truncating cast
  failed,    ///< they differ, unexplained: a bug
};
/// A verdict and, when they differ, compare()'s first disagreement.
struct Outcome {
  Verdict verdict = Verdict::agree;
  std::string difference;
};
/// Runs the case in the interpreter and on the GPU (with `p`, a Program of the case) and says how they
/// compare; a difference is tried again with precise division, against the interpreter with its float
/// sums reordered, and against the interpreter with its float-to-integer casts nudged, before it is called
/// a failure.
Outcome check_on_gpu(const Case& c, Program& p);
/// The same, given the interpreter's run already made (its memory and wrapped count from run_interpreter).
Outcome check_on_gpu(const Case& c, Program& p, const Memory& want, std::uint64_t wrapped);

/// The case with stores removed one at a time while `still_fails` holds: the smallest program that
/// shows the same disagreement, for a regression test.
Case shrink(const Case& c, const std::function<bool(const Case&)>& still_fails);

}  // namespace tilefuse::fuzz
