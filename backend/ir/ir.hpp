// The tilefuse IR: a traced tile program as a flat list of SSA instructions over plain objects.
// The front end (dsl/) builds it; passes, codegen and the interpreter read it. No CUDA here.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tilefuse::ir {

/// Element types a tile can hold; i1 is the mask type produced by comparisons.
enum class DType : std::uint8_t { i1, i32, i64, f16, bf16, f32 };

/// Short name of a dtype as the DSL and the printer spell it ("f32", "bf16", ...).
const char* dtype_name(DType t);
/// Bytes one element of this dtype occupies in memory.
int dtype_bytes(DType t);
/// True for f16, bf16 and f32.
bool is_float(DType t);
/// True for i32 and i64.
bool is_int(DType t);

/// Type of an SSA value: element dtype, whether it is a pointer to that dtype, and a static shape
/// (rank 0 is a scalar that is uniform across the program; rank 1 is a tile spread over its threads).
struct ValueType {
  DType dtype = DType::f32;
  bool pointer = false;
  int rank = 0;
  std::array<std::int64_t, 2> dims{1, 1};

  /// Number of elements (1 for scalars).
  std::int64_t numel() const;
  /// The same element type with no shape.
  ValueType scalar() const;
  /// Printed form, e.g. "f32[4096]", "ptr<f16>", "i1[128]".
  std::string str() const;
  friend bool operator==(const ValueType&, const ValueType&) = default;
};

/// Operations of the IR. Each one documents its operands.
enum class Op : std::uint8_t {
  param,         ///< kernel parameter number `index`
  program_id,    ///< id of this program along axis `index` (i32 scalar)
  num_programs,  ///< number of programs along axis `index` (i32 scalar)
  arange,        ///< 0, 1, ..., N-1 as an i32 tile
  constant,      ///< scalar literal `number` of the result dtype
  splat,         ///< (scalar) broadcast to the result shape
  add, sub, mul, div, rem,
  minimum, maximum,
  neg, exp, exp2, log, sqrt, rsqrt, abs, erf,
  lt, le, gt, ge, eq, ne,
  logical_and, logical_or, logical_not,
  select,        ///< (cond, a, b): a where cond else b
  cast,          ///< (x) converted to the result dtype
  ptr_add,       ///< (ptr, offset): ptr advanced by offset elements
  load,          ///< (ptr [, mask [, other]]): other where the mask is false; `index`: its CacheHint
  store,         ///< (ptr, value [, mask]); no result; `index`: its CacheHint
  reduce_max, reduce_min, reduce_sum,  ///< (tile) reduced to a scalar
  loop,          ///< (lo, hi, step, init...): runs `body` for iv = lo, lo + step, ... < hi, carrying values
  rand,          ///< (seed, offsets): f32 uniform in [0, 1) from Philox4x32-10 keyed by seed, counter offsets
  cluster_max, cluster_sum,  ///< (f32 scalar) combined over the programs of a thread-block cluster
  stage_store,   ///< stage `index`: (offset, value [, mask]) writes value[i] to element offset + i; no result
  stage_load,    ///< stage `index`: (offset [, mask [, other]]) reads element offset + i (other where masked)
  stage_copy,    ///< stage `index`: (offset, ptrs [, mask]) copies *ptrs[i] (0 where masked) to element offset + i,
                 ///< asynchronously (it completes before the stage is next accessed); no result
};

/// How a load or store asks the caches to treat its lines (the `index` of the instruction; Triton's
/// cache_modifier): `normal` as the hardware does; `streaming` (PTX .cs) evicts them first, for data
/// touched once, so that what is reused stays cached; `l2_only` (PTX .cg) caches them in L2, not L1.
enum class CacheHint : std::uint8_t { normal, streaming, l2_only };
/// Name of a cache hint as the printer spells it ("normal", "streaming", "l2_only").
const char* cache_hint_name(CacheHint hint);

/// Name of an op as the printer spells it.
const char* op_name(Op op);
/// True for ops with no side effects whose result depends only on their operands (CSE may merge them).
bool is_pure(Op op);
/// True for the reductions.
bool is_reduction(Op op);
/// True for the reductions across a cluster's programs (every program of the cluster must reach them).
bool is_cluster_reduction(Op op);
/// True for stage_store, stage_load and stage_copy.
bool is_stage_access(Op op);

/// Index of an SSA value in Function::values; -1 means none.
using ValueId = int;

/// One instruction: an op, its operands, its result (none for store and loop) and its attributes.
/// A loop also has a region: `block_args` (the induction variable, then one value per carried value)
/// are defined on entry to `body`, `yields` are the carried values for the next iteration, and
/// `results` are the carried values after the last iteration.
struct Instr {
  Op op = Op::constant;
  ValueId result = -1;
  std::vector<ValueId> args;
  std::int64_t index = 0;  ///< param number, axis, arange length, or stage number
  double number = 0.0;     ///< constant value
  std::string where;       ///< "file:line" of the DSL call that made it, when known
  std::vector<ValueId> block_args;  ///< loop: induction variable, then carried values
  std::vector<Instr> body;          ///< loop: the body
  std::vector<ValueId> yields;      ///< loop: next carried values
  std::vector<ValueId> results;     ///< loop: final carried values
};

/// Calls f(instr) for every instruction of `block`, loop bodies included, in program order.
template <class F>
void walk(const std::vector<Instr>& block, F&& f) {
  for (const Instr& in : block) {
    f(in);
    if (!in.body.empty()) walk(in.body, f);
  }
}

/// A kernel parameter as the kernel signature declares it.
struct Param {
  std::string name;
  ValueType type;
};

/// A tile that lives in shared memory for a program's lifetime (tl::Stage): `size` elements of `dtype`.
/// Elements are stored in the dtype's memory format (f16/bf16 as 16 bits).
struct Stage {
  DType dtype = DType::f32;
  std::int64_t size = 0;
  friend bool operator==(const Stage&, const Stage&) = default;
};

/// Bytes of shared memory one program's stages take, each starting 16-byte aligned.
std::int64_t stage_bytes(const std::vector<Stage>& stages);
/// Byte offset of stage `index` in a program's shared memory (as stage_bytes lays them out).
std::int64_t stage_offset(const std::vector<Stage>& stages, std::size_t index);

/// A traced tile program.
struct Function {
  std::string name;
  std::vector<Param> params;
  std::vector<Stage> stages;      ///< shared-memory stages, numbered by position
  std::vector<ValueType> values;  ///< type of every SSA value, indexed by ValueId
  std::vector<Instr> body;        ///< in program order; operands are defined before use

  /// Appends an instruction producing a value of `type` (or none when `type` is null) and returns its id.
  ValueId append(Instr instr, const ValueType* type);
  /// A new value id of `type`, defined by whoever takes it (a loop's block argument or result).
  ValueId add_value(const ValueType& type);
};

/// Text form of a function, one instruction per line (stable: goldens compare it).
std::string print(const Function& fn);
/// Text form of one instruction, as in print().
std::string print(const Function& fn, const Instr& instr);

/// Checks SSA form and typing rules; throws std::logic_error naming the function and instruction.
void verify(const Function& fn);

/// The same function with values numbered 0, 1, ... in order of definition (passes leave gaps).
Function renumber(const Function& fn);

}  // namespace tilefuse::ir
