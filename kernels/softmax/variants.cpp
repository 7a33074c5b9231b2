// The softmax variant table, the automatic choice that reads it, and the dispatch from a call to its
// variant's launcher (or, for inspection, to the programs it would launch).
#include "kernels/softmax/launchers.hpp"

namespace tilefuse::kernels {

namespace {

// One program per row up to kSoftmaxMaxCols, but half rows that are not whole vectors whose window takes
// one tile of kSoftmaxMaxCols (row_pieces: past seven eighths of it, or a row too narrow for the seven
// pieces' unmasked six): they measured 0.74-0.86 x copy against the staged or looped kernels' 0.86-0.92
// (bench/NOTES.md), where rows held as pieces lead. Other rows held as one such tile take it where the
// program, alone on its SM, keeps DRAM busy (one_tile_keeps_dram_busy: f32 rows; half rows on GPUs of
// less bandwidth per SM than the H200).
bool one_program_fits(std::int64_t, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  if (cols <= kWideRowElements) return true;
  if (cols > kSoftmaxMaxCols) return false;
  if (element_bytes != 4 && !whole_vectors(cols, element_bytes)) {
    const std::int64_t window = window_cols(cols, element_bytes);
    return window <= kSoftmaxMaxCols && row_pieces(window, cols) > 1;
  }
  return held_row_keeps_dram_busy(tilefuse::target(opt.backend), cols, element_bytes);
}

// Rows past 8 of auto_stage_cols' stages, on a GPU with clusters: the staged launch's own plan
// (auto_stage_split: a cluster of 8, or of 16 where 8 would leave fewer than two programs an SM), where its
// stages leave kStagedWidePrograms an SM and the launch runs kStagedWideMinWaves waves of them. Forced onto
// such rows (H100), the staged launch drew or lost under two waves; as the rule, against the looped and
// split kernels it replaces on 37 sweep shapes (H200), ahead on 26, behind on 7 (stages of 80 KB over few
// waves), +0.023 x copy on average, and 1024x262144 f32 0.68 -> 0.82 (bench/NOTES.md "The staged softmax
// past 8 stages of 64 KB").
std::optional<StageSplit> wide_stage_split(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  if (!target.gpu || !target.clusters || cols > kSoftmaxStagedMaxCols) return std::nullopt;
  const StageSplit plan =
      auto_stage_split(cols, element_bytes, stage_piece(opt.tuning, softmax_launch::kStageBytes, element_bytes), peeled(opt.tuning, cols, element_bytes));
  const std::int64_t per_sm = stages_per_sm(plan.stage_cols * element_bytes);
  if (per_sm < kStagedWidePrograms || rows * plan.splits < kStagedWideMinWaves * per_sm * target.sm_count) return std::nullopt;
  return plan;
}

// Programs a row of the staged kernel as the automatic choice takes it (0: it does not): one program or a
// cluster of up to 8 whose stages leave three programs an SM (stages_hold, auto_stage_cols), else the wide
// plan above.
std::int64_t staged_programs(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const std::int64_t piece = auto_stage_cols(element_bytes, opt.tuning);
  if (stages_hold(tilefuse::target(opt.backend), cols, piece)) return (cols + piece - 1) / piece;
  const auto wide = wide_stage_split(rows, cols, element_bytes, opt);
  return wide ? wide->splits : 0;
}

bool staged_fits(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return staged_programs(rows, cols, element_bytes, opt) > 0;
}

// Rows too wide for one program: staged (read once) where it fits, unless the looped kernel's second
// pass finds its rows in the L2: then the looped kernel, which keeps more rows in flight than stages of
// them fit in shared memory (staged_over_looped).
bool staged_chosen(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return staged_over_looped(tilefuse::target(opt.backend), rows, cols * element_bytes, staged_fits(rows, cols, element_bytes, opt),
                            softmax_launch::kLoopBlock, opt.tuning);
}

// Few wide rows: split when the read-once choice (one program per row, or a staged cluster) would leave
// the GPU short of programs.
bool split_fits(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const std::int64_t staged = one_program_fits(rows, cols, element_bytes, opt) ? 0 : staged_programs(rows, cols, element_bytes, opt);
  return few_rows(tilefuse::target(opt.backend), rows * std::max<std::int64_t>(1, staged), cols, softmax_launch::kLoopBlock);
}

// In order of preference: the first entry whose `fits` holds is the automatic choice.
constexpr VariantInfo kVariants[] = {
    {RowVariant::split, "softmax_split", "each row over several programs and two kernels, partials in scratch (few wide rows)", 2,
     true, false, 0, split_fits},
    {RowVariant::one_program, "softmax", "one program per row, the row in registers", 1, false, false, kSoftmaxMaxCols, one_program_fits},
    {RowVariant::staged, "softmax_staged", "the row staged through shared memory (cp.async), a cluster per row past 32 KB", 1, false, true,
     kSoftmaxStagedMaxCols, staged_chosen},
    {RowVariant::looped, "softmax_looped", "one program per row looping over it, online max and sum", 2, false, false, 0,
     always_fits},
    {RowVariant::cluster, "softmax_cluster", "a row over a thread-block cluster, in registers (DSMEM)", 1, false, true, kSoftmaxClusterMaxCols, nullptr},
    {RowVariant::resident, "softmax_resident",
     "each row staged over a group of programs resident at once, max and sum combined through global memory (read once; one "
     "cooperative launch per wave of rows)",
     1, false, false, 0, nullptr},
};

// The launcher of each variant.
constexpr Launcher<detail::SoftmaxArgs> kLaunchers[] = {
    {RowVariant::one_program, softmax_launch::one_program}, {RowVariant::looped, softmax_launch::looped}, {RowVariant::split, softmax_launch::split},
    {RowVariant::cluster, softmax_launch::cluster},         {RowVariant::staged, softmax_launch::staged},
    {RowVariant::resident, softmax_launch::resident},
};

// Runs (or, with `collect`, records the programs of) `variant` on `a`; the automatic choice runs what was
// tuned for the shape when opt.tune asks for it.
void run(RowVariant variant, const detail::SoftmaxArgs& a, const RowOptions& opt, std::vector<const Program*>* collect) {
  if (variant == RowVariant::automatic && opt.tune != TuneMode::off && !collect)
    if (const auto tuned = detail::softmax_tuned(a, opt))
      return dispatch<detail::SoftmaxArgs>(kVariants, kLaunchers, "softmax", tuned->variant, a, ir::dtype_bytes(a.in.dtype),
                                           options_of(opt, *tuned), collect);
  dispatch<detail::SoftmaxArgs>(kVariants, kLaunchers, "softmax", variant, a, ir::dtype_bytes(a.in.dtype), opt, collect);
}

// Operands for inspection: `count` elements of `dtype` nowhere (nothing runs).
Arg placeholder(ir::DType dtype, std::int64_t count) { return Arg::host_memory_of(dtype, nullptr, static_cast<std::size_t>(count)); }

}  // namespace

std::span<const VariantInfo> softmax_variants() { return kVariants; }

RowVariant softmax_choice(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return first_fitting(kVariants, rows, cols, element_bytes, opt);
}

bool softmax_staged_fits(std::int64_t rows, std::int64_t cols, int element_bytes, Backend backend, const Tuning& tuning) {
  return staged_fits(rows, cols, element_bytes, RowOptions{backend, nullptr, tuning});
}

void detail::softmax(RowVariant variant, const SoftmaxArgs& args, const RowOptions& opt) { run(variant, args, opt, nullptr); }

void detail::softmax_unfused(const SoftmaxArgs& args, const Arg (&scratch)[4], const RowOptions& opt) {
  validate(opt.tuning);
  softmax_launch::unfused(RowCall{"softmax_unfused", args.rows, args.cols, opt}, args, scratch);
}

std::vector<const Program*> softmax_programs(RowVariant variant, ir::DType dtype, std::int64_t cols, const RowOptions& opt,
                                             std::int64_t splits) {
  std::vector<const Program*> programs;
  const std::int64_t partials = std::max<std::int64_t>(splits, 1);
  run(variant, {placeholder(dtype, cols), placeholder(dtype, cols), 1, cols, splits, placeholder(ir::DType::f32, partials),
                placeholder(ir::DType::f32, partials)},
      opt, &programs);
  return programs;
}

std::vector<const Program*> softmax_unfused_programs(ir::DType dtype, std::int64_t cols, const RowOptions& opt) {
  std::vector<const Program*> programs;
  const Arg rows = placeholder(dtype, 1), matrix = placeholder(dtype, cols);
  const Arg scratch[4] = {rows, matrix, matrix, rows};
  softmax_launch::unfused(RowCall{"softmax_unfused", 1, cols, opt, &programs}, {matrix, matrix, 1, cols}, scratch);
  return programs;
}

}  // namespace tilefuse::kernels
