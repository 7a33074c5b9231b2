#include "backend/ir/ir.hpp"

#include <cmath>
#include <functional>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace tilefuse::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::i1: return "i1";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
  }
  return "?";
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::i1: return 1;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::i32:
    case DType::f32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32; }
bool is_int(DType t) { return t == DType::i32 || t == DType::i64; }

std::int64_t ValueType::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

ValueType ValueType::scalar() const { return ValueType{dtype, pointer, 0, {1, 1}}; }

std::string ValueType::str() const {
  std::string s = pointer ? std::string("ptr<") + dtype_name(dtype) + ">" : dtype_name(dtype);
  if (rank > 0) {
    s += "[";
    for (int i = 0; i < rank; ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
    s += "]";
  }
  return s;
}

const char* cache_hint_name(CacheHint hint) {
  switch (hint) {
    case CacheHint::streaming: return "streaming";
    case CacheHint::l2_only: return "l2_only";
    default: return "normal";
  }
}

const char* op_name(Op op) {
  switch (op) {
    case Op::param: return "param";
    case Op::program_id: return "program_id";
    case Op::num_programs: return "num_programs";
    case Op::arange: return "arange";
    case Op::constant: return "constant";
    case Op::splat: return "splat";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::div: return "div";
    case Op::rem: return "rem";
    case Op::minimum: return "minimum";
    case Op::maximum: return "maximum";
    case Op::neg: return "neg";
    case Op::exp: return "exp";
    case Op::exp2: return "exp2";
    case Op::log: return "log";
    case Op::sqrt: return "sqrt";
    case Op::rsqrt: return "rsqrt";
    case Op::abs: return "abs";
    case Op::erf: return "erf";
    case Op::rand: return "rand";
    case Op::lt: return "lt";
    case Op::le: return "le";
    case Op::gt: return "gt";
    case Op::ge: return "ge";
    case Op::eq: return "eq";
    case Op::ne: return "ne";
    case Op::logical_and: return "and";
    case Op::logical_or: return "or";
    case Op::logical_not: return "not";
    case Op::select: return "where";
    case Op::cast: return "cast";
    case Op::ptr_add: return "ptr_add";
    case Op::load: return "load";
    case Op::store: return "store";
    case Op::reduce_max: return "max";
    case Op::reduce_min: return "min";
    case Op::reduce_sum: return "sum";
    case Op::loop: return "loop";
    case Op::cluster_max: return "cluster_max";
    case Op::cluster_sum: return "cluster_sum";
    case Op::stage_store: return "stage_store";
    case Op::stage_load: return "stage_load";
    case Op::stage_copy: return "stage_copy";
  }
  return "?";
}

bool is_pure(Op op) {
  // A cluster reduction is a barrier every program of the cluster must reach: never merged or dropped.
  return op != Op::load && op != Op::store && op != Op::param && op != Op::loop && !is_cluster_reduction(op) &&
         !is_stage_access(op);
}

bool is_stage_access(Op op) { return op == Op::stage_store || op == Op::stage_load || op == Op::stage_copy; }

std::int64_t stage_offset(const std::vector<Stage>& stages, std::size_t index) {
  std::int64_t bytes = 0;
  for (std::size_t k = 0; k < index && k < stages.size(); ++k) bytes += (stages[k].size * dtype_bytes(stages[k].dtype) + 15) / 16 * 16;
  return bytes;
}

std::int64_t stage_bytes(const std::vector<Stage>& stages) { return stage_offset(stages, stages.size()); }

bool is_cluster_reduction(Op op) { return op == Op::cluster_max || op == Op::cluster_sum; }

bool is_reduction(Op op) { return op == Op::reduce_max || op == Op::reduce_min || op == Op::reduce_sum; }

ValueId Function::add_value(const ValueType& type) {
  values.push_back(type);
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Function::append(Instr instr, const ValueType* type) {
  if (type) {
    instr.result = static_cast<ValueId>(values.size());
    values.push_back(*type);
  } else {
    instr.result = -1;
  }
  body.push_back(std::move(instr));
  return body.back().result;
}

namespace {

std::string number_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

namespace {

std::string value_list(const std::vector<ValueId>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", %" : "%") + std::to_string(ids[i]);
  return s;
}

void print_block(const Function& fn, const std::vector<Instr>& block, int depth, std::ostringstream& os) {
  const std::string indent(2 * depth, ' ');
  for (const Instr& in : block) {
    os << indent << print(fn, in) << "\n";
    if (in.op == Op::loop) {
      print_block(fn, in.body, depth + 1, os);
      os << indent << "  yield" << (in.yields.empty() ? "" : " " + value_list(in.yields)) << "\n" << indent << "}\n";
    }
  }
}

}  // namespace

std::string print(const Function& fn, const Instr& in) {
  std::ostringstream os;
  if (in.op == Op::loop) {
    // %r.. = loop %lo, %hi, %step, %init.. [%iv, %carried..] : types {
    if (!in.results.empty()) os << value_list(in.results) << " = ";
    os << "loop " << value_list(in.args) << " [" << value_list(in.block_args) << "]";
    if (!in.results.empty()) {
      os << " :";
      for (std::size_t i = 0; i < in.results.size(); ++i) os << (i ? ", " : " ") << fn.values.at(in.results[i]).str();
    }
    os << " {";
    return os.str();
  }
  if (in.result >= 0) os << "%" << in.result << " = ";
  os << op_name(in.op);
  switch (in.op) {
    case Op::param: os << " " << in.index << " \"" << fn.params.at(in.index).name << "\""; break;
    case Op::program_id:
    case Op::num_programs: os << " " << in.index; break;
    case Op::constant: os << " " << number_text(in.number); break;
    case Op::stage_store:
    case Op::stage_load:
    case Op::stage_copy: os << " @" << in.index; break;
    case Op::load:
    case Op::store:
      if (in.index != 0) os << " " << cache_hint_name(static_cast<CacheHint>(in.index));
      break;
    default: break;
  }
  for (std::size_t i = 0; i < in.args.size(); ++i) os << (i ? ", %" : " %") << in.args[i];
  if (in.result >= 0) os << " : " << fn.values.at(in.result).str();
  return os.str();
}

std::string print(const Function& fn) {
  std::ostringstream os;
  os << "func @" << fn.name << "(";
  for (std::size_t i = 0; i < fn.params.size(); ++i)
    os << (i ? ", " : "") << fn.params[i].name << ": " << fn.params[i].type.str();
  os << ") {\n";
  for (std::size_t k = 0; k < fn.stages.size(); ++k)
    os << "  stage @" << k << " : " << dtype_name(fn.stages[k].dtype) << "[" << fn.stages[k].size << "]\n";
  print_block(fn, fn.body, 1, os);
  os << "}\n";
  return os.str();
}

void verify(const Function& fn) {
  std::vector<bool> defined(fn.values.size(), false);
  std::function<void(const std::vector<Instr>&)> verify_block;
  int loop_depth = 0;
  auto fail = [&](const Instr& in, const std::string& why) {
    throw std::logic_error("tilefuse IR verifier: function '" + fn.name + "', instruction '" + print(fn, in) +
                           "': " + why);
  };
  auto define = [&](const Instr& in, ValueId v) {
    if (v < 0 || v >= static_cast<ValueId>(fn.values.size())) fail(in, "result out of range");
    if (defined[v]) fail(in, "%" + std::to_string(v) + " is defined twice");
    defined[v] = true;
  };
  auto use = [&](const Instr& in, ValueId a) {
    if (a < 0 || a >= static_cast<ValueId>(fn.values.size())) fail(in, "operand out of range");
    if (!defined[a]) fail(in, "operand %" + std::to_string(a) + " used before it is defined");
  };
  verify_block = [&](const std::vector<Instr>& block) {
  for (const Instr& in : block) {
    if (in.op == Op::loop) {
      // (lo, hi, step, init...) -> body(iv, carried...) yields carried... -> results
      if (in.args.size() < 3) fail(in, "loop needs lo, hi and step");
      for (ValueId a : in.args) use(in, a);
      for (std::size_t i = 0; i < 3; ++i)
        if (!(fn.values[in.args[i]] == ValueType{DType::i32, false, 0, {1, 1}})) fail(in, "loop bounds must be i32 scalars");
      const std::size_t carried = in.args.size() - 3;
      if (in.block_args.size() != carried + 1 || in.yields.size() != carried || in.results.size() != carried)
        fail(in, "loop carries a different number of values than it initializes, yields or returns");
      if (in.result >= 0) fail(in, "a loop's values are its results, not a single result");
      std::vector<bool> outer = defined;
      for (ValueId b : in.block_args) define(in, b);
      if (!(fn.values[in.block_args[0]] == ValueType{DType::i32, false, 0, {1, 1}})) fail(in, "the induction variable is an i32 scalar");
      for (std::size_t k = 0; k < carried; ++k)
        if (!(fn.values[in.block_args[k + 1]] == fn.values[in.args[k + 3]]) || !(fn.values[in.results[k]] == fn.values[in.args[k + 3]]))
          fail(in, "carried value " + std::to_string(k) + " changes type");
      ++loop_depth;
      verify_block(in.body);
      --loop_depth;
      for (std::size_t k = 0; k < carried; ++k) {
        use(in, in.yields[k]);
        if (!(fn.values[in.yields[k]] == fn.values[in.args[k + 3]])) fail(in, "yielded value " + std::to_string(k) + " changes type");
      }
      defined = outer;  // values of the body are not visible after the loop
      for (ValueId r : in.results) define(in, r);
      continue;
    }
    if (!in.body.empty() || !in.results.empty() || !in.block_args.empty() || !in.yields.empty())
      fail(in, "only loops have regions");
    for (ValueId a : in.args) use(in, a);
    auto arg = [&](std::size_t i) -> const ValueType& { return fn.values[in.args.at(i)]; };
    const bool has_result = in.result >= 0;
    const bool no_result = in.op == Op::store || in.op == Op::stage_store || in.op == Op::stage_copy;
    if (no_result == has_result) fail(in, has_result ? "a store has no result" : "missing result");
    const ValueType* r = has_result ? &fn.values.at(in.result) : nullptr;
    auto need_args = [&](std::size_t lo, std::size_t hi) {
      if (in.args.size() < lo || in.args.size() > hi) fail(in, "wrong number of operands");
    };
    switch (in.op) {
      case Op::param:
        need_args(0, 0);
        if (in.index < 0 || in.index >= static_cast<std::int64_t>(fn.params.size()) ||
            !(fn.params[in.index].type == *r))
          fail(in, "parameter index or type does not match the signature");
        break;
      case Op::program_id:
      case Op::num_programs:
        need_args(0, 0);
        if (in.index < 0 || in.index > 2) fail(in, "axis must be 0, 1 or 2");
        break;
      case Op::arange:
        need_args(0, 0);
        if (r->rank != 1 || r->dtype != DType::i32 || (r->dims[0] & (r->dims[0] - 1)) != 0)
          fail(in, "arange must be a power-of-two i32 tile");
        break;
      case Op::constant:
        need_args(0, 0);
        if (r->rank != 0) fail(in, "constants are scalars");
        break;
      case Op::splat:
        need_args(1, 1);
        if (arg(0).rank != 0 || !(arg(0).scalar() == r->scalar())) fail(in, "splat takes a scalar of the result type");
        break;
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem:
      case Op::minimum: case Op::maximum:
        need_args(2, 2);
        if (!(arg(0) == *r) || !(arg(1) == *r) || r->pointer) fail(in, "operands and result must have one type");
        break;
      case Op::neg: case Op::abs:
        need_args(1, 1);
        if (!(arg(0) == *r) || r->pointer) fail(in, "operand and result must have one type");
        break;
      case Op::rand:
        need_args(2, 2);
        if (!is_int(arg(0).dtype) || arg(0).rank != 0 || arg(0).pointer || !is_int(arg(1).dtype) || arg(1).pointer ||
            r->dtype != DType::f32 || r->rank != arg(1).rank)
          fail(in, "rand takes an integer seed and integer offsets and gives f32 of the offsets' shape");
        break;
      case Op::exp: case Op::exp2: case Op::log: case Op::sqrt: case Op::rsqrt: case Op::erf:
        need_args(1, 1);
        if (!(arg(0) == *r) || !is_float(r->dtype) || r->pointer) fail(in, "math functions take and give floats");
        break;
      case Op::lt: case Op::le: case Op::gt: case Op::ge: case Op::eq: case Op::ne:
        need_args(2, 2);
        if (!(arg(0) == arg(1)) || r->dtype != DType::i1 || r->rank != arg(0).rank) fail(in, "comparison typing");
        break;
      case Op::logical_and: case Op::logical_or:
        need_args(2, 2);
        if (!(arg(0) == *r) || !(arg(1) == *r) || r->dtype != DType::i1) fail(in, "logic ops take masks");
        break;
      case Op::logical_not:
        need_args(1, 1);
        if (!(arg(0) == *r) || r->dtype != DType::i1) fail(in, "logic ops take masks");
        break;
      case Op::select:
        need_args(3, 3);
        if (arg(0).dtype != DType::i1 || !(arg(1) == *r) || !(arg(2) == *r) || arg(0).rank != r->rank)
          fail(in, "where(cond, a, b) typing");
        break;
      case Op::cast:
        need_args(1, 1);
        if (arg(0).rank != r->rank || arg(0).pointer || r->pointer) fail(in, "cast keeps the shape");
        break;
      case Op::ptr_add:
        need_args(2, 2);
        if (!arg(0).pointer || !is_int(arg(1).dtype) || arg(1).pointer || !r->pointer || arg(0).dtype != r->dtype)
          fail(in, "ptr_add takes a pointer and an integer offset");
        break;
      case Op::load:
        need_args(1, 3);
        if (in.index < 0 || in.index > static_cast<std::int64_t>(CacheHint::l2_only)) fail(in, "no such cache hint");
        if (!arg(0).pointer || arg(0).dtype != r->dtype || arg(0).rank != r->rank || r->pointer)
          fail(in, "load typing");
        if (in.args.size() >= 2 && arg(1).dtype != DType::i1) fail(in, "load mask must be i1");
        if (in.args.size() == 3 && !(arg(2) == *r)) fail(in, "load other must have the result type");
        break;
      case Op::store:
        need_args(2, 3);
        if (in.index < 0 || in.index > static_cast<std::int64_t>(CacheHint::l2_only)) fail(in, "no such cache hint");
        if (!arg(0).pointer || arg(0).dtype != arg(1).dtype || arg(1).pointer || arg(0).rank != arg(1).rank)
          fail(in, "store typing");
        if (in.args.size() == 3 && arg(2).dtype != DType::i1) fail(in, "store mask must be i1");
        break;
      case Op::reduce_max: case Op::reduce_min: case Op::reduce_sum:
        need_args(1, 1);
        if (arg(0).rank != 1 || r->rank != 0 || arg(0).dtype != r->dtype || r->pointer)
          fail(in, "reductions take a 1D tile to a scalar of its dtype");
        break;
      case Op::cluster_max: case Op::cluster_sum:
        need_args(1, 1);
        if (!(arg(0) == ValueType{DType::f32, false, 0, {1, 1}}) || !(*r == arg(0)))
          fail(in, "cluster reductions take and give an f32 scalar");
        if (loop_depth > 0) fail(in, "cluster reductions cannot be inside a loop (every program must reach each one)");
        break;
      case Op::stage_store:
      case Op::stage_load:
      case Op::stage_copy: {
        if (in.index < 0 || in.index >= static_cast<std::int64_t>(fn.stages.size())) fail(in, "no such stage");
        const Stage& st = fn.stages[in.index];
        const bool store = in.op != Op::stage_load;  // stage_store and stage_copy: (offset, tile [, mask])
        need_args(store ? 2 : 1, 3);
        if (!(arg(0) == ValueType{DType::i32, false, 0, {1, 1}})) fail(in, "a stage offset is an i32 scalar");
        const ValueType& tile = store ? arg(1) : *r;
        if (tile.rank != 1 || tile.pointer != (in.op == Op::stage_copy) || tile.dtype != st.dtype || tile.dims[0] > st.size)
          fail(in, in.op == Op::stage_copy ? "a stage copies through a 1D tile of pointers to its dtype, at most the stage's size"
                                           : "a stage access moves a 1D tile of the stage's dtype, at most the stage's size");
        const std::size_t mask_at = store ? 2 : 1;
        if (in.args.size() > mask_at && (arg(mask_at).dtype != DType::i1 || arg(mask_at).rank != 1 || arg(mask_at).dims != tile.dims))
          fail(in, "a stage access mask is an i1 tile of the accessed shape");
        if (!store && in.args.size() == 3 && !(arg(2) == *r)) fail(in, "stage_load other must have the result type");
        if (!store && in.args.size() == 2) fail(in, "a masked stage_load needs its other value");
        break;
      }
      case Op::loop:
        break;  // handled above
    }
    if (has_result) define(in, in.result);
  }
  };
  verify_block(fn.body);
}

Function renumber(const Function& fn) {
  Function out;
  out.name = fn.name;
  out.params = fn.params;
  out.stages = fn.stages;
  std::vector<ValueId> remap(fn.values.size(), -1);
  auto fresh = [&](ValueId old) {
    remap.at(old) = out.add_value(fn.values.at(old));
    return remap[old];
  };
  auto mapped = [&](std::vector<ValueId> ids) {
    for (auto& v : ids) v = remap.at(v);
    return ids;
  };
  std::function<std::vector<Instr>(const std::vector<Instr>&)> block = [&](const std::vector<Instr>& in_block) {
    std::vector<Instr> result;
    for (const Instr& in : in_block) {
      Instr copy = in;
      copy.args = mapped(in.args);
      if (in.op == Op::loop) {
        for (auto& b : copy.block_args) b = fresh(b);
        copy.body = block(in.body);
        copy.yields = mapped(in.yields);
        for (auto& r : copy.results) r = fresh(r);
      } else if (in.result >= 0) {
        copy.result = fresh(in.result);
      }
      result.push_back(std::move(copy));
    }
    return result;
  };
  out.body = block(fn.body);
  return out;
}

}  // namespace tilefuse::ir
