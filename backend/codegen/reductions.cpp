// Lowering of reductions: a tile to a scalar within a program (each thread's elements, then the warp by
// shuffles, then the warps through shared memory), and a scalar across a thread-block cluster's programs
// (a cluster barrier and distributed shared memory, sm_90).
#include "backend/codegen/emitter.hpp"
#include "backend/codegen/text.hpp"

namespace tilefuse::codegen {

using ir::DType;
using ir::Op;

void Emitter::reduce(const ir::Instr& in) {
  const auto& src = fn_.values[in.args[0]];
  const auto& t = fn_.values[in.result];
  const bool fl = ir::is_float(t.dtype);
  const std::string R = text::reg_type(t);
  std::string ident, comb;
  switch (in.op) {
    case Op::reduce_max:
      ident = fl ? "__int_as_float(0xff800000)" : (t.dtype == DType::i32 ? "(-2147483647 - 1)" : "(-9223372036854775807ll - 1)");
      comb = fl ? "fmaxf(A, B)" : "tf_imax(A, B)";
      break;
    case Op::reduce_min:
      ident = fl ? "__int_as_float(0x7f800000)" : (t.dtype == DType::i32 ? "2147483647" : "9223372036854775807ll");
      comb = fl ? "fminf(A, B)" : "tf_imin(A, B)";
      break;
    default:
      ident = fl ? "0.0f" : (t.dtype == DType::i64 ? "0ll" : "0");
      comb = "A + B";
      break;
  }
  auto combine = [&](const std::string& x, const std::string& y) {
    std::string c = comb;
    c.replace(c.find('A'), 1, x);
    c.replace(c.find('B'), 1, y);
    return c;
  };
  const int E = per_thread(src);
  const std::string lv = live(src);
  const std::string r = v(in.result);
  const std::string x = v(in.args[0]) + "[e]";
  const std::string red = "tf_red" + std::to_string(in.result);
  os_ << "  " << R << " " << r << ";\n  {\n";
  os_ << "    " << R << " acc = " << ident << ";\n";
  os_ << "#pragma unroll\n    for (int e = 0; e < " << E << "; ++e) acc = "
      << combine("acc", lv.empty() ? x : "(" + lv + " ? " + x + " : " + ident + ")") << ";\n";
  os_ << "#pragma unroll\n    for (int offset = 16; offset > 0; offset >>= 1) acc = "
      << combine("acc", "__shfl_xor_sync(0xffffffffu, acc, offset)") << ";\n";
  if (opt_.num_warps > 1) {
    // Each warp's total goes through shared memory; every thread then combines all of them, which
    // leaves the result in every thread. One slot array per reduction: no barrier is needed after it.
    os_ << "    __shared__ " << R << " " << red << "[" << opt_.num_warps << "];\n";
    os_ << "    if (lane == 0) " << red << "[warp] = acc;\n    __syncthreads();\n";
    os_ << "    acc = " << red << "[0];\n";
    os_ << "#pragma unroll\n    for (int w = 1; w < " << opt_.num_warps << "; ++w) acc = " << combine("acc", red + "[w]") << ";\n";
    // In a loop the next iteration writes the same slots: wait until every thread has read them.
    if (loop_depth_ > 0) os_ << "    __syncthreads();\n";
  }
  os_ << "    " << r << " = " << text::rounded(t.dtype, "acc") << ";\n  }\n";
}

// Every thread holds the program's scalar; thread 0 publishes it in a shared slot, and after a cluster
// barrier every thread combines the slots of all blocks in rank order (as the interpreter does). A block
// must outlive every read of its slots: it arrives once after its last read and waits at its end. Inside a
// loop a reduction runs many times, so it alternates between two slots by the count of cluster barriers
// passed (tf_cluster_round): a slot is written again only two barriers later, after every block has passed
// the barrier between, and so has read it.
void Emitter::cluster_reduce(const ir::Instr& in) {
  const std::string r = v(in.result), x = v(in.args[0]);
  if (opt_.resident_groups) {
    // Through global memory, over the launch's groups of tf_group programs (prelude/group.cuh), at the
    // program's next round: reductions inside loops run once per iteration, each round a barrier of its own.
    const std::string slot = "tf_group" + std::to_string(in.result);
    os_ << "  float " << r << ";\n  {\n    __shared__ float " << slot << ";\n";
    os_ << "    " << r << " = tf_group_combine(tf_group_count, tf_group_next, tf_group_values, tf_group, tf_group_slots, "
        << "tf_group_round++, " << x << ", " << (in.op == Op::cluster_max ? "true" : "false") << ", &" << slot << ");\n  }\n";
    return;
  }
  const int C = opt_.cluster_size;
  if (C <= 1) {
    os_ << "  const float " << r << " = " << x << ";  // a cluster of one program\n";
    return;
  }
  const bool looped = loop_depth_ > 0;
  const std::string name = "tf_cluster" + std::to_string(in.result), slot = looped ? name + "[tf_cluster_round & 1u]" : name;
  const bool max = in.op == Op::cluster_max;
  os_ << "  float " << r << ";\n  {\n";
  os_ << "    __shared__ float " << name << (looped ? "[2]" : "") << ";\n";
  os_ << "    if (tid == 0) " << slot << " = " << x << ";\n";
  os_ << "    tf_cluster_sync();\n";
  os_ << "    float acc = tf_cluster_read(&" << slot << ", 0u);\n";
  os_ << "#pragma unroll\n    for (unsigned rank = 1; rank < " << C << "u; ++rank) acc = "
      << (max ? "fmaxf(acc, tf_cluster_read(&" + slot + ", rank))" : "acc + tf_cluster_read(&" + slot + ", rank)") << ";\n";
  if (looped) os_ << "    ++tf_cluster_round;\n";
  // Each reduction has its own slot, so no barrier is needed before the next one writes; after the last
  // read, the block only announces it is done (the matching wait ends the kernel); a last reduction inside
  // a loop, once the outermost loop has ended (control.cpp).
  if (--cluster_reductions_left_ == 0) {
    if (looped) arrive_after_loop_ = true;
    else os_ << "    tf_cluster_arrive();\n";
  }
  os_ << "    " << r << " = acc;\n  }\n";
}

}  // namespace tilefuse::codegen
