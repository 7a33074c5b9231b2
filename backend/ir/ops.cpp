// The op table's entries (see ops.hpp), one line per op in Op order.
#include "backend/ir/ops.hpp"

#include <stdexcept>
#include <string>

namespace tilefuse::ir {

namespace {

using A = AttrKind;
using T = Typing;
using F = Family;
constexpr std::uint8_t kAny = 255;

// name, operands (fewest, most), result, pure, region, attribute, typing, family
constexpr OpInfo kTable[] = {
    {Op::param, "param", 0, 0, true, false, false, A::param, T::param, F::geometry},
    {Op::program_id, "program_id", 0, 0, true, true, false, A::axis, T::geometry, F::geometry},
    {Op::num_programs, "num_programs", 0, 0, true, true, false, A::axis, T::geometry, F::geometry},
    {Op::arange, "arange", 0, 0, true, true, false, A::none, T::arange, F::geometry},
    {Op::constant, "constant", 0, 0, true, true, false, A::constant, T::constant, F::elementwise},
    {Op::splat, "splat", 1, 1, true, true, false, A::none, T::splat, F::elementwise},
    {Op::add, "add", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::sub, "sub", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::mul, "mul", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::div, "div", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::rem, "rem", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::minimum, "minimum", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::maximum, "maximum", 2, 2, true, true, false, A::none, T::arith, F::elementwise},
    {Op::neg, "neg", 1, 1, true, true, false, A::none, T::unary, F::elementwise},
    {Op::exp, "exp", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::exp2, "exp2", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::log, "log", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::sqrt, "sqrt", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::rsqrt, "rsqrt", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::abs, "abs", 1, 1, true, true, false, A::none, T::unary, F::elementwise},
    {Op::erf, "erf", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::gelu, "gelu", 1, 1, true, true, false, A::none, T::float_math, F::elementwise},
    {Op::lt, "lt", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::le, "le", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::gt, "gt", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::ge, "ge", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::eq, "eq", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::ne, "ne", 2, 2, true, true, false, A::none, T::compare, F::elementwise},
    {Op::logical_and, "and", 2, 2, true, true, false, A::none, T::logic, F::elementwise},
    {Op::logical_or, "or", 2, 2, true, true, false, A::none, T::logic, F::elementwise},
    {Op::logical_not, "not", 1, 1, true, true, false, A::none, T::logic, F::elementwise},
    {Op::select, "where", 3, 3, true, true, false, A::none, T::select, F::elementwise},
    {Op::cast, "cast", 1, 1, true, true, false, A::none, T::cast, F::elementwise},
    {Op::ptr_add, "ptr_add", 2, 2, true, true, false, A::none, T::ptr_add, F::elementwise},
    {Op::load, "load", 1, 3, true, false, false, A::memory, T::load, F::memory},
    {Op::store, "store", 2, 3, false, false, false, A::memory, T::store, F::memory},
    {Op::reduce_max, "max", 1, 1, true, true, false, A::none, T::reduce, F::reduction},
    {Op::reduce_min, "min", 1, 1, true, true, false, A::none, T::reduce, F::reduction},
    {Op::reduce_sum, "sum", 1, 1, true, true, false, A::none, T::reduce, F::reduction},
    {Op::loop, "loop", 3, kAny, false, false, true, A::none, T::loop, F::control},
    {Op::rand, "rand", 2, 2, true, true, false, A::none, T::rand, F::elementwise},
    // A cluster reduction is a barrier every program of the cluster must reach: never merged or dropped.
    {Op::cluster_max, "cluster_max", 1, 1, true, false, false, A::none, T::cluster_reduce, F::cluster},
    {Op::cluster_sum, "cluster_sum", 1, 1, true, false, false, A::none, T::cluster_reduce, F::cluster},
    {Op::stage_store, "stage_store", 2, 3, false, false, false, A::stage, T::stage_write, F::stage},
    {Op::stage_load, "stage_load", 1, 3, true, false, false, A::stage, T::stage_load, F::stage},
    {Op::stage_copy, "stage_copy", 2, 3, false, false, false, A::stage, T::stage_write, F::stage},
    {Op::stage_gather, "stage_gather", 1, 3, true, false, false, A::stage, T::stage_gather, F::stage},
    {Op::stage_scatter, "stage_scatter", 2, 3, false, false, false, A::stage, T::stage_scatter, F::stage},
    {Op::expand, "expand", 1, 1, true, true, false, A::axis, T::expand, F::shape},
    {Op::broadcast, "broadcast", 1, 1, true, true, false, A::none, T::broadcast, F::shape},
    {Op::max_along, "max_along", 1, 1, true, true, false, A::axis, T::reduce_along, F::axis_reduction},
    {Op::min_along, "min_along", 1, 1, true, true, false, A::axis, T::reduce_along, F::axis_reduction},
    {Op::sum_along, "sum_along", 1, 1, true, true, false, A::axis, T::reduce_along, F::axis_reduction},
    {Op::trans, "trans", 1, 1, true, true, false, A::none, T::trans, F::shape},
    {Op::dot, "dot", 2, 3, true, true, false, A::none, T::dot, F::dot},
    // Ordering against the launches before and after on the stream: never moved, merged or dropped.
    {Op::gdc_wait, "gdc_wait", 0, 0, false, false, false, A::none, T::grid_order, F::grid},
    {Op::gdc_launch_dependents, "gdc_launch_dependents", 0, 0, false, false, false, A::none, T::grid_order, F::grid},
};

constexpr bool table_in_op_order() {
  for (std::size_t i = 0; i < std::size(kTable); ++i)
    if (static_cast<std::size_t>(kTable[i].op) != i) return false;
  return static_cast<std::size_t>(Op::gdc_launch_dependents) + 1 == std::size(kTable);
}
static_assert(table_in_op_order(), "the op table lists every op once, in Op order");

}  // namespace

const OpInfo& op_info(Op op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= std::size(kTable)) throw std::logic_error("tilefuse IR: no op numbered " + std::to_string(i));
  return kTable[i];
}

std::span<const OpInfo> op_table() { return kTable; }

Attribute default_attribute(Op op) {
  switch (op_info(op).attr) {
    case AttrKind::param: return attr::Param{};
    case AttrKind::axis: return attr::Axis{};
    case AttrKind::constant: return attr::Constant{};
    case AttrKind::memory: return attr::Memory{};
    case AttrKind::stage: return attr::StageRef{};
    case AttrKind::none: break;
  }
  return std::monostate{};
}

}  // namespace tilefuse::ir
