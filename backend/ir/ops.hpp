// The op table: every IR op's properties as data (name, operand count, result, attribute, purity, region,
// typing rule, lowering family), read by the printer, the verifier, the passes and the code generator.
// Adding an op is an entry here plus its lowering, not an edit in every switch (tinygrad's op sets).
#pragma once

#include <cstdint>
#include <span>

#include "backend/ir/ir.hpp"

namespace tilefuse::ir {

/// Which attribute an op carries: the index of its alternative in ir::Attribute.
enum class AttrKind : std::uint8_t { none, param, axis, constant, memory, stage };

/// The rule the verifier checks an op's operand and result types by; one rule serves every op of a kind.
enum class Typing : std::uint8_t {
  param,           ///< the parameter's declared type
  geometry,        ///< an i32 scalar (program_id, num_programs)
  arange,          ///< a power-of-two i32 tile
  constant,        ///< a scalar of any dtype
  splat,           ///< a scalar of the result's element type, broadcast
  arith,           ///< two operands and the result of one non-pointer type
  unary,           ///< one operand and the result of one non-pointer type
  float_math,      ///< like unary, floats only
  rand,            ///< integer seed scalar, integer offsets -> f32 of the offsets' shape
  compare,         ///< two operands of one type -> i1 of their shape
  logic,           ///< i1 operands and result of one shape
  select,          ///< (i1 cond, a, b) -> the type of a and b
  cast,            ///< same shape, another dtype, no pointers
  ptr_add,         ///< pointer plus integer offset -> pointer
  load,            ///< (ptr [, mask [, other]]) -> the pointee
  store,           ///< (ptr, value [, mask])
  reduce,          ///< a 1D tile -> a scalar of its dtype
  cluster_reduce,  ///< an f32 scalar -> an f32 scalar, outside loops
  stage_write,     ///< (offset, tile or pointer tile [, mask]) into a stage
  stage_load,      ///< (offset [, mask, other]) out of a stage
  stage_gather,    ///< (i32 offsets [, mask, other]) out of a stage, the offsets' shape
  stage_scatter,   ///< (i32 offsets, value [, mask]) into a stage, the offsets' shape
  loop,            ///< (lo, hi, step, init...) with a region
  expand,          ///< a 1D tile of n -> [n, 1] (axis 1) or [1, n] (axis 0), same element type
  broadcast,       ///< a 2D tile with a dimension of 1 -> the result shape, same element type
  reduce_along,    ///< a 2D tile -> the 1D tile of its other axis, same dtype
  trans,           ///< [m, n] -> [n, m], same element type
  dot,             ///< (f16/bf16 [m, k], same dtype [k, n] [, f32 [m, n]]) -> f32 [m, n]
  grid_order,      ///< no operands, no result
};

/// How the code generator lowers an op: one emitter file per family, as Triton splits lowering into
/// load/store, reduce, memory and cluster ops.
enum class Family : std::uint8_t { geometry, elementwise, memory, reduction, cluster, stage, control,
                                   shape,           ///< expand, broadcast, trans: elements move between tiles
                                   axis_reduction,  ///< reductions of a 2D tile along one axis
                                   dot,             ///< matrix products on tensor cores
                                   grid };          ///< how a launch orders itself against its stream's neighbours

/// Everything the IR's users need to know about one op.
struct OpInfo {
  Op op;
  const char* name;        ///< as the printer spells it
  std::uint8_t min_args;   ///< fewest operands
  std::uint8_t max_args;   ///< most operands (255: any number, for a loop's carried values)
  bool result;             ///< defines one value (a loop's values are its region results instead)
  bool pure;               ///< no side effects, result from operands only: CSE may merge it, DCE drop it
  bool region;             ///< has a body (block_args, body, yields, results)
  AttrKind attr;           ///< which attribute it carries
  Typing typing;           ///< the verifier's rule for its types
  Family family;           ///< where code generation lowers it
};

/// The table entry of `op`.
const OpInfo& op_info(Op op);
/// Every op's entry, in Op order.
std::span<const OpInfo> op_table();

/// The attribute `op` carries, at its kind's default value (none for ops without one).
Attribute default_attribute(Op op);

/// Name of an op as the printer spells it.
inline const char* op_name(Op op) { return op_info(op).name; }
/// True for ops with no side effects whose result depends only on their operands.
inline bool is_pure(Op op) { return op_info(op).pure; }
/// True for the block reductions (a tile to a scalar).
inline bool is_reduction(Op op) { return op_info(op).family == Family::reduction; }
/// True for the reductions across a cluster's programs (every program of the cluster must reach them).
inline bool is_cluster_reduction(Op op) { return op_info(op).family == Family::cluster; }
/// Whether some cluster reduction of `fn` lies inside a loop (so it runs many times: the interpreter's
/// turns of threads, code generation's alternating slots).
inline bool cluster_reduction_in_loop(const Function& fn) {
  bool nested = false;
  for (const Instr& in : fn.body) walk(in.body, [&](const Instr& b) { nested = nested || is_cluster_reduction(b.op); });
  return nested;
}
/// True for the reductions of a 2D tile along an axis.
inline bool is_axis_reduction(Op op) { return op_info(op).family == Family::axis_reduction; }
/// True for stage_store, stage_load, stage_copy, stage_gather and stage_scatter.
inline bool is_stage_access(Op op) { return op_info(op).family == Family::stage; }
/// True for gdc_wait and gdc_launch_dependents (programmatic dependent launch).
inline bool is_grid_order(Op op) { return op_info(op).family == Family::grid; }
/// True for stage_gather and stage_scatter: element offsets per lane, not one offset for a run.
inline bool is_stage_indexed(Op op) { return op == Op::stage_gather || op == Op::stage_scatter; }

}  // namespace tilefuse::ir
