// The IR's types and the Function builder: dtype facts, value types, stage layout.
#include "backend/ir/ir.hpp"

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
    case CacheHint::evict_last: return "evict_last";
    default: return "normal";
  }
}

std::int64_t stage_offset(const std::vector<Stage>& stages, std::size_t index) {
  std::int64_t bytes = 0;
  for (std::size_t k = 0; k < index && k < stages.size(); ++k) bytes += (stages[k].size * dtype_bytes(stages[k].dtype) + 15) / 16 * 16;
  return bytes;
}

std::int64_t stage_bytes(const std::vector<Stage>& stages) { return stage_offset(stages, stages.size()); }

ValueId Function::add_value(const ValueType& type) {
  values.push_back(type);
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Function::append(Instr instr, const ValueType* type) {
  instr.result = type ? add_value(*type) : -1;
  body.push_back(std::move(instr));
  return body.back().result;
}

}  // namespace tilefuse::ir
