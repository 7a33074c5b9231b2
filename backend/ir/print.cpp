// The IR printer: one instruction per line, attributes spelled by their kind (stable text: goldens
// compare it, and generated CUDA carries it as one comment per statement).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "backend/ir/ops.hpp"

namespace tilefuse::ir {

namespace {

std::string number_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string value_list(const std::vector<ValueId>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", %" : "%") + std::to_string(ids[i]);
  return s;
}

// The attribute as the printer spells it after the op's name ("" for none, and for the normal cache).
std::string attribute_text(const Function& fn, const Instr& in) {
  switch (op_info(in.op).attr) {
    case AttrKind::param: {
      const int i = in.as<attr::Param>().index;
      const bool known = i >= 0 && i < static_cast<int>(fn.params.size());
      return " " + std::to_string(i) + " \"" + (known ? fn.params[i].name : std::string("?")) + "\"";
    }
    case AttrKind::axis: return " " + std::to_string(in.as<attr::Axis>().axis);
    case AttrKind::constant: return " " + number_text(in.as<attr::Constant>().value);
    case AttrKind::stage: return " @" + std::to_string(in.as<attr::StageRef>().stage);
    case AttrKind::memory: {
      const CacheHint hint = in.as<attr::Memory>().cache;
      return hint == CacheHint::normal ? "" : std::string(" ") + cache_hint_name(hint);
    }
    case AttrKind::none: break;
  }
  return "";
}

void print_block(const Function& fn, const std::vector<Instr>& block, int depth, std::ostringstream& os) {
  const std::string indent(2 * depth, ' ');
  for (const Instr& in : block) {
    os << indent << print(fn, in) << "\n";
    if (op_info(in.op).region) {
      print_block(fn, in.body, depth + 1, os);
      os << indent << "  yield" << (in.yields.empty() ? "" : " " + value_list(in.yields)) << "\n" << indent << "}\n";
    }
  }
}

}  // namespace

std::string print(const Function& fn, const Instr& in) {
  std::ostringstream os;
  if (op_info(in.op).region) {
    // %r.. = loop %lo, %hi, %step, %init.. [%iv, %carried..] : types {
    if (!in.results.empty()) os << value_list(in.results) << " = ";
    os << op_name(in.op) << " " << value_list(in.args) << " [" << value_list(in.block_args) << "]";
    if (!in.results.empty()) {
      os << " :";
      for (std::size_t i = 0; i < in.results.size(); ++i) os << (i ? ", " : " ") << fn.values.at(in.results[i]).str();
    }
    os << " {";
    return os.str();
  }
  if (in.result >= 0) os << "%" << in.result << " = ";
  os << op_name(in.op);
  // The attribute only when it names a valid kind (the verifier reports a wrong one with this text).
  if (in.attr.index() == static_cast<std::size_t>(op_info(in.op).attr)) os << attribute_text(fn, in);
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

}  // namespace tilefuse::ir
