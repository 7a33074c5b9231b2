// Spelling of types, conversions and literals (see text.hpp).
#include "backend/codegen/text.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "backend/numerics/float16.hpp"

namespace tilefuse::codegen::text {

using ir::DType;

std::string reg_type(const ir::ValueType& t) {
  if (t.pointer) {
    switch (t.dtype) {
      case DType::f32: return "float*";
      case DType::f16:
      case DType::bf16: return "tf_u16*";
      case DType::i32: return "int*";
      case DType::i64: return "long long*";
      case DType::i1: return "bool*";
    }
  }
  switch (t.dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::i1: return "bool";
  }
  return "?";
}

std::string storage_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16:
    case DType::bf16: return "tf_u16";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::i1: return "bool";
  }
  return "?";
}

std::string from_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_f16_to_f32(" + x + ")";
  if (t == DType::bf16) return "tf_bf16_to_f32(" + x + ")";
  return x;
}

std::string to_storage(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_f32_to_f16(" + x + ")";
  if (t == DType::bf16) return "tf_f32_to_bf16(" + x + ")";
  return x;
}

std::string from_word(DType t, const std::string& w, int half) {
  return std::string(t == DType::bf16 ? "tf_bf16_" : "tf_f16_") + (half ? "hi(" : "lo(") + w + ")";
}

std::string rounded(DType t, const std::string& x) {
  if (t == DType::f16) return "tf_round_f16(" + x + ")";
  if (t == DType::bf16) return "tf_round_bf16(" + x + ")";
  return x;
}

namespace {

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(v)) return v < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace

std::string literal(DType t, double v) {
  switch (t) {
    case DType::f32: return float_literal(v);
    case DType::f16: return float_literal(round_to_half(static_cast<float>(v)));
    case DType::bf16: return float_literal(round_to_bf16(static_cast<float>(v)));
    case DType::i32: return std::to_string(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
    case DType::i64: return std::to_string(static_cast<std::int64_t>(v)) + "ll";
    case DType::i1: return v != 0 ? "true" : "false";
  }
  return "?";
}

std::string integer_literal(DType t, std::int64_t v) {
  if (t == DType::i32) {
    const auto x = static_cast<std::int32_t>(v);
    // -2147483648 would be the negation of a literal too wide for int.
    return x == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(x);
  }
  return v == INT64_MIN ? "(-9223372036854775807ll - 1)" : std::to_string(v) + "ll";
}

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "k_" + out;
  return out;
}

std::string cast(DType from, DType to, const std::string& x) {
  if (from == to) return x;
  if (ir::is_float(to)) {
    if (ir::is_float(from)) return rounded(to, x);  // values are already floats in registers
    return rounded(to, "(float)" + x);
  }
  if (to == DType::i1) return x + " != 0";
  if (ir::is_float(from)) return to == DType::i32 ? "tf_f2i(" + x + ")" : "tf_f2ll(" + x + ")";
  return to == DType::i32 ? "(int)" + x : "(long long)" + x;
}

int cache_hint(ir::CacheHint hint, ir::DType dt, bool evict_last) {
  if (dt == ir::DType::i1 || (hint == ir::CacheHint::evict_last && !evict_last)) return 0;
  return static_cast<int>(hint);
}

std::string grid_order(ir::Op op) { return op == ir::Op::gdc_wait ? "tf_gdc_wait();" : "tf_gdc_launch_dependents();"; }

}  // namespace tilefuse::codegen::text
