// The LayerNorm variant table, the automatic choice that reads it, and the dispatch from a call to its
// variant's launcher (or, for inspection, to the programs it would launch); RMSNorm's entry.
#include "kernels/layernorm/launchers.hpp"

namespace tilefuse::kernels {

namespace {


// One program per row up to kNormMaxCols, but half rows that are not whole vectors past
// kWideRowElements: through their windows (w and b from shifted copies) they measured 0.2-0.7 x copy
// against the staged or looped kernels' 0.72-0.87 (bench/NOTES.md).
bool one_program_fits(std::int64_t, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  if (cols <= kWideRowElements) return true;
  if (cols > kNormMaxCols || !(element_bytes == 4 || whole_vectors(cols, element_bytes))) return false;
  // A row held as one tile runs alone on its SM: taken where that keeps DRAM busy (one_tile_keeps_dram_busy).
  return held_row_keeps_dram_busy(tilefuse::target(opt.backend), cols, element_bytes);
}

// Few wide rows: split when one program per row would leave the GPU short of programs.
bool split_fits(std::int64_t rows, std::int64_t cols, int, const RowOptions& opt) {
  return few_rows(tilefuse::target(opt.backend), rows, cols, layernorm_launch::kLoopBlock);
}

// Rows too wide for one program: staged (read once, a cluster of up to 8 stages that leave three programs
// an SM, auto_stage_cols, or Tuning::stage_bytes where larger) where it fits, unless the looped kernel's
// second pass finds its rows in the L2 (staged_over_looped). Not the softmax's wider plan: LayerNorm's
// staged rows forced onto stages of 80-96 KB lost 0.03-0.09 x copy (bench/NOTES.md).
bool staged_chosen(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  return staged_over_looped(target, rows, cols * element_bytes, stages_hold(target, cols, auto_stage_cols(element_bytes, opt.tuning)),
                            layernorm_launch::kLoopBlock, opt.tuning);
}

// In order of preference: the first entry whose `fits` holds is the automatic choice. The cluster kernel
// (rows in registers over a cluster) is measured behind the staged and looped ones on every wide row
// (bench/NOTES.md) and is never chosen.
constexpr VariantInfo kVariants[] = {
    {RowVariant::split, "layernorm_split", "each row over several programs and two kernels, partial sums in scratch (few wide rows)", 2,
     true, false, 0, split_fits},
    {RowVariant::one_program, "layernorm", "one program per row, the row in registers, two-pass", 1, false, false, kNormMaxCols,
     one_program_fits},
    {RowVariant::staged, "layernorm_staged", "the row staged through shared memory, a cluster per row past 32 KB, two-pass", 1, false, true,
     kNormStagedMaxCols, staged_chosen},
    {RowVariant::looped, "layernorm_looped", "one program per row looping over it, shifted sums", 2, false, false, 0, always_fits},
    {RowVariant::cluster, "layernorm_cluster", "a row over a thread-block cluster, two-pass in registers", 1, false, true, kNormClusterMaxCols,
     nullptr},
    {RowVariant::resident, "layernorm_resident",
     "each row staged over a group of programs resident at once, sums combined through global memory, two-pass (read once; one "
     "cooperative launch per wave of rows)",
     1, false, false, 0, nullptr},
};

// The launcher of each variant.
constexpr Launcher<detail::NormArgs> kLaunchers[] = {
    {RowVariant::one_program, layernorm_launch::one_program}, {RowVariant::looped, layernorm_launch::looped}, {RowVariant::split, layernorm_launch::split},
    {RowVariant::cluster, layernorm_launch::cluster},         {RowVariant::staged, layernorm_launch::staged},
    {RowVariant::resident, layernorm_launch::resident},
};

// Runs (or, with `collect`, records the programs of) `variant` on `a`; the automatic choice runs what was
// tuned for the shape when opt.tune asks for it (LayerNorm only: the one-pass baseline is never tuned).
void run(RowVariant variant, const detail::NormArgs& a, const RowOptions& opt, std::vector<const Program*>* collect) {
  if (variant == RowVariant::automatic && opt.tune != TuneMode::off && !collect && !a.one_pass)
    if (const auto tuned = detail::layernorm_tuned(a, opt))
      return dispatch<detail::NormArgs>(kVariants, kLaunchers, "layernorm", tuned->variant, a, ir::dtype_bytes(a.x.dtype),
                                        options_of(opt, *tuned), collect);
  dispatch<detail::NormArgs>(kVariants, kLaunchers, "layernorm", variant, a, ir::dtype_bytes(a.x.dtype), opt, collect);
}

// Operands for inspection: `count` elements of `dtype` nowhere (nothing runs).
Arg placeholder(ir::DType dtype, std::int64_t count) { return Arg::host_memory_of(dtype, nullptr, static_cast<std::size_t>(count)); }

detail::NormArgs placeholders(ir::DType dtype, std::int64_t cols, std::int64_t splits) {
  const Arg matrix = placeholder(dtype, cols), row = placeholder(ir::DType::f32, 1), partials = placeholder(ir::DType::f32, splits);
  return detail::NormArgs{matrix, matrix, matrix, matrix, row, row, 1, cols, 1e-5f, splits, partials, partials};
}

}  // namespace

std::span<const VariantInfo> layernorm_variants() { return kVariants; }

RowVariant layernorm_choice(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  return first_fitting(kVariants, rows, cols, element_bytes, opt);
}

void detail::layernorm(RowVariant variant, const NormArgs& args, const RowOptions& opt) { run(variant, args, opt, nullptr); }

void detail::rmsnorm(const NormArgs& args, const RowOptions& opt) {
  validate(opt.tuning);
  layernorm_launch::rmsnorm(RowCall{"rmsnorm", args.rows, args.cols, opt}, args);
}

std::vector<const Program*> layernorm_programs(RowVariant variant, ir::DType dtype, std::int64_t cols, const RowOptions& opt,
                                               std::int64_t splits, bool one_pass) {
  std::vector<const Program*> programs;
  detail::NormArgs args = placeholders(dtype, cols, std::max<std::int64_t>(splits, 1));
  args.splits = splits;
  args.one_pass = one_pass;
  run(variant, args, opt, &programs);
  return programs;
}

std::vector<const Program*> rmsnorm_programs(ir::DType dtype, std::int64_t cols, const RowOptions& opt) {
  std::vector<const Program*> programs;
  layernorm_launch::rmsnorm(RowCall{"rmsnorm", 1, cols, opt, &programs}, placeholders(dtype, cols, 1));
  return programs;
}

}  // namespace tilefuse::kernels
