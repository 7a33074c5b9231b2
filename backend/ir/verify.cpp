// The IR verifier: SSA form (every operand defined before use, every value defined once, a loop's values
// visible only inside it), then each instruction against its op-table entry (operand count, result,
// attribute kind, region) and its typing rule.
#include <stdexcept>

#include "backend/ir/ops.hpp"

namespace tilefuse::ir {

namespace {

const ValueType kI32{DType::i32, false, 0, {1, 1}};
const ValueType kF32{DType::f32, false, 0, {1, 1}};

class Verifier {
 public:
  explicit Verifier(const Function& fn) : fn_(fn), defined_(fn.values.size(), false) {}

  void block(const std::vector<Instr>& instrs) {
    for (const Instr& in : instrs) instr(in);
  }

 private:
  [[noreturn]] void fail(const Instr& in, const std::string& why) const {
    throw std::logic_error("tilefuse IR verifier: function '" + fn_.name + "', instruction '" + print(fn_, in) + "': " + why);
  }
  void define(const Instr& in, ValueId v) {
    if (v < 0 || v >= static_cast<ValueId>(fn_.values.size())) fail(in, "result out of range");
    if (defined_[v]) fail(in, "%" + std::to_string(v) + " is defined twice");
    defined_[v] = true;
  }
  void use(const Instr& in, ValueId a) const {
    if (a < 0 || a >= static_cast<ValueId>(fn_.values.size())) fail(in, "operand out of range");
    if (!defined_[a]) fail(in, "operand %" + std::to_string(a) + " used before it is defined");
  }

  void instr(const Instr& in) {
    const OpInfo& op = op_info(in.op);
    if (in.attr.index() != static_cast<std::size_t>(op.attr)) fail(in, std::string("wrong kind of attribute for ") + op.name);
    if (in.args.size() < op.min_args || in.args.size() > op.max_args) fail(in, "wrong number of operands");
    if (op.region) return loop(in);
    if (!in.body.empty() || !in.results.empty() || !in.block_args.empty() || !in.yields.empty())
      fail(in, "only loops have regions");
    for (ValueId a : in.args) use(in, a);
    if (op.result != (in.result >= 0)) fail(in, op.result ? "missing result" : "a store has no result");
    types(in, op.typing);
    if (op.result) define(in, in.result);
  }

  // (lo, hi, step, init...) -> body(iv, carried...) yields carried... -> results
  void loop(const Instr& in) {
    for (ValueId a : in.args) use(in, a);
    for (std::size_t i = 0; i < 3; ++i)
      if (!(fn_.values[in.args[i]] == kI32)) fail(in, "loop bounds must be i32 scalars");
    const std::size_t carried = in.args.size() - 3;
    if (in.block_args.size() != carried + 1 || in.yields.size() != carried || in.results.size() != carried)
      fail(in, "loop carries a different number of values than it initializes, yields or returns");
    if (in.result >= 0) fail(in, "a loop's values are its results, not a single result");
    const std::vector<bool> outer = defined_;
    for (ValueId b : in.block_args) define(in, b);
    if (!(fn_.values[in.block_args[0]] == kI32)) fail(in, "the induction variable is an i32 scalar");
    for (std::size_t k = 0; k < carried; ++k)
      if (!(fn_.values[in.block_args[k + 1]] == fn_.values[in.args[k + 3]]) || !(fn_.values[in.results[k]] == fn_.values[in.args[k + 3]]))
        fail(in, "carried value " + std::to_string(k) + " changes type");
    ++loop_depth_;
    block(in.body);
    --loop_depth_;
    for (std::size_t k = 0; k < carried; ++k) {
      use(in, in.yields[k]);
      if (!(fn_.values[in.yields[k]] == fn_.values[in.args[k + 3]])) fail(in, "yielded value " + std::to_string(k) + " changes type");
    }
    defined_ = outer;  // values of the body are not visible after the loop
    for (ValueId r : in.results) define(in, r);
  }

  // The op's typing rule (ops.hpp) over its operand and result types.
  void types(const Instr& in, Typing rule) const {
    auto arg = [&](std::size_t i) -> const ValueType& { return fn_.values[in.args.at(i)]; };
    const ValueType* r = in.result >= 0 ? &fn_.values.at(in.result) : nullptr;
    switch (rule) {
      case Typing::param: {
        const int i = in.as<attr::Param>().index;
        if (i < 0 || i >= static_cast<int>(fn_.params.size()) || !(fn_.params[i].type == *r))
          fail(in, "parameter index or type does not match the signature");
        break;
      }
      case Typing::geometry:
        if (in.as<attr::Axis>().axis < 0 || in.as<attr::Axis>().axis > 2) fail(in, "axis must be 0, 1 or 2");
        if (!(*r == kI32)) fail(in, "program ids and counts are i32 scalars");
        break;
      case Typing::arange:
        if (r->rank != 1 || r->dtype != DType::i32 || (r->dims[0] & (r->dims[0] - 1)) != 0)
          fail(in, "arange must be a power-of-two i32 tile");
        break;
      case Typing::constant:
        if (r->rank != 0) fail(in, "constants are scalars");
        break;
      case Typing::splat:
        if (arg(0).rank != 0 || !(arg(0).scalar() == r->scalar())) fail(in, "splat takes a scalar of the result type");
        break;
      case Typing::arith:
        if (!(arg(0) == *r) || !(arg(1) == *r) || r->pointer) fail(in, "operands and result must have one type");
        break;
      case Typing::unary:
        if (!(arg(0) == *r) || r->pointer) fail(in, "operand and result must have one type");
        break;
      case Typing::float_math:
        if (!(arg(0) == *r) || !is_float(r->dtype) || r->pointer) fail(in, "math functions take and give floats");
        break;
      case Typing::rand:
        if (!is_int(arg(0).dtype) || arg(0).rank != 0 || arg(0).pointer || !is_int(arg(1).dtype) || arg(1).pointer ||
            r->dtype != DType::f32 || r->rank != arg(1).rank)
          fail(in, "rand takes an integer seed and integer offsets and gives f32 of the offsets' shape");
        break;
      case Typing::compare:
        if (!(arg(0) == arg(1)) || r->dtype != DType::i1 || r->rank != arg(0).rank) fail(in, "comparison typing");
        break;
      case Typing::logic:
        for (std::size_t i = 0; i < in.args.size(); ++i)
          if (!(arg(i) == *r) || r->dtype != DType::i1) fail(in, "logic ops take masks");
        break;
      case Typing::select:
        if (arg(0).dtype != DType::i1 || !(arg(1) == *r) || !(arg(2) == *r) || arg(0).rank != r->rank)
          fail(in, "where(cond, a, b) typing");
        break;
      case Typing::cast:
        if (arg(0).rank != r->rank || arg(0).pointer || r->pointer) fail(in, "cast keeps the shape");
        break;
      case Typing::ptr_add:
        if (!arg(0).pointer || !is_int(arg(1).dtype) || arg(1).pointer || !r->pointer || arg(0).dtype != r->dtype)
          fail(in, "ptr_add takes a pointer and an integer offset");
        break;
      case Typing::load:
        memory_hint(in);
        if (!arg(0).pointer || arg(0).dtype != r->dtype || arg(0).rank != r->rank || r->pointer) fail(in, "load typing");
        if (in.args.size() == 2) fail(in, "a masked load takes its other value too: (ptr, mask, other)");
        if (in.args.size() >= 2 && arg(1).dtype != DType::i1) fail(in, "load mask must be i1");
        if (in.args.size() == 3 && !(arg(2) == *r)) fail(in, "load other must have the result type");
        break;
      case Typing::store:
        memory_hint(in);
        if (!arg(0).pointer || arg(0).dtype != arg(1).dtype || arg(1).pointer || arg(0).rank != arg(1).rank)
          fail(in, "store typing");
        if (in.args.size() == 3 && arg(2).dtype != DType::i1) fail(in, "store mask must be i1");
        break;
      case Typing::reduce:
        if (arg(0).rank != 1 || r->rank != 0 || arg(0).dtype != r->dtype || r->pointer)
          fail(in, "reductions take a 1D tile to a scalar of its dtype");
        break;
      case Typing::cluster_reduce:
        if (!(arg(0) == kF32) || !(*r == arg(0))) fail(in, "cluster reductions take and give an f32 scalar");
        break;
      case Typing::stage_write:
      case Typing::stage_load:
      case Typing::stage_gather:
      case Typing::stage_scatter: stage_access(in, rule == Typing::stage_write || rule == Typing::stage_scatter); break;
      case Typing::loop: break;  // verified by loop()
      case Typing::grid_order: break;  // no operands, no result: checked above
      case Typing::expand: {
        const int axis = in.as<attr::Axis>().axis;
        if (arg(0).rank != 1 || r->rank != 2 || (axis != 0 && axis != 1) || !(arg(0).scalar() == r->scalar()) ||
            r->dims[1 - axis] != arg(0).dims[0] || r->dims[axis] != 1)
          fail(in, "expand takes a 1D tile of n to [n, 1] (axis 1) or [1, n] (axis 0)");
        break;
      }
      case Typing::broadcast:
        if (arg(0).rank != 2 || r->rank != 2 || !(arg(0).scalar() == r->scalar()) ||
            (arg(0).dims[0] != r->dims[0] && arg(0).dims[0] != 1) || (arg(0).dims[1] != r->dims[1] && arg(0).dims[1] != 1))
          fail(in, "broadcast repeats a 2D tile along its dimensions of 1");
        break;
      case Typing::reduce_along: {
        const int axis = in.as<attr::Axis>().axis;
        if (arg(0).rank != 2 || r->rank != 1 || (axis != 0 && axis != 1) || arg(0).dtype != r->dtype || r->pointer ||
            arg(0).pointer || r->dims[0] != arg(0).dims[1 - axis] || r->dtype == DType::i1)
          fail(in, "a reduction along an axis takes a 2D tile of numbers to the 1D tile of its other axis");
        break;
      }
      case Typing::trans:
        if (arg(0).rank != 2 || r->rank != 2 || !(arg(0).scalar() == r->scalar()) || r->dims[0] != arg(0).dims[1] ||
            r->dims[1] != arg(0).dims[0])
          fail(in, "trans takes [m, n] to [n, m]");
        break;
      case Typing::dot: {
        const ValueType& a = arg(0);
        const ValueType& b = arg(1);
        if (a.rank != 2 || b.rank != 2 || r->rank != 2 || a.dtype != b.dtype || a.pointer || b.pointer ||
            (a.dtype != DType::f16 && a.dtype != DType::bf16) || r->dtype != DType::f32 || a.dims[1] != b.dims[0] ||
            r->dims[0] != a.dims[0] || r->dims[1] != b.dims[1])
          fail(in, "dot takes f16 or bf16 [m, k] and [k, n] to f32 [m, n]");
        if (in.args.size() == 3 && !(arg(2) == *r)) fail(in, "dot's accumulator must be f32 [m, n]");
        break;
      }
    }
  }

  void memory_hint(const Instr& in) const {
    const auto hint = in.as<attr::Memory>().cache;
    if (static_cast<int>(hint) >= kCacheHints) fail(in, "no such cache hint");
  }

  // stage_store and stage_copy: (offset, tile [, mask]); stage_load: (offset [, mask, other]); an i32
  // scalar offset and a 1D tile. stage_scatter: (offsets, value [, mask]); stage_gather: (offsets [, mask,
  // other]); offsets an i32 tile of the accessed shape, 1D or 2D.
  void stage_access(const Instr& in, bool write) const {
    const int index = in.as<attr::StageRef>().stage;
    if (index < 0 || index >= static_cast<int>(fn_.stages.size())) fail(in, "no such stage");
    const Stage& st = fn_.stages[index];
    auto arg = [&](std::size_t i) -> const ValueType& { return fn_.values[in.args.at(i)]; };
    const ValueType& tile = write ? arg(1) : fn_.values[in.result];
    if (is_stage_indexed(in.op)) {
      if (tile.rank < 1 || tile.rank > 2 || tile.pointer || tile.dtype != st.dtype)
        fail(in, "a stage gather or scatter moves a 1D or 2D tile of the stage's dtype");
      if (arg(0).dtype != DType::i32 || arg(0).pointer || arg(0).rank != tile.rank || arg(0).dims != tile.dims)
        fail(in, "a stage gather's or scatter's offsets are an i32 tile of the accessed shape");
    } else {
      if (!(arg(0) == kI32)) fail(in, "a stage offset is an i32 scalar");
      const bool copy = in.op == Op::stage_copy;
      if (tile.rank != 1 || tile.pointer != copy || tile.dtype != st.dtype || tile.dims[0] > st.size)
        fail(in, copy ? "a stage copies through a 1D tile of pointers to its dtype, at most the stage's size"
                      : "a stage access moves a 1D tile of the stage's dtype, at most the stage's size");
    }
    const std::size_t mask_at = write ? 2 : 1;
    if (in.args.size() > mask_at && (arg(mask_at).dtype != DType::i1 || arg(mask_at).rank != tile.rank || arg(mask_at).dims != tile.dims))
      fail(in, "a stage access mask is an i1 tile of the accessed shape");
    if (!write && in.args.size() == 3 && !(arg(2) == fn_.values[in.result]))
      fail(in, std::string(op_name(in.op)) + " other must have the result type");
    if (!write && in.args.size() == 2) fail(in, std::string("a masked ") + op_name(in.op) + " needs its other value");
  }

  const Function& fn_;
  std::vector<bool> defined_;
  int loop_depth_ = 0;
};

}  // namespace

void verify(const Function& fn) { Verifier(fn).block(fn.body); }

}  // namespace tilefuse::ir
