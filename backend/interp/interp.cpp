// The CPU interpreter's entry point: runs every program of a grid, in order, and the programs of each
// thread-block cluster in lockstep between cluster reductions: stepped together through the top level
// where every cluster reduction is there, else each on a thread of its own, taking turns.
#include "backend/interp/interp.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/interp/program.hpp"

namespace tilefuse::interp {

using detail::Program;

namespace {

// The cluster reduction `in` over the cluster's operands, in rank order (from the last rank while
// reordered_sums is on), as the GPU combines its blocks' slots.
float combine_ranks(const ir::Instr& in, const std::vector<float>& operands) {
  const bool reverse = reordered_sums();
  const std::size_t n = operands.size();
  float acc = operands[reverse ? n - 1 : 0];
  for (std::size_t k = 1; k < n; ++k) {
    const float v = operands[reverse ? n - 1 - k : k];
    acc = in.op == ir::Op::cluster_max ? detail::float_max(acc, v) : acc + v;
  }
  return acc;
}

// The programs of one cluster, one thread each, taking turns so that exactly one runs at a time: rank 0
// runs to its next stop (a cluster reduction at any depth, or its end), hands the turn to rank 1, and so
// on; the last rank settles the round (every rank at the same reduction: combine; every rank at its end:
// the next cluster) and hands the turn back to rank 0. The hand-offs order every memory access of one
// program before the next one's, so a run is as deterministic as stepping the programs together.
class Turns {
 public:
  Turns(const ir::Function& fn, int size) : fn_(fn), size_(size), stops_(size), operands_(size) {}

  // Raised in the ranks that wait while another fails; the failure itself is rethrown by run().
  struct Aborted {};

  // Rank r waits for its first turn.
  void first_turn(int r) {
    std::unique_lock lock(mutex_);
    turned_.wait(lock, [&] { return aborted_ || (round_ == 0 && turn_ == r); });
    if (aborted_) throw Aborted{};
  }
  // Rank r stops at cluster reduction `in` (nullptr: its program's end) with `operand`, passes the turn,
  // and waits for its turn in the next round (not after the last cluster's end); returns the round's result.
  float stop(int r, const ir::Instr* in, float operand, bool last) {
    std::unique_lock lock(mutex_);
    stops_[r] = in;
    operands_[r] = operand;
    const std::uint64_t round = round_;
    if (r + 1 < size_) turn_ = r + 1;
    else settle();
    turned_.notify_all();
    if (last && in == nullptr) return 0;
    turned_.wait(lock, [&] { return aborted_ || (round_ > round && turn_ == r); });
    if (aborted_) throw Aborted{};
    return result_;
  }
  // Rank r's program failed (`error`): every rank stops; the first failure is the one reported.
  void fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
    aborted_ = true;
    turned_.notify_all();
  }
  std::exception_ptr error() const { return error_; }

 private:
  // Every rank has stopped: at one reduction (combine), all at their ends, or apart (a program error).
  void settle() {
    const ir::Instr* at = stops_[0];
    for (int k = 1; k < size_; ++k)
      if (stops_[k] != at) {
        auto where = [&](const ir::Instr* in) { return in ? "'" + ir::print(fn_, *in) + "'" : std::string("its end"); };
        error_ = std::make_exception_ptr(InterpreterError(
            "tilefuse interpreter: kernel '" + fn_.name + "': the programs of a cluster reached different cluster reductions (rank 0 " +
            where(at) + ", rank " + std::to_string(k) + " " + where(stops_[k]) +
            "): every program of a cluster must run the same cluster reductions, as many times and in the same order"));
        aborted_ = true;
        return;
      }
    if (at) result_ = combine_ranks(*at, operands_);
    turn_ = 0;
    ++round_;
  }

  const ir::Function& fn_;
  const int size_;
  std::mutex mutex_;
  std::condition_variable turned_;
  int turn_ = 0;
  std::uint64_t round_ = 0;
  std::vector<const ir::Instr*> stops_;
  std::vector<float> operands_;
  float result_ = 0;
  bool aborted_ = false;
  std::exception_ptr error_;
};

// The grid's clusters, one after another, each program of a cluster on a thread of its own (Turns). The
// caller's interpreter settings (interp.hpp) hold in every thread, and their wrapped operations count in
// the caller's.
void run_cluster_threads(const ir::Function& fn, std::int64_t gx, std::int64_t gy, std::int64_t gz, std::span<const HostArg> args,
                         int cluster_size) {
  Turns turns(fn, cluster_size);
  const bool reordered = reordered_sums(), zeros = other_zeros();
  const int nudge = cast_nudge();
  std::vector<std::uint64_t> wrapped(cluster_size, 0);
  auto rank = [&](int r) {
    set_reordered_sums(reordered);
    set_other_zeros(zeros);
    set_cast_nudge(nudge);
    reset_wrapped_operations();
    try {
      Program p(fn, args);
      turns.first_turn(r);
      const std::int64_t clusters = gz * gy * (gx / cluster_size);
      std::int64_t c = 0;
      for (std::int64_t z = 0; z < gz; ++z)
        for (std::int64_t y = 0; y < gy; ++y)
          for (std::int64_t x0 = 0; x0 < gx; x0 += cluster_size) {
            p.start(x0 + r, y, z, gx, gy, gz);
            p.run_with([&](const ir::Instr& in, float v) { return turns.stop(r, &in, v, false); });
            turns.stop(r, nullptr, 0, ++c == clusters);
          }
    } catch (const Turns::Aborted&) {
    } catch (...) {
      turns.fail(std::current_exception());
    }
    wrapped[r] = wrapped_operations();
  };
  std::vector<std::thread> threads;
  threads.reserve(cluster_size);
  for (int r = 0; r < cluster_size; ++r) threads.emplace_back(rank, r);
  for (auto& t : threads) t.join();
  for (std::uint64_t w : wrapped) detail::add_wrapped_operations(w);
  if (turns.error()) std::rethrow_exception(turns.error());
}

}  // namespace

void run(const ir::Function& fn, std::int64_t gx, std::int64_t gy, std::int64_t gz, std::span<const HostArg> args,
         int cluster_size) {
  if (args.size() != fn.params.size())
    throw InterpreterError("tilefuse interpreter: kernel '" + fn.name + "' takes " + std::to_string(fn.params.size()) +
                           " arguments, got " + std::to_string(args.size()));
  bool clustered = false;
  ir::walk(fn.body, [&](const ir::Instr& in) { clustered = clustered || ir::is_cluster_reduction(in.op); });
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
  // (the top-level lockstep cannot step to a reduction inside a loop)
  if (ir::cluster_reduction_in_loop(fn)) return run_cluster_threads(fn, gx, gy, gz, args, cluster_size);
  // The programs of one cluster run in lockstep between cluster reductions (which are top-level here, so
  // every program stops at the same ones): each reduction combines the operands in rank order.
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
          std::vector<float> operands;
          for (const auto& p : cluster) operands.push_back(p.cluster_operand(in));
          const float acc = combine_ranks(in, operands);
          for (auto& p : cluster) p.set_cluster_result(in, acc);
          pc = stop;
        }
      }
}

}  // namespace tilefuse::interp
