// The interpreter's state for one program: its SSA values, its stages, and how each instruction is
// run over them (program.cpp: dispatch, control, geometry; memory.cpp: loads, stores and stages;
// elementwise.cpp: arithmetic, casts, reductions; matrix.cpp: 2D tiles' shapes, axis reductions and dot).
// Internal to backend/interp/.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "backend/interp/interp.hpp"
#include "backend/ir/ops.hpp"
#include "backend/numerics/float16.hpp"

namespace tilefuse::interp::detail {

using ir::DType;
using ir::Op;

// One SSA value of one program: floats as the f32 (or rounded f16/bf16) they hold, integers and masks as
// int64, pointers as element offsets into parameter `base`'s buffer.
struct Value {
  std::vector<double> f;
  std::vector<std::int64_t> i;
  int base = -1;
};

// Rounds a float result to the value's dtype, as the generated code does after each op.
inline double round_to(DType t, double x) {
  const float f = static_cast<float>(x);
  if (t == DType::f16) return round_to_half(f);
  if (t == DType::bf16) return round_to_bf16(f);
  return f;
}

inline std::int64_t wrap(DType t, std::int64_t x) {
  if (t == DType::i32) return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(x)));
  if (t == DType::i1) return x != 0;
  return x;
}

// Float maximum and minimum as fmax and fmin (a NaN operand gives the other one), with -0 below +0: the
// maximum of +0 and -0 is +0 and their minimum -0 (IEEE 754-2019's maximum and minimum); while
// set_other_zeros is on (interp.hpp), the other zero.
inline float float_max(float a, float b) {
  if (a == 0 && b == 0 && std::signbit(a) != std::signbit(b)) return other_zeros() ? -0.0f : 0.0f;
  return std::fmax(a, b);
}
inline float float_min(float a, float b) {
  if (a == 0 && b == 0 && std::signbit(a) != std::signbit(b)) return other_zeros() ? 0.0f : -0.0f;
  return std::fmin(a, b);
}

// Sum of `level` in f32 by a pairwise tree, like the GPU's thread/warp/block tree (the exact order differs:
// tests compare with a tolerance), so the error grows with log n, not n. Shared by the 1D reductions and
// the reductions along an axis.
inline float tree_sum(std::vector<float> level) {
  if (reordered_sums()) {  // one by one from the last (interp.hpp)
    float acc = 0.0f;
    for (auto x = level.rbegin(); x != level.rend(); ++x) acc += *x;
    return acc;
  }
  while (level.size() > 1) {
    std::vector<float> next((level.size() + 1) / 2);
    for (std::size_t j = 0; j < next.size(); ++j) next[j] = 2 * j + 1 < level.size() ? level[2 * j] + level[2 * j + 1] : level[2 * j];
    level.swap(next);
  }
  return level.empty() ? 0.0f : level[0];
}

// Float to integer as cvt.rzi does: truncate, saturate; NaN to 0 for i32 and to the most negative value
// for i64 (what the GPU's 64-bit conversion gives; found by the fuzzer).
inline std::int64_t float_to_int(DType to, double x) {
  if (std::isnan(x)) return to == DType::i32 ? 0 : std::numeric_limits<std::int64_t>::min();
  const double lo = to == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
  const double hi = to == DType::i32 ? 2147483647.0 : 9223372036854775807.0;
  if (x <= lo) return static_cast<std::int64_t>(lo);
  if (x >= hi) return to == DType::i32 ? 2147483647 : std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(std::trunc(x));
}


// Adds n to this thread's wrapped_operations() (the count of a cluster's programs run on threads of their
// own, interp.cpp).
void add_wrapped_operations(std::uint64_t n);

// The signed-integer result `exact` in dtype d, wrapped as two's complement (counted when it did not fit).
std::int64_t exact_or_wrapped(DType d, __int128 exact);

// The stage an access works on.
inline int stage_of(const ir::Instr& in) { return in.as<ir::attr::StageRef>().stage; }

/// One program of the grid, run instruction by instruction with the GPU's semantics.
class Program {
 public:
  Program(const ir::Function& fn, std::span<const HostArg> args) : fn_(fn), args_(args), vals_(fn.values.size()) {}

  /// Runs the whole program as program (px, py, pz) of a grid of (gx, gy, gz).
  void run(std::int64_t px, std::int64_t py, std::int64_t pz, std::int64_t gx, std::int64_t gy, std::int64_t gz) {
    start(px, py, pz, gx, gy, gz);
    run_block(fn_.body);
  }

  /// Sets the program id and grid for a run in steps (run_until_cluster_op).
  void start(std::int64_t px, std::int64_t py, std::int64_t pz, std::int64_t gx, std::int64_t gy, std::int64_t gz);

  /// Runs top-level instructions from `pc` up to the next cluster reduction (left for the caller, which
  /// needs every program of the cluster there) or the end; returns where it stopped.
  std::size_t run_until_cluster_op(std::size_t pc) {
    for (; pc < fn_.body.size() && !ir::is_cluster_reduction(fn_.body[pc].op); ++pc) step(fn_.body[pc]);
    return pc;
  }

  /// The operand of the cluster reduction `in` in this program.
  float cluster_operand(const ir::Instr& in) const { return static_cast<float>(vals_[in.args[0]].f[0]); }
  /// Sets the result of the cluster reduction `in` in this program.
  void set_cluster_result(const ir::Instr& in, float v) { make(in).f[0] = v; }

  /// Runs the whole body, handing each cluster reduction it reaches (at any depth) to `combine`, which
  /// returns its result: for cluster reductions inside loops (interp.cpp runs each program of the cluster
  /// on a thread of its own, taking turns).
  template <class Combine>
  void run_with(Combine&& combine) {
    combine_ = std::forward<Combine>(combine);
    run_block(fn_.body);
    combine_ = nullptr;
  }

 private:
  std::function<float(const ir::Instr&, float)> combine_;  // run_with's, while it runs
  [[noreturn]] void fail(const ir::Instr& in, const std::string& why) const;
  // fail() for two copies of different values, `first` then `second`, into stage element `element`.
  [[noreturn]] void race(const ir::Instr& in, std::int64_t element, const std::string& first, const std::string& second) const;
  const ir::ValueType& type(ir::ValueId v) const { return fn_.values[v]; }
  std::size_t size(ir::ValueId v) const { return static_cast<std::size_t>(type(v).numel()); }
  /// The result value of `in`, sized and zeroed for its type.
  Value& make(const ir::Instr& in);

  double read_float(const ir::Instr& in, int base, std::int64_t off, DType t) const;
  std::int64_t read_int(const ir::Instr& in, int base, std::int64_t off, DType t) const;
  void write(const ir::Instr& in, int base, std::int64_t off, DType t, double f, std::int64_t i) const;
  const HostArg& check_access(const ir::Instr& in, int base, std::int64_t off, const char* what) const;
  bool masked(const ir::Instr& in) const;
  void run_block(const std::vector<ir::Instr>& block);
  void run_loop(const ir::Instr& in);
  void step(const ir::Instr& in);
  void geometry(const ir::Instr& in);
  void load(const ir::Instr& in);
  void store(const ir::Instr& in);
  /// Stage stores and scatters.
  void stage_store(const ir::Instr& in);
  void stage_copy(const ir::Instr& in);
  /// Stage loads and gathers.
  void stage_load(const ir::Instr& in);
  /// The stage element lane j of a stage access names: offset + j, or offsets[j] for a gather or scatter.
  std::int64_t stage_element(const ir::Instr& in, std::size_t j) const {
    return ir::is_stage_indexed(in.op) ? ix(in, 0, j) : ix(in, 0, 0) + static_cast<std::int64_t>(j);
  }
  void elementwise(const ir::Instr& in);
  void arithmetic(const ir::Instr& in);
  /// Element j of a float-operand op into r (comparisons into r.i, arithmetic rounded to `result` into r.f).
  void float_element(const ir::Instr& in, std::size_t j, Value& r, DType result) const;
  /// Element j of an integer- or mask-operand op.
  std::int64_t int_element(const ir::Instr& in, std::size_t j) const;
  void reduce(const ir::Instr& in);
  // matrix.cpp: expand, broadcast, trans, reductions along an axis, dot.
  void shape(const ir::Instr& in);
  void reduce_along(const ir::Instr& in);
  void dot(const ir::Instr& in);
  /// Operand k of `in`.
  const Value& arg(const ir::Instr& in, std::size_t k) const { return vals_[in.args.at(k)]; }
  /// Element j of operand k as a float or an integer (a scalar operand broadcasts).
  double fx(const ir::Instr& in, std::size_t k, std::size_t j) const {
    const auto& x = arg(in, k).f;
    return x.size() == 1 ? x[0] : x[j];
  }
  std::int64_t ix(const ir::Instr& in, std::size_t k, std::size_t j) const {
    const auto& x = arg(in, k).i;
    return x.size() == 1 ? x[0] : x[j];
  }

  const ir::Function& fn_;
  std::span<const HostArg> args_;
  std::vector<Value> vals_;
  std::vector<Value> stages_;  // this program's stages (Value's f or i by the stage's dtype)
  // Copies still in flight on the GPU: a stage's copies complete at its next load or store (gather,
  // scatter), so copies with no access of their stage between them land in either order there. Per
  // stage, the access count (the epoch) and, per element, the epoch a copy last wrote it in: a second copy
  // of another value into an element written in the current epoch is a race (Program::stage_copy).
  std::vector<std::uint32_t> stage_epoch_;
  std::vector<std::vector<std::uint32_t>> copied_in_;
  std::int64_t pid_[3] = {0, 0, 0};
  std::int64_t grid_[3] = {1, 1, 1};
};

}  // namespace tilefuse::interp::detail
