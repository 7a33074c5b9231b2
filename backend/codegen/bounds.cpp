// Debug bounds checks: see bounds.hpp.
#include "backend/codegen/bounds.hpp"

#include "backend/codegen/text.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

std::string BoundsChecks::checked(const std::string& addr, const ir::Instr& in, ir::ValueId ptr, int width, const std::string& active) {
  if (!on_) return addr;
  const int param = a_.root[ptr];
  if (param < 0) return addr;  // a pointer chosen at run time (tl::where of pointers): not traced to one argument
  const int site = static_cast<int>(sites_.size());
  const std::size_t mask_at = in.op == ir::Op::load ? 1 : 2;
  std::string text = ir::print(fn_, in);
  text.erase(text.find_last_not_of('\n') + 1);
  sites_.push_back(AccessSite{in.op == ir::Op::load ? "load" : in.op == ir::Op::store ? "store" : "copy",
                              text + (in.where.empty() ? "" : " [" + in.where + "]"), in.args.size() > mask_at});
  return "tf_bounds(" + addr + ", a_" + text::identifier(fn_.params[param].name) + ", tf_counts.n[" + std::to_string(param) + "], " +
         std::to_string(width) + ", " + std::to_string(param) + ", " + std::to_string(site) + ", tf_fault, " + active + ")";
}

std::string BoundsChecks::declarations() const {
  if (!on_) return "";
  return "struct TfCounts { long long n[" + std::to_string(fn_.params.empty() ? 1 : fn_.params.size()) + "]; };\n";
}

std::string bounds_parameters(bool on) { return on ? ", TfCounts tf_counts, TfFault* tf_fault" : ""; }

}  // namespace tilefuse::codegen
