// How the compiled launchers of the sample kernels run a tile program: one call's operands and options
// (RowCall), the argument checks every launcher shares, the dispatch from a run-time dtype to the
// program's element tag, and the Kernel of each (program, shape), made and traced once. A call can also
// only collect the programs it would launch, which is how inspection, goldens and compile tests see
// exactly what a launch runs. Internal to the kernels library.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "dsl/tl.hpp"
#include "kernels/rows/rules.hpp"
#include "kernels/rows/shapes.hpp"

namespace tilefuse::kernels {

/// One call of a sample launcher: its entry point (errors name it), shape and options.
struct RowCall {
  const char* entry;
  std::int64_t rows, cols;
  const RowOptions& opt;
  /// When set, launches only record their programs here (nothing runs).
  std::vector<const Program*>* collect = nullptr;

  /// The launch configuration over `grid` with the call's backend and stream.
  LaunchConfig config(Grid grid) const { return LaunchConfig(grid, opt.backend, opt.stream); }
  /// The target the call runs on.
  Target target() const { return tilefuse::target(opt.backend); }
};

/// Throws unless a matrix operand holds rows x cols elements: names the kernel and the argument.
void check_matrix(const RowCall& call, const char* arg, const Arg& buf);
/// Throws unless a per-row or per-column operand holds n elements.
void check_vector(const RowCall& call, const char* arg, const Arg& buf, std::int64_t n);

/// Calls f.template operator()<T>() with T the element tag of `dtype` (f32, f16 or bf16).
template <class F>
void with_float_dtype(ir::DType dtype, F&& f) {
  switch (dtype) {
    case ir::DType::f16: return f.template operator()<tl::f16>();
    case ir::DType::bf16: return f.template operator()<tl::bf16>();
    default: return f.template operator()<tl::f32>();
  }
}

/// Bytes per element of dtype tag T.
template <class T>
constexpr int element_bytes_of() {
  return ir::dtype_bytes(T::id);
}

/// The Kernel of tile program Fn for `shape`, made (and traced) on first use, named name() and with
/// parameters named `params`.
template <auto Fn, class Name>
Program& kernel_for(const KernelShape& shape, Name&& name, std::span<const char* const> params) {
  static std::mutex mutex;
  static std::map<KernelShape, std::unique_ptr<Kernel<Fn>>> kernels;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& k = kernels[shape];
  if (!k) k = std::make_unique<Kernel<Fn>>(name(), shape.options(params));
  return k->program();
}

/// The row kernel of program Fn, whose rows are tiles of BLOCK elements of T: sized by row_shape and
/// named name_BLOCK.
template <auto Fn, class T, int BLOCK>
Program& row_program(const RowCall& call, const char* name, std::span<const char* const> params) {
  return kernel_for<Fn>(row_shape(call.opt.tuning, element_bytes_of<T>(), BLOCK),
                        [&] { return std::string(name) + "_" + std::to_string(BLOCK); }, params);
}

/// The name of a packed kernel of `plan` with R x C tiles: `family` ("softmax_") then "staged_rows_RxC",
/// or "rows_RxC" with "_peeled" or "_staged_store" where the plan says so.
std::string packed_name(const char* family, const PackedRows& plan, int rows, int cols);

/// Runs `program` over `grid` with `args` (or records it, when the call collects); `group`: programs per
/// resident group (KernelOptions::resident_groups); `pdl`: the launch may overlap the stream's previous
/// kernel (LaunchConfig::pdl; LaunchChain decides).
void launch(const RowCall& call, Program& program, Grid grid, std::span<const Arg> args, std::int64_t group = 1, bool pdl = false);

/// The launches of one call, in stream order: every launch after the first may overlap the one before
/// (LaunchConfig::pdl: its programs must call tl::gdc_wait) where Tuning::overlap_launches allows (the
/// rule: yes); the first waits for whatever the stream ran before the call.
class LaunchChain {
 public:
  explicit LaunchChain(const RowCall& call) : call_(call) {}
  /// Runs `program` over `grid` with `args` (or records it, when the call collects).
  void operator()(Program& program, Grid grid, std::span<const Arg> args);

 private:
  const RowCall& call_;
  bool started_ = false;
};

/// A family's launcher of one variant, for the family's launcher table.
template <class Args>
struct Launcher {
  RowVariant variant;
  void (*launch)(const RowCall& call, const Args& args);
};

/// Runs a family's launcher for `variant` on `args`: validates the tuning, resolves RowVariant::automatic
/// by the family's variant table, and calls the launcher named after the variant's entry point (or, with
/// `collect`, records the programs it would launch).
template <class Args>
void dispatch(std::span<const VariantInfo> table, std::span<const Launcher<Args>> launchers, const char* family, RowVariant variant,
              const Args& args, int element_bytes, const RowOptions& opt, std::vector<const Program*>* collect) {
  validate(opt.tuning);
  if (variant == RowVariant::automatic) variant = first_fitting(table, args.rows, args.cols, element_bytes, opt);
  const RowCall call{find_variant(table, variant, family).entry, args.rows, args.cols, opt, collect};
  for (const Launcher<Args>& l : launchers)
    if (l.variant == variant) return l.launch(call, args);
}

/// A split-row launch's plan and partials: for splits = 0 the automatic choice's plan (split_plan) with
/// the library's workspace; else the caller's splits (1 to max_splits, checked) and scratch (`first` and
/// `second`, named `first_name` and `second_name` in errors, rows x splits each), in one group.
struct SplitPartials {
  SplitPlan plan;
  Arg first, second;
};
SplitPartials split_partials(const RowCall& call, std::int64_t splits, const Arg& first, const Arg& second, const char* first_name,
                             const char* second_name, int element_bytes, std::int64_t max_splits, std::int64_t piece);

/// Calls launch_pair(first_row, grid) for each group of `plan` over the call's rows: grid is the group's
/// rows by plan.splits.
template <class F>
void for_each_group(const RowCall& call, const SplitPlan& plan, F&& launch_pair) {
  for (std::int64_t first = 0; first < call.rows; first += plan.group) launch_pair(first, Grid(std::min(plan.group, call.rows - first), plan.splits));
}

/// How a staged kernel holds its rows: `split` (programs per row, a thread-block cluster past one, and each
/// one's chunk of columns), whether each chunk is copied from the vector boundary before it (`peel`), and
/// the columns its stage holds (`stage_cols`, for with_stage).
struct StagedPlan {
  ClusterSplit split;
  bool peel;
  std::int64_t stage_cols;
};
/// The plan of a staged launch: `splits` programs per row (0: Tuning::staged_cluster where set, else
/// auto_stage_split over stages of at most `stage_bytes`, or Tuning::stage_bytes: the fewest, up to 8,
/// then 8 or 16; 9 to 16 take stages of up to kClusterStageMaxCols columns: the launchers'
/// with_stage<kClusterStageMaxCols>), checked
/// by cluster_split, and more than one only where the GPU has clusters (sm_90); errors name `alternative`
/// as the kernel that runs anywhere.
/// `peel` is the family's rule for the rows, taken where a chunk's window fits one stage.
StagedPlan staged_plan(const RowCall& call, std::int64_t splits, int element_bytes, std::int64_t stage_bytes, bool peel,
                       const char* alternative);

/// The plan of a resident launch (RowVariant::resident): each row over as many programs as stages of at
/// most `stage_bytes` (or Tuning::stage_bytes) hold, any number of them; with `peel` (peeled(): the family's
/// rule, for rows that are not whole vectors) each chunk is copied from the vector boundary before it, its
/// window within one stage.
StagedPlan resident_plan(const RowCall& call, int element_bytes, std::int64_t stage_bytes, bool peel);

/// Rows each cooperative launch of a resident kernel of `shape` covers, `splits` programs each: as many as
/// the GPU keeps resident at once (the programs per SM that the stages of `stage_bytes` leave, on every SM;
/// on the interpreter two rows, so that its tests run several waves). Throws, naming `alternative`, when
/// one row takes more programs than that.
std::int64_t resident_wave_rows(const RowCall& call, const KernelShape& shape, std::int64_t stage_bytes, std::int64_t splits,
                                const char* alternative);

/// Programs of a kernel that strides over rows in steps of its program count, which must be a multiple
/// of `multiple`: as many as `shape` keeps resident on the GPU (shape.min_programs per SM, 2 when it asks
/// for none), rounded down to a multiple, at most a program per row with the rows rounded up to a
/// multiple, or for clusters of shape.cluster > 1 programs (a row each; `multiple` is the cluster) a
/// cluster per row (on the interpreter: two multiples at most, so that its programs too stride over
/// several rows). For clusters, so that every cluster starts at once: no more than the driver says the GPU
/// holds of `program` launched with `args` (Program::resident_cluster_programs; it compiles the kernel),
/// or where it cannot say, one cluster fewer per GPC (kSmsPerGpc) than the slots hold.
std::int64_t strided_programs(const RowCall& call, const KernelShape& shape, int multiple, Program* program = nullptr,
                              std::span<const Arg> args = {});

/// How a looped kernel over `block`-column pieces shares each row among a cluster: `splits` programs
/// (Tuning::looped_cluster, else looped_cluster_rule; 1: one program per row, the plan's other fields
/// unused) of `chunk` columns each (a whole number of pieces of the row, or of its aligned window with
/// `peel`), and the cluster kernel's shape (looped_shape, the cluster, and as many programs an SM as one
/// program per row keeps, kLoopedResidentThreads, where ptxas fits them without spilling: the cluster's
/// indices cost registers). An error names the call's kernel where clusters are asked of a target that
/// has none. With Tuning::looped_groups the row's programs are a resident group instead (shape.groups,
/// no cluster; any number of them, the launch cooperative).
struct LoopedCluster {
  KernelShape shape;
  std::int64_t splits, chunk;
};
LoopedCluster looped_cluster(const RowCall& call, int element_bytes, bool peel, std::int64_t block);

/// Programs of a launch of `plan` over rows of `element_bytes`: the clusters (or resident groups: as many
/// as the GPU holds of `program`, Program::resident_group_programs) strided_programs starts at once, but
/// no more rows in flight than kL2ReusePercent of the L2 holds (each row's second pass then finds it
/// there). An error names the call's kernel where one group does not fit the GPU.
std::int64_t looped_cluster_programs(const RowCall& call, const LoopedCluster& plan, int element_bytes, Program& program,
                                     std::span<const Arg> args);

/// An i32 scalar argument.
inline Arg i32(std::int64_t v) { return Arg::of_i32(static_cast<std::int32_t>(v)); }

}  // namespace tilefuse::kernels
