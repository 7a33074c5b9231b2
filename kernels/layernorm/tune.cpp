// The LayerNorm's configuration space for the tuner, its tuning run, and the automatic choice's use of
// what was tuned (kernels/tune/tuner.hpp).
#include "kernels/layernorm/launchers.hpp"
#include "kernels/tune/operands.hpp"
#include "kernels/tune/tuner.hpp"

namespace tilefuse::kernels {

std::vector<RowConfig> layernorm_space(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  RowSpace space(opt.tuning);  // the rules, the default, first
  if (cols <= kNormMaxCols) {
    space.add(RowVariant::one_program);
    for (int e : one_program_elements(cols)) space.add(RowVariant::one_program, [&](Tuning& t) { t.row_elements = e; });
    for (int r : {1024, 2048}) space.add(RowVariant::one_program, [&](Tuning& t) { t.resident_threads = r; });
    if (packable_rows(cols, element_bytes))  // narrow rows: the other way of holding them
      space.add(RowVariant::one_program, [&](Tuning& t) { t.pack_rows = !packed_rows(opt.tuning, cols, cols, element_bytes); });
    narrow_row_configs(space, cols, element_bytes, opt.tuning, /*column_operands=*/true);
  }
  if (!whole_vectors(cols, element_bytes))  // rows that are not whole vectors: the other way of reading them
    space.add(RowVariant::automatic, [&](Tuning& t) { t.peel = !layernorm_launch::norm_peeled(opt.tuning, cols, element_bytes); });
  if (cols <= kNormMaxCols && element_bytes < 4 && layernorm_launch::norm_peeled(opt.tuning, cols, element_bytes)) {
    // Half rows through windows: one row a program or strided, and strided with each next row copied ahead
    // the other way than the rule (rows_ahead_pays).
    for (bool s : {false, true}) space.add(RowVariant::one_program, [&](Tuning& t) { t.stride_rows = s; });
    space.add(RowVariant::one_program, [&](Tuning& t) {
      t.stride_rows = true;
      t.rows_ahead = !layernorm_launch::rows_ahead_pays(window_cols(cols, element_bytes), element_bytes);
    });
  }
  // Every width the automatic choice may run the staged kernel at (a cluster of up to 8 stages past one;
  // LayerNorm's clusters of 16 measured slower, bench/NOTES.md): rows read through windows measured
  // faster at 4 and 8 warps, whole-vector rows at 2 (bench/NOTES.md).
  if (cols <= kStageMaxCols || (target.clusters && cols <= kMaxPortableClusterSize * kStageMaxCols))
    for (int w : {2, 4, 8}) space.add(RowVariant::staged, [&](Tuning& t) { t.staged_warps = w; });
  if (target.clusters && cols <= kNormClusterMaxCols) space.add(RowVariant::cluster);
  space.add(RowVariant::looped);
  looped_cluster_configs(space, target, cols, layernorm_launch::kLoopBlock);
  if (cols >= 2 * layernorm_launch::kLoopBlock) {
    space.add(RowVariant::split);
    // Rows of a group sharing w and b in the second kernel, where the automatic plan's groups hold that
    // many to share (split_combine_rows halves a count they do not; the halved count is in the space
    // already, or is the rule's one row).
    if (rows > 0) {
      const SplitPlan plan = split_plan(target, rows, cols, element_bytes, layernorm_launch::kLoopBlock, kNormMaxSplits, opt.tuning);
      for (int k : {2, 4}) {
        Tuning asked = opt.tuning;
        asked.split_combine_rows = k;
        if (layernorm_launch::split_combine_rows_run(plan, rows, cols, element_bytes, asked) == k)
          space.add(RowVariant::split, [&](Tuning& t) { t.split_combine_rows = k; });
      }
    }
  }
  return std::move(space).configs();
}

TuneReport detail::tune_layernorm(const NormArgs& args, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  const int bytes = ir::dtype_bytes(args.x.dtype);
  TuneMatrices m(args.x, tune_sets(target, args.rows * args.cols * bytes), opt.stream);
  const Arg mean = m.scratch(ir::DType::f32, static_cast<std::size_t>(args.rows));
  const Arg rstd = m.scratch(ir::DType::f32, static_cast<std::size_t>(args.rows));
  std::vector<TuneCandidate> candidates;
  for (const RowConfig& c : layernorm_space(args.rows, args.cols, bytes, opt)) {
    candidates.push_back({c, [&m, &args, mean, rstd, o = options_of(opt, c), c](int set) {
                            NormArgs a = args;
                            a.x = m.in(set);
                            a.y = m.out(set);
                            a.mean = mean;
                            a.rstd = rstd;
                            a.splits = 0;
                            layernorm(c.variant, a, o);
                          }});
  }
  // Two-pass and shifted one-pass variances differ by a few f32 ulps of the variance.
  const double tolerance = args.x.dtype == ir::DType::f32 ? 1e-4 : 1e-2;
  return tune(matrix_tune_run("layernorm", args.rows, args.cols, opt, m, tolerance), candidates);
}

std::optional<RowConfig> detail::layernorm_tuned(const NormArgs& args, const RowOptions& opt) {
  return tuned_for("layernorm", args.rows, args.cols, args.x.dtype, opt, [&] { return tune_layernorm(args, opt); });
}

}  // namespace tilefuse::kernels
