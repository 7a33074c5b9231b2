// The CPU interpreter's entry point: runs every program of a grid, in order, and the programs of each
// thread-block cluster in lockstep between cluster reductions.
#include "backend/interp/interp.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/interp/program.hpp"

namespace tilefuse::interp {

using detail::Program;

void run(const ir::Function& fn, std::int64_t gx, std::int64_t gy, std::int64_t gz, std::span<const HostArg> args,
         int cluster_size) {
  if (args.size() != fn.params.size())
    throw InterpreterError("tilefuse interpreter: kernel '" + fn.name + "' takes " + std::to_string(fn.params.size()) +
                           " arguments, got " + std::to_string(args.size()));
  const bool clustered = std::any_of(fn.body.begin(), fn.body.end(), [](const ir::Instr& in) { return ir::is_cluster_reduction(in.op); });
  if (!clustered) {
    Program p(fn, args);
    for (std::int64_t z = 0; z < gz; ++z)
      for (std::int64_t y = 0; y < gy; ++y)
        for (std::int64_t x = 0; x < gx; ++x) p.run(x, y, z, gx, gy, gz);
    return;
  }
  cluster_size = std::max(cluster_size, 1);  // a cluster of one program: each reduction gives its operand
  if (gx % cluster_size != 0)
    throw InterpreterError("tilefuse interpreter: kernel '" + fn.name + "': grid x = " + std::to_string(gx) +
                           " is not a multiple of the cluster size " + std::to_string(cluster_size));
  // The programs of one cluster run in lockstep between cluster reductions (which are top-level, so every
  // program stops at the same ones): each reduction combines the operands in rank order, as the GPU does.
  std::vector<Program> cluster;
  for (int k = 0; k < cluster_size; ++k) cluster.emplace_back(fn, args);
  for (std::int64_t z = 0; z < gz; ++z)
    for (std::int64_t y = 0; y < gy; ++y)
      for (std::int64_t x0 = 0; x0 < gx; x0 += cluster_size) {
        for (int k = 0; k < cluster_size; ++k) cluster[k].start(x0 + k, y, z, gx, gy, gz);
        for (std::size_t pc = 0;; ++pc) {
          std::size_t stop = pc;
          for (auto& p : cluster) stop = p.run_until_cluster_op(pc);
          if (stop >= fn.body.size()) break;
          const ir::Instr& in = fn.body[stop];
          // (reordered_sums: from the last rank)
          const bool reverse = reordered_sums();
          float acc = cluster[reverse ? cluster_size - 1 : 0].cluster_operand(in);
          for (int k = 1; k < cluster_size; ++k) {
            const float v = cluster[reverse ? cluster_size - 1 - k : k].cluster_operand(in);
            acc = in.op == ir::Op::cluster_max ? detail::float_max(acc, v) : acc + v;
          }
          for (auto& p : cluster) p.set_cluster_result(in, acc);
          pc = stop;
        }
      }
}

}  // namespace tilefuse::interp
