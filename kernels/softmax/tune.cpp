// The softmax's configuration space for the tuner, its tuning run, and the automatic choice's use of what
// was tuned (kernels/tune/tuner.hpp).
#include <algorithm>

#include "kernels/reference.hpp"
#include "kernels/softmax/launchers.hpp"
#include "kernels/tune/operands.hpp"
#include "kernels/tune/tuner.hpp"

namespace tilefuse::kernels {

std::vector<RowConfig> softmax_space(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  RowSpace space(opt.tuning);  // the rules, the default, first
  if (cols <= kSoftmaxMaxCols) {
    space.add(RowVariant::one_program);
    for (int e : one_program_elements(cols)) space.add(RowVariant::one_program, [&](Tuning& t) { t.row_elements = e; });
    if (packable_rows(cols, element_bytes))  // narrow rows: the other way of holding them
      space.add(RowVariant::one_program, [&](Tuning& t) { t.pack_rows = !packed_rows(opt.tuning, cols, cols, element_bytes); });
    narrow_row_configs(space, cols, element_bytes, opt.tuning, /*column_operands=*/false);
  }
  if (peeled(opt.tuning, cols, element_bytes)) space.add(RowVariant::automatic, [](Tuning& t) { t.peel = false; });
  if (cols <= kSoftmaxStagedMaxCols)
    for (int w : {1, 2, 4})
      for (std::int64_t s : {32768, 65536})
        space.add(RowVariant::staged, [&](Tuning& t) {
          t.staged_warps = w;
          t.stage_bytes = s;
        });
  if (target.clusters && cols <= kSoftmaxClusterMaxCols) space.add(RowVariant::cluster);
  space.add(RowVariant::looped);
  for (int k : {1, 2, 4}) space.add(RowVariant::looped, [&](Tuning& t) { t.looped_programs_per_sm = k; });
  looped_cluster_configs(space, target, cols, softmax_launch::kLoopBlock);
  if (cols >= 2 * softmax_launch::kLoopBlock) space.add(RowVariant::split);
  (void)rows;
  return std::move(space).configs();
}

TuneReport detail::tune_softmax(const SoftmaxArgs& args, const RowOptions& opt) {
  const Target target = tilefuse::target(opt.backend);
  const int bytes = ir::dtype_bytes(args.in.dtype);
  TuneMatrices m(args.in, tune_sets(target, args.rows * args.cols * bytes), opt.stream);
  std::vector<TuneCandidate> candidates;
  for (const RowConfig& c : softmax_space(args.rows, args.cols, bytes, opt)) {
    candidates.push_back({c, [&m, &args, o = options_of(opt, c), c](int set) {
                            SoftmaxArgs a = args;
                            a.in = m.in(set);
                            a.out = m.out(set);
                            a.splits = 0;
                            softmax(c.variant, a, o);
                          }});
  }
  // Every variant computes in f32 and rounds once: outputs agree to a few f32 ulps, far inside a half
  // type's spacing; an f32 softmax's sums in another order differ by about 1e-6.
  const double tolerance = args.in.dtype == ir::DType::f32 ? 1e-5 : 1e-2;
  return tune(matrix_tune_run("softmax", args.rows, args.cols, opt, m, tolerance), candidates);
}

std::optional<RowConfig> detail::softmax_tuned(const SoftmaxArgs& args, const RowOptions& opt) {
  return tuned_for("softmax", args.rows, args.cols, args.in.dtype, opt, [&] { return tune_softmax(args, opt); });
}

}  // namespace tilefuse::kernels
