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

bool staged_fits(std::int64_t, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return stages_hold(tilefuse::target(opt.backend), cols, auto_stage_cols(element_bytes, opt.tuning));
}

// Rows too wide for one program: staged (read once) where it fits, unless the looped kernel's second
// pass finds its rows in the L2: then the looped kernel, which keeps more rows in flight than stages of
// them fit in shared memory (staged_over_looped).
bool staged_chosen(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return staged_over_looped(tilefuse::target(opt.backend), rows, cols, element_bytes, auto_stage_cols(element_bytes, opt.tuning),
                            softmax_launch::kLoopBlock, opt.tuning);
}

// Few wide rows: split when the read-once choice (one program per row, or a staged cluster of up to 8)
// would leave the GPU short of programs.
bool split_fits(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const std::int64_t piece = auto_stage_cols(element_bytes, opt.tuning);
  const std::int64_t per_row =
      !one_program_fits(rows, cols, element_bytes, opt) && staged_fits(rows, cols, element_bytes, opt) ? (cols + piece - 1) / piece : 1;
  return few_rows(tilefuse::target(opt.backend), rows * per_row, cols, softmax_launch::kLoopBlock);
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

bool softmax_staged_fits(std::int64_t cols, int element_bytes, Backend backend, const Tuning& tuning) {
  return staged_fits(1, cols, element_bytes, RowOptions{backend, nullptr, tuning});
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
