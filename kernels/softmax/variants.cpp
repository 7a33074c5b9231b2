// The softmax variant table, the automatic choice that reads it, and the dispatch from a call to its
// variant's launcher (or, for inspection, to the programs it would launch).
#include "kernels/softmax/launchers.hpp"

namespace tilefuse::kernels {

namespace {

std::int64_t one_program_cols(int, const Tuning&) { return kSoftmaxMaxCols; }
std::int64_t cluster_cols(int, const Tuning&) { return kSoftmaxClusterMaxCols; }
std::int64_t staged_cols(int, const Tuning&) { return kSoftmaxStagedMaxCols; }
std::int64_t any_cols(int, const Tuning&) { return 0; }

bool one_program_fits(std::int64_t cols, int, const RowOptions&) { return cols <= kSoftmaxMaxCols; }
bool anything_fits(std::int64_t, int, const RowOptions&) { return true; }

// Columns one staged program holds when its stage is at most `stage_bytes`.
std::int64_t stage_piece(std::int64_t stage_bytes, int element_bytes) { return std::min<std::int64_t>(kStageMaxCols, stage_bytes / element_bytes); }

bool staged_fits(std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const std::int64_t piece = stage_piece(std::max(opt.tuning.stage_bytes.value_or(32768), kSoftmaxAutoMaxStageBytes), element_bytes);
  return cols <= piece || (cols <= 8 * piece && tilefuse::target(opt.backend).clusters);
}

// In order of preference: the first entry whose `fits` holds is the automatic choice.
constexpr VariantInfo kVariants[] = {
    {RowVariant::one_program, "softmax", "one program per row, the row in registers", 1, false, false, one_program_cols, one_program_fits},
    {RowVariant::staged, "softmax_staged", "the row staged through shared memory (cp.async), a cluster per row past 32 KB", 1, false, true,
     staged_cols, staged_fits},
    {RowVariant::looped, "softmax_looped", "one program per row looping over it, online max and sum", 2, false, false, any_cols,
     anything_fits},
    {RowVariant::cluster, "softmax_cluster", "a row over a thread-block cluster, in registers (DSMEM)", 1, false, true, cluster_cols, nullptr},
    {RowVariant::split, "softmax_split", "each row over several programs and two kernels, partials in scratch", 2, true, false, any_cols,
     nullptr},
};

const VariantInfo& info(RowVariant v) {
  for (const VariantInfo& i : kVariants)
    if (i.variant == v) return i;
  throw std::invalid_argument(std::string("tilefuse softmax: no variant ") + variant_name(v));
}

// Runs (or, with `collect`, records the programs of) `variant` on `a`.
void run(RowVariant variant, const detail::SoftmaxArgs& a, const RowOptions& opt, std::vector<const Program*>* collect) {
  validate(opt.tuning);
  if (variant == RowVariant::automatic) variant = softmax_choice(a.cols, ir::dtype_bytes(a.in.dtype), opt);
  const RowCall call{info(variant).entry, a.rows, a.cols, opt, collect};
  switch (variant) {
    case RowVariant::one_program: return softmax_launch::one_program(call, a);
    case RowVariant::looped: return softmax_launch::looped(call, a);
    case RowVariant::split: return softmax_launch::split(call, a);
    case RowVariant::cluster: return softmax_launch::cluster(call, a);
    case RowVariant::staged: return softmax_launch::staged(call, a);
    case RowVariant::automatic: break;
  }
}

// Operands for inspection: `count` elements of `dtype` nowhere (nothing runs).
Arg placeholder(ir::DType dtype, std::int64_t count) { return Arg::host_memory_of(dtype, nullptr, static_cast<std::size_t>(count)); }

}  // namespace

std::span<const VariantInfo> softmax_variants() { return kVariants; }

RowVariant softmax_choice(std::int64_t cols, int element_bytes, const RowOptions& opt) {
  for (const VariantInfo& v : kVariants)
    if (v.fits && v.fits(cols, element_bytes, opt)) return v.variant;
  return RowVariant::looped;
}

bool softmax_staged_fits(std::int64_t cols, int element_bytes, Backend backend, const Tuning& tuning) {
  return staged_fits(cols, element_bytes, RowOptions{backend, nullptr, tuning});
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
