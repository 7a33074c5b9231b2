// How the code generator spells types, conversions and literals in CUDA C++ (no decisions here: the
// types and values come from the IR).
#pragma once

#include <cstdint>
#include <string>

#include "backend/ir/ir.hpp"

namespace tilefuse::codegen::text {

/// The H of tf_ld<H> / tf_st<H> (prelude/core.cuh) for a global access of `dt` with `hint`: 0 (a plain
/// access) for masks (i1) and normal accesses, and for evict_last where `evict_last` is false
/// (Options::l2_evict_last).
int cache_hint(ir::CacheHint hint, ir::DType dt, bool evict_last);

/// Register type of a value's elements ("float", "int", "tf_u16*" for a pointer to halves, ...).
std::string reg_type(const ir::ValueType& t);
/// Memory (storage) type of one element: halves as 16-bit words.
std::string storage_type(ir::DType t);
/// A storage element `x` as its register value (halves widened to float).
std::string from_storage(ir::DType t, const std::string& x);
/// A register value `x` as its storage element (floats rounded to halves).
std::string to_storage(ir::DType t, const std::string& x);
/// Element `half` (0: low, 1: high) of a word `w` holding two f16/bf16, widened to float.
std::string from_word(ir::DType t, const std::string& w, int half);
/// A float computed in f32 rounded to the value's dtype (unchanged for f32 and integers).
std::string rounded(ir::DType t, const std::string& x);
/// The literal `v` of dtype t (floats exact as f32 after rounding to t; NaN and infinities as bit patterns).
std::string literal(ir::DType t, double v);
/// The integer literal `v` of dtype t (i32 or i64), exact, the most negative value included.
std::string integer_literal(ir::DType t, std::int64_t v);
/// `s` as a C identifier (other characters become '_').
std::string identifier(const std::string& s);
/// The statement of a grid-ordering op (gdc_wait, gdc_launch_dependents): a call of prelude/grid.cuh.
std::string grid_order(ir::Op op);
/// `x` converted from dtype `from` to dtype `to` (floats are floats in registers, halves rounded).
std::string cast(ir::DType from, ir::DType to, const std::string& x);

}  // namespace tilefuse::codegen::text
