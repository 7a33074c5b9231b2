// The tilefuse IR: a traced tile program as a flat list of SSA instructions over plain objects.
// The front end (dsl/) builds it; passes, codegen and the interpreter read it. No CUDA here. What each op
// takes and gives is data in the op table (backend/ir/ops.hpp); an instruction's attribute is a named,
// typed field (attr::Param, attr::Axis, ...), never an integer whose meaning depends on the op.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <string>
#include <variant>
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
/// (rank 0 is a scalar that is uniform across the program; ranks 1 and 2 are tiles spread over its
/// threads; a 2D tile is [dims[0] rows, dims[1] columns], row-major when flattened).
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

/// Operations of the IR. The op table (ops.hpp) gives each one's operands, result, attribute and family.
enum class Op : std::uint8_t {
  param,         ///< kernel parameter attr::Param
  program_id,    ///< id of this program along attr::Axis (i32 scalar)
  num_programs,  ///< number of programs along attr::Axis (i32 scalar)
  arange,        ///< 0, 1, ..., N-1 as an i32 tile (N from the result type)
  constant,      ///< scalar literal attr::Constant of the result dtype
  splat,         ///< (scalar) broadcast to the result shape
  add, sub, mul, div, rem,
  minimum, maximum,
  neg, exp, exp2, log, sqrt, rsqrt, abs, erf,
  gelu,          ///< x Phi(x), the GELU of x (erf form; see tl::gelu for its error)
  lt, le, gt, ge, eq, ne,
  logical_and, logical_or, logical_not,
  select,        ///< (cond, a, b): a where cond else b
  cast,          ///< (x) converted to the result dtype
  ptr_add,       ///< (ptr, offset): ptr advanced by offset elements
  load,          ///< (ptr [, mask, other]): other where the mask is false; attr::Memory
  store,         ///< (ptr, value [, mask]); no result; attr::Memory
  reduce_max, reduce_min, reduce_sum,  ///< (tile) reduced to a scalar
  loop,          ///< (lo, hi, step, init...): runs `body` for iv = lo, lo + step, ... < hi, carrying values
  rand,          ///< (seed, offsets): f32 uniform in [0, 1) from Philox4x32-10 keyed by seed, counter offsets
  cluster_max, cluster_sum,  ///< (f32 scalar) combined over the programs of a thread-block cluster
  stage_store,   ///< attr::StageRef: (offset, value [, mask]) writes value[i] to element offset + i; no result
  stage_load,    ///< attr::StageRef: (offset [, mask [, other]]) reads element offset + i (other where masked)
  stage_copy,    ///< attr::StageRef: (offset, ptrs [, mask]) copies *ptrs[i] (0 where masked) to element
                 ///< offset + i, asynchronously (it completes before the stage is next accessed); no result
  stage_gather,  ///< attr::StageRef: (offsets [, mask, other]) reads element offsets[i] (other where masked or
                 ///< outside the stage); offsets is an i32 tile of the result's shape (1D or 2D)
  stage_scatter, ///< attr::StageRef: (offsets, value [, mask]) writes value[i] to element offsets[i] (dropped
                 ///< where masked or outside the stage); no result
  expand,        ///< attr::Axis: (1D x of n) -> 2D [n, 1] (axis 1, Triton's x[:, None]) or [1, n] (axis 0)
  broadcast,     ///< (2D x with a dimension of 1) repeated along it to the result's shape
  max_along, min_along, sum_along,  ///< attr::Axis: (2D tile) reduced along the axis to a 1D tile of the other
  trans,         ///< (2D [m, n]) -> [n, m]
  dot,           ///< (a [m, k], b [k, n] of f16 or bf16 [, acc f32 [m, n]]) -> acc + a b in f32
  gdc_wait,      ///< waits until the stream's previous kernel has finished and its writes are visible (a
                 ///< no-op unless this launch overlaps it: LaunchConfig::pdl); no operands, no result
  gdc_launch_dependents,  ///< lets the stream's next kernel, launched with LaunchConfig::pdl, start its
                          ///< programs while this one's finish; no operands, no result
};

/// How a load or store asks the caches to treat its lines (Triton's cache_modifier and eviction_policy):
/// `normal` as the hardware does; `streaming` (PTX .cs) evicts them first, for data touched once, so that
/// what is reused stays cached; `l2_only` (PTX .cg) caches them in L2, not L1; `evict_last` (PTX
/// L2::evict_last cache policy) keeps them in the L2 ahead of other lines, for data a later pass or
/// kernel reads again (KernelOptions::l2_evict_last can turn it into `normal`).
enum class CacheHint : std::uint8_t { normal, streaming, l2_only, evict_last };
/// How many cache hints there are: a CacheHint's value lies below it.
inline constexpr int kCacheHints = 4;
/// Name of a cache hint as the printer spells it ("normal", "streaming", "l2_only", "evict_last").
const char* cache_hint_name(CacheHint hint);

/// The attributes an instruction can carry, one type per kind (the op table says which an op takes).
namespace attr {
/// Kernel parameter number `index` (param).
struct Param {
  int index = 0;
  friend auto operator<=>(const Param&, const Param&) = default;
};
/// Grid axis 0, 1 or 2 (program_id, num_programs).
struct Axis {
  int axis = 0;
  friend auto operator<=>(const Axis&, const Axis&) = default;
};
/// The literal of a constant, in the result's dtype. Constants compare by bit pattern, so that NaN equals
/// itself and -0.0 differs from +0.0 (CSE keys instructions by their attributes; found by the fuzzer).
struct Constant {
  double value = 0.0;
  friend std::strong_ordering operator<=>(const Constant& a, const Constant& b) {
    return std::bit_cast<std::uint64_t>(a.value) <=> std::bit_cast<std::uint64_t>(b.value);
  }
  friend bool operator==(const Constant& a, const Constant& b) { return (a <=> b) == 0; }
};
/// How a global load or store treats the caches.
struct Memory {
  CacheHint cache = CacheHint::normal;
  friend auto operator<=>(const Memory&, const Memory&) = default;
};
/// The shared-memory stage (Function::stages index) a stage access works on.
struct StageRef {
  int stage = 0;
  friend auto operator<=>(const StageRef&, const StageRef&) = default;
};
}  // namespace attr

/// An instruction's attribute; the alternatives are in AttrKind order (ops.hpp), monostate for none.
using Attribute = std::variant<std::monostate, attr::Param, attr::Axis, attr::Constant, attr::Memory, attr::StageRef>;

/// Index of an SSA value in Function::values; -1 means none.
using ValueId = int;

/// One instruction: an op, its operands, its result (none for store and loop) and its attribute.
/// A loop also has a region: `block_args` (the induction variable, then one value per carried value)
/// are defined on entry to `body`, `yields` are the carried values for the next iteration, and
/// `results` are the carried values after the last iteration.
struct Instr {
  Op op = Op::constant;
  ValueId result = -1;
  std::vector<ValueId> args;
  Attribute attr;                   ///< the op's attribute (OpInfo::attr says which kind)
  std::string where;                ///< "file:line" of the DSL call that made it, when known
  std::vector<ValueId> block_args;  ///< loop: induction variable, then carried values
  std::vector<Instr> body;          ///< loop: the body
  std::vector<ValueId> yields;      ///< loop: next carried values
  std::vector<ValueId> results;     ///< loop: final carried values

  /// The attribute as kind A (the verifier has checked it is the op's kind).
  template <class A>
  const A& as() const {
    return std::get<A>(attr);
  }
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

/// Checks SSA form and every op's rules from the op table; throws std::logic_error naming the function
/// and instruction.
void verify(const Function& fn);

}  // namespace tilefuse::ir
