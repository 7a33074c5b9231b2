// Lowering of loops: for (iv = lo; iv < hi; iv += step) with the carried values in variables named after
// the block arguments; yields go through temporaries first, so that carried values swap correctly.
// Stage copies in flight are waited for where the loop first needs a stage.
#include "backend/codegen/emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;

void Emitter::loop(const ir::Instr& in) {
  const bool body_copies = any_of_ops(in.body, [](Op op) { return op == Op::stage_copy; });
  // Copies from before a loop that accesses stages but does not copy are waited for once, before it.
  if (copies_pending_ && !body_copies && any_of_ops(in.body, ir::is_stage_access)) {
    os_ << "  tf_copy_wait();\n";
    copies_pending_ = false;
  }
  const std::size_t carried = in.block_args.size() - 1;
  for (std::size_t k = 0; k < carried; ++k) declare_copy(in.block_args[k + 1], in.args[k + 3]);
  os_ << "  for (int " << v(in.block_args[0]) << " = " << v(in.args[0]) << "; " << v(in.block_args[0]) << " < " << v(in.args[1])
      << "; " << v(in.block_args[0]) << " += " << v(in.args[2]) << ") {\n";
  std::ostringstream body;
  std::swap(os_, body);
  ++loop_depth_;
  // A copy in the body may still be in flight when the next iteration starts, and when the loop ends.
  copies_pending_ = copies_pending_ || body_copies;
  for (const ir::Instr& b : in.body) instr(b);
  copies_pending_ = copies_pending_ || body_copies;
  os_ << "  // yield" << (in.yields.empty() ? "" : " %");
  for (std::size_t k = 0; k < carried; ++k) os_ << (k ? ", %" : "") << in.yields[k];
  os_ << "\n";
  for (std::size_t k = 0; k < carried; ++k) {
    const auto& t = fn_.values[in.yields[k]];
    const std::string tmp = "tf_next_" + v(in.block_args[k + 1]);
    if (t.rank == 0) {
      os_ << "  const " << value_type(in.yields[k]) << " " << tmp << " = " << v(in.yields[k]) << ";\n";
    } else {
      os_ << "  " << value_type(in.yields[k]) << " " << tmp << "[" << per_thread(t) << "];\n#pragma unroll\n  for (int e = 0; e < "
          << per_thread(t) << "; ++e) " << tmp << "[e] = " << v(in.yields[k]) << "[e];\n";
    }
  }
  for (std::size_t k = 0; k < carried; ++k) {
    const auto& t = fn_.values[in.yields[k]];
    const std::string tmp = "tf_next_" + v(in.block_args[k + 1]);
    if (t.rank == 0) os_ << "  " << v(in.block_args[k + 1]) << " = " << tmp << ";\n";
    else
      os_ << "#pragma unroll\n  for (int e = 0; e < " << per_thread(t) << "; ++e) " << v(in.block_args[k + 1]) << "[e] = " << tmp << "[e];\n";
  }
  --loop_depth_;
  std::swap(os_, body);
  // Indent the body one level.
  std::istringstream lines(body.str());
  for (std::string line; std::getline(lines, line);) os_ << (line.rfind("#pragma", 0) == 0 ? "" : "  ") << line << "\n";
  os_ << "  }\n";
  for (std::size_t k = 0; k < carried; ++k) declare_copy(in.results[k], in.block_args[k + 1]);
}

}  // namespace tilefuse::codegen
