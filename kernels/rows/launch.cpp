// The checks and the launch step every sample launcher shares (see launch.hpp).
#include "kernels/rows/launch.hpp"
#include "kernels/rows/workspace.hpp"

#include <stdexcept>

namespace tilefuse::kernels {

void check_matrix(const RowCall& call, const char* arg, const Arg& buf) {
  const std::int64_t rows = call.rows, cols = call.cols;
  if (rows < 1 || cols < 1)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": expected rows >= 1 and cols >= 1, got rows = " +
                                std::to_string(rows) + ", cols = " + std::to_string(cols));
  if (static_cast<std::int64_t>(buf.count) < rows * cols)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": argument " + arg + " holds " +
                                std::to_string(buf.count) + " elements, expected at least rows x cols = " +
                                std::to_string(rows * cols));
  if (rows * cols > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": rows x cols = " + std::to_string(rows * cols) +
                                " exceeds the 2^31-1 elements that i32 offsets address");
}

void check_vector(const RowCall& call, const char* arg, const Arg& buf, std::int64_t n) {
  if (static_cast<std::int64_t>(buf.count) < n)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": argument " + arg + " holds " +
                                std::to_string(buf.count) + " elements, expected at least " + std::to_string(n));
}

void launch(const RowCall& call, Program& program, Grid grid, std::span<const Arg> args) {
  if (call.collect) {
    call.collect->push_back(&program);
    return;
  }
  program.launch(call.config(grid), args);
}

SplitPartials split_partials(const RowCall& call, std::int64_t splits, const Arg& first, const Arg& second, const char* first_name,
                             const char* second_name, int element_bytes, std::int64_t max_splits, std::int64_t piece) {
  if (splits == 0) {
    const SplitPlan plan = split_plan(call.target(), call.rows, call.cols, element_bytes, piece, max_splits, call.opt.tuning);
    const Workspace ws = workspace(call.opt, plan.group * plan.splits);
    return {plan, ws.first, ws.second};
  }
  split_row_chunk(call.entry, call.cols, splits, max_splits, piece);  // checks splits
  check_vector(call, first_name, first, call.rows * splits);
  check_vector(call, second_name, second, call.rows * splits);
  return {SplitPlan{splits, call.rows}, first, second};
}

}  // namespace tilefuse::kernels
