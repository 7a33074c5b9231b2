// Lowering of loops: for (iv = lo; iv < hi; iv += step) with the carried values in variables named after
// the block arguments; yields go through temporaries first, so that carried values swap correctly.
// Stage copies from before the loop into stages its body reads but does not copy into are waited for once,
// before it; groups of copies (stages.cpp) are closed where the loop starts and where each iteration ends.
#include <algorithm>

#include "backend/codegen/emitter.hpp"
#include "backend/ir/ops.hpp"

namespace tilefuse::codegen {

using ir::Op;

void Emitter::loop(const ir::Instr& in) {
  // The stages the body copies into, and those it accesses.
  std::vector<bool> body_copies(fn_.stages.size(), false), body_accesses(fn_.stages.size(), false);
  ir::walk(in.body, [&](const ir::Instr& b) {
    if (!ir::is_stage_access(b.op) && b.op != Op::stage_copy) return;
    const int k = b.as<ir::attr::StageRef>().stage;
    (b.op == Op::stage_copy ? body_copies : body_accesses)[k] = true;
  });
  // Copies from before the loop into a stage the body accesses but does not copy into are waited for
  // once, before it, rather than at that access in every iteration.
  for (std::size_t k = 0; k < body_copies.size(); ++k)
    if (body_accesses[k] && !body_copies[k]) wait_for_copies(static_cast<int>(k));
  // A loop whose body copies opens with a group of its own (empty if nothing is open: it still counts, so
  // that copies from before the loop have a group after them whether or not the body runs), and each
  // iteration ends committing its copies, so that the state where the loop starts joins the one where an
  // iteration ends: the body starts from the entry's state with its own copies in flight (at least 0
  // groups after them, the bound that holds at any iteration's end).
  const bool copies = std::find(body_copies.begin(), body_copies.end(), true) != body_copies.end();
  if (copies) commit_copies(/*even_empty=*/true);
  const CopyState entry = copies_;
  for (std::size_t k = 0; k < body_copies.size(); ++k)
    if (body_copies[k]) copies_.after[k] = 0;
  const std::size_t carried = in.block_args.size() - 1;
  for (std::size_t k = 0; k < carried; ++k) declare_copy(in.block_args[k + 1], in.args[k + 3]);
  os_ << "  for (int " << v(in.block_args[0]) << " = " << v(in.args[0]) << "; " << v(in.block_args[0]) << " < " << v(in.args[1])
      << "; " << v(in.block_args[0]) << " += " << v(in.args[2]) << ") {\n";
  std::ostringstream body;
  std::swap(os_, body);
  ++loop_depth_;
  for (const ir::Instr& b : in.body) instr(b);
  if (copies) commit_copies();
  // After the loop: where its last iteration ended, or where it started (no iteration).
  copies_.join(entry);
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
  // (a result nothing reads, such as a look-ahead's last piece, is not copied out)
  for (std::size_t k = 0; k < carried; ++k)
    if (used_[in.results[k]]) declare_copy(in.results[k], in.block_args[k + 1]);
  // The block's last read of a cluster reduction's slots was in this loop (cluster_reduce).
  if (loop_depth_ == 0 && arrive_after_loop_) {
    os_ << "  tf_cluster_arrive();  // this block's last cluster read is done\n";
    arrive_after_loop_ = false;
  }
}

}  // namespace tilefuse::codegen
