// The checks and the launch step every sample launcher shares (see launch.hpp).
#include "kernels/rows/launch.hpp"
#include "kernels/rows/workspace.hpp"

#include <algorithm>
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

std::string packed_name(const char* family, const PackedRows& plan, int rows, int cols) {
  const std::string tile = std::to_string(rows) + "x" + std::to_string(cols);
  if (plan.staged) return family + ("staged_rows_" + tile);
  return family + ("rows_" + tile) + (plan.peeled ? "_peeled" : plan.staged_store ? "_staged_store" : "");
}

void launch(const RowCall& call, Program& program, Grid grid, std::span<const Arg> args, std::int64_t group, bool pdl) {
  if (call.collect) {
    call.collect->push_back(&program);
    return;
  }
  LaunchConfig config = call.config(grid);
  config.group = group;
  config.pdl = pdl;
  program.launch(config, args);
}

void LaunchChain::operator()(Program& program, Grid grid, std::span<const Arg> args) {
  const bool pdl = started_ && call_.opt.tuning.overlap_launches.value_or(true);
  started_ = true;
  launch(call_, program, grid, args, 1, pdl);
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

std::int64_t strided_programs(const RowCall& call, const KernelShape& shape, int multiple, Program* program, std::span<const Arg> args) {
  const std::int64_t by_rows = shape.cluster > 1 ? call.rows * shape.cluster : (call.rows + multiple - 1) / multiple * multiple;
  const Target target = call.target();
  if (!target.gpu) return std::min<std::int64_t>(by_rows, 2 * multiple);  // each program strides over rows, as on a GPU
  std::int64_t resident = std::int64_t{std::max(shape.min_programs, 2)} * target.sm_count / multiple * multiple;
  if (shape.cluster > 1) {
    // The driver's count where it gives one (it knows how clusters fit the GPCs), else a cluster less one
    // per GPC than the slots.
    const std::int64_t held = program && !call.collect ? program->resident_cluster_programs(args, call.opt.backend) : 0;
    if (held > 0) resident = std::min(resident, held / multiple * multiple);
    else resident -= std::int64_t{shape.cluster} * ((target.sm_count + kSmsPerGpc - 1) / kSmsPerGpc);
  }
  return std::clamp<std::int64_t>(resident, multiple, by_rows);
}

namespace {
// The looped kernel's shape where programs share each row (a cluster or a resident group): as many
// programs an SM as one program per row keeps (kLoopedResidentThreads), where ptxas fits them without
// spilling.
KernelShape shared_row_shape(const Tuning& tuning, std::int64_t block) {
  KernelShape shape = looped_shape(tuning, block);
  shape.min_programs = kLoopedResidentThreads / (32 * shape.warps);
  shape.min_programs_unless_spilling = true;
  return shape;
}

// The looped kernels' rows shared by resident groups of Tuning::looped_groups programs (1: the fewest
// that keep the rows in flight, a group's programs each holding a chunk, within kL2ReusePercent of the
// L2, counting the programs the launch bounds ask room for, and at least enough that the rows fill those
// programs).
LoopedCluster looped_groups(const RowCall& call, int element_bytes, bool peel, std::int64_t block, int asked) {
  LoopedCluster plan{shared_row_shape(call.opt.tuning, block), 0, 0};
  plan.shape.groups = true;
  const std::int64_t width = peel ? window_cols(call.cols, element_bytes) : call.cols;
  const std::int64_t pieces = (width + block - 1) / block;
  std::int64_t k = asked;
  if (asked == 1) {
    const Target target = call.target();
    const std::int64_t resident = target.gpu ? std::int64_t{plan.shape.min_programs} * target.sm_count : 2;
    const std::int64_t share = target.l2_bytes * kL2ReusePercent / 100;
    k = share > 0 ? (resident * call.cols * element_bytes + share - 1) / share : 2;
    // Fewer rows than that leaves slots idle: spread each row over the GPU's share of them.
    k = std::max<std::int64_t>(k, resident / std::max<std::int64_t>(1, call.rows));
  }
  plan.splits = std::clamp<std::int64_t>(k, 2, std::max<std::int64_t>(2, std::min<std::int64_t>(pieces, kMaxLoopedGroup)));
  plan.chunk = split_row_chunk(call.entry, width, plan.splits, kMaxLoopedGroup, block);
  return plan;
}
}  // namespace

LoopedCluster looped_cluster(const RowCall& call, int element_bytes, bool peel, std::int64_t block) {
  if (const int g = call.opt.tuning.looped_groups.value_or(0); g > 0) return looped_groups(call, element_bytes, peel, block, g);
  LoopedCluster plan{shared_row_shape(call.opt.tuning, block), 0, 0};
  plan.splits = call.opt.tuning.looped_cluster.value_or(
      looped_cluster_rule(call.target(), call.rows, call.cols * element_bytes, plan.shape.warps, call.opt.tuning));
  if (plan.splits > 1 && !call.target().clusters)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": Tuning::looped_cluster = " + std::to_string(plan.splits) +
                                " needs thread-block clusters (sm_90); this GPU is " + call.target().arch + " (1 runs anywhere)");
  plan.chunk = split_row_chunk(call.entry, peel ? window_cols(call.cols, element_bytes) : call.cols, plan.splits, 8, block);
  plan.shape.cluster = static_cast<int>(plan.splits);
  return plan;
}

std::int64_t looped_cluster_programs(const RowCall& call, const LoopedCluster& plan, int element_bytes, Program& program,
                                     std::span<const Arg> args) {
  const Target target = call.target();
  std::int64_t programs = 0;
  if (plan.shape.groups) {
    // A group a row, as many as the GPU holds at once of this kernel (a cooperative launch), or as its
    // launch bounds ask room for where the kernel is not compiled; the interpreter takes two groups.
    const std::int64_t k = plan.splits;
    programs = call.rows * k;
    if (!target.gpu) return std::min(programs, 2 * k);
    std::int64_t held = call.collect ? 0 : program.resident_group_programs(args, call.opt.backend);
    if (held <= 0) held = std::int64_t{plan.shape.min_programs} * target.sm_count;
    if (held < k)
      throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": Tuning::looped_groups asks " + std::to_string(k) +
                                  " programs a row, and this GPU holds " + std::to_string(held) + " of the kernel at once");
    programs = std::min(programs, held / k * k);
  } else {
    programs = strided_programs(call, plan.shape, static_cast<int>(plan.splits), &program, args);
    if (!target.gpu) return programs;
  }
  const std::int64_t row_bytes = std::max<std::int64_t>(1, call.cols * element_bytes);
  return std::min(programs, std::max<std::int64_t>(1, target.l2_bytes * kL2ReusePercent / 100 / row_bytes) * plan.splits);
}

StagedPlan staged_plan(const RowCall& call, std::int64_t splits, int element_bytes, std::int64_t stage_bytes, bool peel,
                       const char* alternative) {
  // Tuning::staged_cluster asks for k programs a row where the caller's splits leave it to the plan, else
  // the plan's own (auto_stage_split); clusters past 8 (non-portable) take wider stages.
  if (splits == 0 && call.opt.tuning.staged_cluster) splits = *call.opt.tuning.staged_cluster;
  if (splits == 0) splits = auto_stage_split(call.cols, element_bytes, stage_piece(call.opt.tuning, stage_bytes, element_bytes), peel).splits;
  const bool wide = splits > kMaxPortableClusterSize;
  const std::int64_t max_stage = wide ? kClusterStageMaxCols : kStageMaxCols;
  const auto split = cluster_split(call.entry, alternative, call.rows, call.cols, splits, max_stage,
                                   wide ? kMaxClusterSize : kMaxPortableClusterSize);
  if (split.splits > 1) {
    const Target target = call.target();
    if (!target.clusters)
      throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": " + std::to_string(call.cols) +
                                  " columns need a cluster of " + std::to_string(split.splits) +
                                  " programs, which needs sm_90; this GPU is " + target.arch + " (" + alternative + " runs anywhere)");
  }
  // A window starts up to a vector less one element before the chunk: the stage needs room for that.
  const bool windowed = stage_windowed(split.chunk, element_bytes, peel, max_stage);
  return {split, windowed, windowed ? window_cols(split.chunk, element_bytes) : split.chunk};
}

StagedPlan resident_plan(const RowCall& call, int element_bytes, std::int64_t stage_bytes, bool peel) {
  const std::int64_t piece = stage_piece(call.opt.tuning, stage_bytes, element_bytes);
  // A window starts up to a vector less one element before its chunk: chunks leave the stage room for it.
  // Chunks are whole multiples of 8 columns (every chunk of a whole-vector row starts aligned).
  const std::int64_t room = (peel ? piece - 16 / element_bytes : piece) / 8 * 8;
  const std::int64_t splits = (call.cols + room - 1) / room;
  const std::int64_t chunk = cluster_chunk(call.cols, splits);  // at most room
  if (call.rows * splits > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": rows x splits = " + std::to_string(call.rows * splits) +
                                " exceeds 2^31-1 programs");
  return {ClusterSplit{splits, chunk}, peel, peel ? window_cols(chunk, element_bytes) : chunk};
}

std::int64_t resident_wave_rows(const RowCall& call, const KernelShape& shape, std::int64_t stage_bytes, std::int64_t splits,
                                const char* alternative) {
  const Target target = call.target();
  // What the stages leave an SM, within the launch bounds.
  std::int64_t per_sm = stages_per_sm(stage_bytes);
  if (shape.min_programs > 0) per_sm = std::min<std::int64_t>(per_sm, shape.min_programs);
  const std::int64_t capacity = target.gpu ? per_sm * target.sm_count : 2 * splits;
  if (splits > capacity)
    throw std::invalid_argument(std::string("tilefuse ") + call.entry + ": cols = " + std::to_string(call.cols) + " take " +
                                std::to_string(splits) + " programs per row, and a resident launch holds at most " +
                                std::to_string(capacity) + " at once on this GPU (" + alternative + " takes rows of any width)");
  return capacity / splits;
}

}  // namespace tilefuse::kernels
