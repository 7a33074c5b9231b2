// The rules that size the sample row kernels (see rules.hpp), and the variant tables' lookups.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "kernels/rows/rules.hpp"
#include "kernels/rows/shapes.hpp"
#include "kernels/rows/workspace.hpp"

namespace tilefuse::kernels {

namespace {

// Threads per SM ptxas is asked to make room for: Tuning::resident_threads, else the kernel's rule.
int resident_threads(const Tuning& tuning, int rule) { return tuning.resident_threads.value_or(rule); }

// Programs per SM that `resident` threads make for programs of `warps` warps (0: no request).
int min_programs(int resident, int warps) { return resident > 32 * warps ? resident / (32 * warps) : 0; }

template <class T>
void check_range(const std::optional<T>& v, T lo, T hi, bool pow2, const char* field, const char* what) {
  if (!v) return;
  const bool ok = *v >= lo && *v <= hi && (!pow2 || std::has_single_bit(static_cast<std::uint64_t>(*v)));
  if (!ok)
    throw std::invalid_argument(std::string("tilefuse kernels: Tuning::") + field + " must be " + what + ", got " +
                                std::to_string(*v));
}

}  // namespace

int resident_programs(const Tuning& tuning, int resident_rule, int warps) { return min_programs(resident_threads(tuning, resident_rule), warps); }

const char* variant_name(RowVariant v) {
  switch (v) {
    case RowVariant::automatic: return "automatic";
    case RowVariant::one_program: return "one_program";
    case RowVariant::looped: return "looped";
    case RowVariant::split: return "split";
    case RowVariant::cluster: return "cluster";
    case RowVariant::staged: return "staged";
    case RowVariant::resident: return "resident";
  }
  return "?";
}

bool always_fits(std::int64_t, std::int64_t, int, const RowOptions&) { return true; }

const VariantInfo& find_variant(std::span<const VariantInfo> table, RowVariant variant, const char* family) {
  for (const VariantInfo& v : table)
    if (v.variant == variant) return v;
  throw std::invalid_argument(std::string("tilefuse ") + family + ": no variant " + variant_name(variant));
}

RowVariant first_fitting(std::span<const VariantInfo> table, std::int64_t rows, std::int64_t cols, int element_bytes,
                         const RowOptions& opt) {
  for (const VariantInfo& v : table)
    if (v.fits && v.fits(rows, cols, element_bytes, opt)) return v.variant;
  return table.back().variant;
}

KernelOptions KernelShape::options(std::span<const char* const> params) const {
  KernelOptions o;
  o.num_warps = warps;
  o.param_names.assign(params.begin(), params.end());
  o.min_programs_per_sm = min_programs;
  o.cluster_size = cluster;
  o.shared_carveout = carveout;
  o.resident_groups = groups;
  o.min_programs_unless_spilling = min_programs_unless_spilling;
  o.l2_evict_last = evict_last;
  if (!constant.empty()) o.constant_params.emplace_back(constant);
  return o;
}

void validate(const Tuning& t) {
  check_range(t.row_elements, 1, 64, true, "row_elements", "a power of two from 1 to 64");
  check_range(t.resident_threads, 0, 2048, false, "resident_threads", "from 0 to 2048");
  check_range(t.staged_warps, 1, 32, true, "staged_warps", "a power of two from 1 to 32");
  check_range(t.stage_bytes, std::int64_t{8192}, std::int64_t{131072}, false, "stage_bytes", "from 8192 to 131072");
  check_range(t.shared_carveout, -1, 100, false, "shared_carveout", "from -1 to 100");
  check_range(t.looped_programs_per_sm, 1, 64, false, "looped_programs_per_sm", "from 1 to 64");
  check_range(t.looped_cluster, 1, 8, false, "looped_cluster", "from 1 to 8");
  static_assert(kMaxClusterSize == 16, "staged_cluster's message names the bound");
  check_range(t.staged_cluster, 1, kMaxClusterSize, false, "staged_cluster", "from 1 to 16");
  static_assert(kMaxLoopedGroup == 4096, "looped_groups' message names the bound");
  check_range(t.looped_groups, 0, kMaxLoopedGroup, false, "looped_groups", "from 0 to 4096");
  check_range(t.split_programs_per_sm, 1, 64, false, "split_programs_per_sm", "from 1 to 64");
  check_range(t.split_combine_rows, 1, 4, true, "split_combine_rows", "1, 2 or 4");
  check_range(t.split_group_bytes, std::int64_t{1} << 20, std::int64_t{1} << 30, false, "split_group_bytes", "from 2^20 to 2^30");
}

int row_warps(std::int64_t block, int per_thread) {
  return static_cast<int>(std::clamp<std::int64_t>(block / (32 * per_thread), 1, 32));
}

// Two warps at least: one-warp programs of halves left the SM short of bytes in flight (bench/NOTES.md).
int row_elements_per_thread(const Tuning& tuning, int element_bytes, std::int64_t block) {
  if (tuning.row_elements) return *tuning.row_elements;
  int n = 64 / element_bytes;
  while (n > 16 && block / n < 64) n /= 2;
  return n;
}

KernelShape row_shape(const Tuning& tuning, int element_bytes, std::int64_t block, int resident_rule) {
  const int warps = row_warps(block, row_elements_per_thread(tuning, element_bytes, block));
  return KernelShape{warps, resident_programs(tuning, resident_rule, warps), 1, row_carveout(tuning)};
}

// 16 elements per thread for every dtype: 32 halves per thread made the looped softmax slower (bench/NOTES.md).
// Evict-last first passes: +0.00 to +0.02 x copy on the looped rows, -0.00 to -0.05 on the split ones (H100).
KernelShape looped_shape(const Tuning& tuning, std::int64_t block) {
  KernelShape s = row_shape(tuning, 4, block);
  s.evict_last = tuning.keep_rows_in_l2.value_or(true);
  return s;
}

KernelShape split_shape(const Tuning& tuning, std::int64_t block) {
  KernelShape s = looped_shape(tuning, block);
  s.evict_last = tuning.keep_rows_in_l2.value_or(false);
  return s;
}

// Per piece rounded up, not down: fewer, fuller threads measured faster for three pieces (bench/NOTES.md).
// Past kWideRowElements, 16 warps: at 32 the pieces of halves measured 0.2-0.3 x copy slower (bench/NOTES.md).
KernelShape pieces_shape(const Tuning& tuning, int element_bytes, std::int64_t piece, int pieces, int resident_rule) {
  if (pieces == 1) return row_shape(tuning, element_bytes, piece, resident_rule);
  const std::int64_t row = piece * pieces;
  const int per_thread = row > kWideRowElements && !tuning.row_elements ? static_cast<int>((row + 511) / 512)
                                                                          : row_elements_per_thread(tuning, element_bytes, row);
  int per_piece = static_cast<int>(std::bit_ceil(static_cast<unsigned>((per_thread + pieces - 1) / pieces)));
  // Two warps at least where a thread would hold more than 16 elements of the row (the rule of
  // row_elements_per_thread for one piece).
  while (per_piece > 1 && per_piece * pieces > 16 && piece / per_piece < 64) per_piece /= 2;
  const int warps = row_warps(piece, per_piece);
  return KernelShape{warps, resident_programs(tuning, resident_rule, warps), 1, row_carveout(tuning)};
}

int row_carveout(const Tuning& tuning) { return tuning.shared_carveout.value_or(kRowCarveout); }

std::int64_t stages_per_sm(std::int64_t stage_bytes) { return (228 * 1024) / (stage_bytes + 1024); }

int staged_warps_rule(bool peel) { return peel ? 4 : 2; }

KernelShape staged_shape(const Tuning& tuning, std::int64_t stage_bytes, int warps_rule) {
  const int warps = tuning.staged_warps.value_or(warps_rule);
  const int rule = static_cast<int>(std::min<std::int64_t>(2048, stages_per_sm(stage_bytes) * 32 * warps));
  return KernelShape{warps, resident_programs(tuning, rule, warps), 1, row_carveout(tuning)};
}

ClusterSplit cluster_split(const char* kernel, const char* alternative, std::int64_t rows, std::int64_t cols,
                           std::int64_t splits, std::int64_t max_piece, std::int64_t max_splits) {
  if (cols > max_splits * max_piece)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": cols = " + std::to_string(cols) +
                                " exceeds the cluster limit of " + std::to_string(max_splits * max_piece) + " elements (" +
                                std::to_string(max_splits) + " programs of " + std::to_string(max_piece) + "; " + alternative +
                                " takes rows of any width)");
  if (splits == 0) splits = (cols + max_piece - 1) / max_piece;
  const std::int64_t chunk = splits > 0 ? cluster_chunk(cols, splits) : 0;
  if (splits < 1 || splits > max_splits || chunk > max_piece)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument splits: expected 0 (automatic) or 1 to " +
                                std::to_string(max_splits) + " with at most " +
                                std::to_string(max_piece) + " columns each, got " + std::to_string(splits) + " for " +
                                std::to_string(cols) + " columns");
  if (rows * splits > 2147483647)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": rows x splits = " + std::to_string(rows * splits) +
                                " exceeds 2^31-1 programs");
  return {splits, chunk};
}

std::int64_t split_row_chunk(const char* kernel, std::int64_t cols, std::int64_t splits, std::int64_t max_splits,
                             std::int64_t block) {
  if (splits < 1 || splits > max_splits || splits > 65535)
    throw std::invalid_argument(std::string("tilefuse ") + kernel + ": argument splits: expected 1 to " +
                                std::to_string(max_splits) + ", got " + std::to_string(splits));
  return ((cols + splits - 1) / splits + block - 1) / block * block;
}

bool one_tile_keeps_dram_busy(const Target& target, std::int64_t row_bytes) {
  if (!target.gpu || target.memory_bandwidth <= 0 || target.sm_count <= 0) return true;
  // The row's load at bandwidth / sm_count bytes per second, in nanoseconds.
  const double ns = static_cast<double>(row_bytes) * target.sm_count * 1e9 / static_cast<double>(target.memory_bandwidth);
  return ns >= static_cast<double>(kOneTileMinLoadNs);
}

bool held_row_keeps_dram_busy(const Target& target, std::int64_t cols, int element_bytes) {
  return row_pieces(cols, cols) > 1 || one_tile_keeps_dram_busy(target, cols * element_bytes);
}

bool few_rows(const Target& target, std::int64_t programs, std::int64_t cols, std::int64_t piece) {
  return target.gpu && programs < 2 * std::int64_t{target.sm_count} && cols >= 2 * piece;
}

namespace {
// The looped programs of `warps` warps a GPU holds at once: kLoopedResidentThreads (or
// Tuning::resident_threads) a SM, at most Tuning::looped_programs_per_sm.
std::int64_t looped_resident(const Target& target, int warps, const Tuning& tuning) {
  std::int64_t per_sm = std::max(1, tuning.resident_threads.value_or(kLoopedResidentThreads) / (32 * std::max(1, warps)));
  if (tuning.looped_programs_per_sm) per_sm = std::min<std::int64_t>(per_sm, *tuning.looped_programs_per_sm);
  return per_sm * std::max(1, target.sm_count);
}

// Whether `rows` rows of `row_bytes` in flight fill at most kL2ReusePercent of the L2.
bool rows_fit_l2(const Target& target, std::int64_t rows, std::int64_t row_bytes) {
  return rows * row_bytes * 100 <= target.l2_bytes * kL2ReusePercent;
}
}  // namespace

bool looped_rereads_fit_l2(const Target& target, std::int64_t rows, std::int64_t row_bytes, int warps, const Tuning& tuning) {
  if (!target.gpu) return true;
  if (rows < 2 * std::int64_t{std::max(1, target.sm_count)}) return false;
  return rows_fit_l2(target, std::min(rows, looped_resident(target, warps, tuning)), row_bytes);
}

int looped_cluster_rule(const Target& target, std::int64_t rows, std::int64_t row_bytes, int warps, const Tuning& tuning) {
  if (!target.gpu || !target.clusters || rows < 2 * std::int64_t{std::max(1, target.sm_count)}) return 1;
  for (int k : {1, 2, 4, 8})  // clusters of k keep 1/k of the rows in flight
    if (rows_fit_l2(target, std::min(rows, looped_resident(target, warps, tuning) / k), row_bytes)) return k;
  return 8;
}

std::int64_t auto_stage_cols(int element_bytes, const Tuning& tuning) {
  std::int64_t cols = kStageMaxCols;
  while (cols > kStageGranule && stages_per_sm(cols * element_bytes) < kStagedMinPrograms) cols -= kStageGranule;
  return std::min(kStageMaxCols, std::max(cols, tuning.stage_bytes.value_or(0) / element_bytes));
}

std::int64_t stage_piece(const Tuning& tuning, std::int64_t stage_bytes, int element_bytes) {
  return std::min<std::int64_t>(kStageMaxCols, tuning.stage_bytes.value_or(stage_bytes) / element_bytes);
}

std::int64_t cluster_chunk(std::int64_t cols, std::int64_t splits) { return ((cols + splits - 1) / splits + 7) / 8 * 8; }

bool stage_windowed(std::int64_t chunk, int element_bytes, bool peel, std::int64_t max_stage) {
  return peel && window_cols(chunk, element_bytes) <= max_stage;
}

StageSplit auto_stage_split(std::int64_t cols, int element_bytes, std::int64_t piece, bool peel) {
  // The stage (whole granules) a program of `splits` holds: its chunk, or the chunk's window.
  auto stage = [&](std::int64_t splits, std::int64_t max_stage) {
    const std::int64_t chunk = cluster_chunk(cols, splits);
    return stage_cols_for(stage_windowed(chunk, element_bytes, peel, max_stage) ? window_cols(chunk, element_bytes) : chunk);
  };
  const std::int64_t fewest = std::max<std::int64_t>(1, (cols + piece - 1) / piece);
  if (fewest <= kMaxPortableClusterSize) return {fewest, stage(fewest, kStageMaxCols)};
  const std::int64_t eight = stage(kMaxPortableClusterSize, kStageMaxCols);
  if (eight <= kStageMaxCols && stages_per_sm(eight * element_bytes) >= kStagedWidePrograms) return {kMaxPortableClusterSize, eight};
  return {kMaxClusterSize, stage(kMaxClusterSize, kClusterStageMaxCols)};
}

bool stages_hold(const Target& target, std::int64_t cols, std::int64_t piece) {
  return cols <= piece || (cols <= 8 * piece && target.clusters);
}

bool staged_over_looped(const Target& target, std::int64_t rows, std::int64_t row_bytes, bool staged_holds, std::int64_t loop_block,
                        const Tuning& tuning) {
  return staged_holds && !looped_rereads_fit_l2(target, rows, row_bytes, looped_shape(tuning, loop_block).warps, tuning);
}

SplitPlan split_plan(const Target& target, std::int64_t rows, std::int64_t cols, int element_bytes, std::int64_t piece,
                     std::int64_t max_splits, const Tuning& tuning) {
  const std::int64_t most = std::clamp<std::int64_t>((cols + piece - 1) / piece, 1, max_splits);
  if (!target.gpu) return {std::min<std::int64_t>(2, most), rows};
  const std::int64_t sms = std::max(1, target.sm_count);
  // The group first (its rows fill at most kL2ReusePercent of the L2; the rows spread evenly over as few
  // groups as that takes, so that no last group of a few rows leaves most SMs idle), then the splits that
  // give a launch over the group at most 4 programs per SM (Tuning::split_programs_per_sm: what the
  // kernels' registers let an SM hold at once, so that no program waits for a second wave), then the
  // group again if its partials outgrow the workspace.
  const std::int64_t row_bytes = cols * element_bytes;
  const std::int64_t group_bytes = tuning.split_group_bytes.value_or(target.l2_bytes * kL2ReusePercent / 100);
  const std::int64_t by_l2 = group_bytes > 0 ? std::max<std::int64_t>(1, group_bytes / row_bytes) : rows;
  const std::int64_t groups = (rows + by_l2 - 1) / by_l2;
  const std::int64_t per_sm = tuning.split_programs_per_sm.value_or(4);
  SplitPlan plan;
  plan.group = std::clamp<std::int64_t>((rows + groups - 1) / groups, 1, rows);
  plan.splits = std::clamp<std::int64_t>(per_sm * sms / plan.group, 1, most);
  plan.group = std::clamp<std::int64_t>(std::min(plan.group, workspace_partials(sms) / plan.splits), 1, rows);
  return plan;
}

int split_combine_rows(const Tuning& tuning, std::int64_t group_rows, std::int64_t last_group_rows, int step) {
  // A program's slots past its class's rows normalize its first row again: at most an eighth of a
  // group's rows may go twice, and every offset class fills a program's rows at least once.
  auto fits = [&](int k, std::int64_t g) { return g / std::max(1, step) >= k && split_combine_programs(g, step, k) * k - g <= g / 8; };
  int k = tuning.split_combine_rows.value_or(1);
  while (k > 1 && !(fits(k, group_rows) && fits(k, last_group_rows))) k /= 2;
  return k;
}

std::int64_t split_combine_programs(std::int64_t group_rows, int step, int rows) {
  // Offset class c (rows c, c + step, ...) holds ceil((group_rows - c) / step) rows, in blocks of `rows`;
  // the classes that reach the last block row are the first ones, so program q = j * step + c covers
  // them all without an empty program.
  const std::int64_t blocks = ((group_rows + step - 1) / step + rows - 1) / rows;
  std::int64_t last = 0;
  for (int c = 0; c < step; ++c)
    if ((group_rows - c + step - 1) / step > (blocks - 1) * rows) ++last;
  return (blocks - 1) * step + last;
}

bool whole_vectors(std::int64_t cols, int element_bytes) { return (cols * element_bytes) % 16 == 0; }

namespace {
std::int64_t row_tile_bytes(std::int64_t width, int element_bytes) {
  std::int64_t tile = 1;
  while (tile < width) tile *= 2;
  return tile * element_bytes;
}
}  // namespace

bool peeled(const Tuning& tuning, std::int64_t cols, int element_bytes, bool by_default) {
  return tuning.peel.value_or(by_default) && !whole_vectors(cols, element_bytes);
}

bool packable_rows(std::int64_t width, int element_bytes) { return row_tile_bytes(width, element_bytes) <= kPackedRowBytes; }

bool packed_rows(const Tuning& tuning, std::int64_t width, std::int64_t cols, int element_bytes) {
  const std::int64_t bytes = row_tile_bytes(width, element_bytes);
  return bytes <= kPackedRowBytes && tuning.pack_rows.value_or(bytes < kPackedRowBytes || !whole_vectors(cols, element_bytes));
}

bool staged_rows(const Tuning& tuning, std::int64_t cols, int element_bytes, bool column_operands) {
  const bool few_threads_a_row = row_tile_bytes(cols, element_bytes) <= (column_operands ? 1 : 2) * kThreadRowBytes;
  return !whole_vectors(cols, element_bytes) && tuning.stage_rows.value_or(element_bytes >= 4 || few_threads_a_row);
}

bool staged_stores(const Tuning& tuning, std::int64_t cols, int element_bytes) {
  return !whole_vectors(cols, element_bytes) && tuning.stage_stores.value_or(false);
}

std::optional<PackedRows> packed_plan(const Tuning& tuning, std::int64_t cols, int element_bytes, bool column_operands, bool peel,
                                      bool peel_packed) {
  const bool staged = staged_rows(tuning, cols, element_bytes, column_operands);
  const std::int64_t window = window_cols(cols, element_bytes);
  if (!packed_rows(tuning, peel && !staged ? window : cols, cols, element_bytes)) return std::nullopt;
  PackedRows p;
  p.staged = staged;
  p.peeled = peel_packed && !staged;
  p.width = p.peeled ? window : cols;
  p.by_element = !staged && !p.peeled && !whole_vectors(cols, element_bytes);
  p.staged_store = p.by_element && staged_stores(tuning, cols, element_bytes);
  return p;
}

KernelShape packed_shape(const Tuning& tuning, std::string_view width_param, int resident_rule) {
  KernelShape shape{4, resident_programs(tuning, resident_rule, 4), 1, row_carveout(tuning)};
  if (tuning.constant_cols.value_or(true)) shape.constant = width_param;
  return shape;
}

std::int64_t window_cols(std::int64_t cols, int element_bytes) { return cols + 16 / element_bytes - 1; }

std::int64_t strided_row_programs(std::int64_t rows, const RowOptions& opt) {
  if (!opt.tuning.looped_programs_per_sm || rows <= 0) return rows;
  const Target target = tilefuse::target(opt.backend);
  if (!target.gpu) return rows;
  return std::min<std::int64_t>(rows, std::int64_t{*opt.tuning.looped_programs_per_sm} * target.sm_count);
}

}  // namespace tilefuse::kernels
