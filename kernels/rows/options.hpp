// What a caller tells the sample row kernels: where they run, the tuning knobs (each unset one takes its
// kernel family's rule; the bench sets them for sweeps), and which variant runs. Each family's variant
// table (softmax_variants(), layernorm_variants()) lists its variants with what they need and fit; the
// automatic choice, the bench and the tests read that table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "backend/runtime/args.hpp"
#include "backend/runtime/target.hpp"

namespace tilefuse::kernels {

/// The sample kernels' tuning knobs. An unset field takes the rule of the kernel it applies to (documented
/// in docs/design.md); the bench sets them for sweeps (bench --help). Checked on use: a value out of range
/// is an std::invalid_argument naming the field.
struct Tuning {
  /// Row elements per thread of programs that hold a row in registers (a power of two, 1 to 64); the rule
  /// is 64 bytes per thread, at least two warps per program where the row allows it.
  std::optional<int> row_elements;
  /// Threads per SM ptxas must make room for (0 to 2048; 0: no request), for row, cluster and staged
  /// kernels; the rule is none for row kernels, 1536 for the cluster softmax, what the stages allow for
  /// staged kernels.
  std::optional<int> resident_threads;
  /// Warps per staged program (a power of two, 1 to 32); the rule (staged_warps_rule) is 2 for rows that
  /// are whole vectors, 4 for rows copied through windows.
  std::optional<int> staged_warps;
  /// The most shared memory one program of softmax_staged takes, which sets how many programs split a row
  /// (8192 to 131072 bytes); the rule is 32768.
  std::optional<std::int64_t> stage_bytes;
  /// Programs a row of the staged kernels (1 to 16; more than 1 is a thread-block cluster and needs
  /// sm_90; past 8, Hopper's non-portable cluster sizes, each program's stage up to kClusterStageMaxCols
  /// columns): each program stages its 1/k of the row. The rule is the fewest programs, at most 8, whose
  /// stages hold the row within stage_bytes. Clusters of 9 to 16 are not taken by any rule yet (measured
  /// first: bench/NOTES.md).
  std::optional<int> staged_cluster;
  /// Percent of the SM's L1/shared array asked for as shared memory by every row kernel (-1: the
  /// driver's choice; 0 to 100); the rule is 100 (kRowCarveout).
  std::optional<int> shared_carveout;
  /// At most this many programs per SM for the looped softmax, each striding over rows (1 to 64); the
  /// rule is one program per row.
  std::optional<int> looped_programs_per_sm;
  /// Programs of a thread-block cluster that share each row of the looped kernels (1 to 8; more than 1
  /// needs sm_90): each loops over its 1/k of the row, the row's max and sum (mean and rstd) combine over
  /// the cluster (tl::cluster_max, tl::cluster_sum), and the clusters stride over rows, no more of them in
  /// flight than kL2ReusePercent of the L2 holds, so that each row's second pass finds it there. The rule
  /// (looped_cluster_rule) is 1 where one program per row keeps its rows in flight within that share or
  /// rows are few, else the fewest of 2, 4, 8 that do.
  std::optional<int> looped_cluster;
  /// Programs that share each row of the looped kernels as a resident group instead of a thread-block
  /// cluster (0, the rule: none; 1: the fewest that keep the rows in flight, one a group, within
  /// kL2ReusePercent of the L2, and at least enough that the rows fill the programs the GPU holds; 2 to
  /// 4096: that many): each program loops over its chunk of the row twice, the max and sum (LayerNorm's
  /// shifted sums) combine through global memory (KernelOptions::resident_groups), and the groups, as many
  /// as the GPU holds at once in one cooperative launch, stride over rows. Each chunk's second pass comes
  /// from the L2 the same program filled. Measured against split on the few-rows shapes: ahead on 6 of 26,
  /// behind on most (bench/NOTES.md), so the rule never takes it; the tuners' spaces hold 1.
  std::optional<int> looped_groups;
  /// Programs per SM a launch of the split-row kernels holds at most when the automatic choice splits
  /// rows (1 to 64; the splits a row are rounded down, so that no program waits for a second wave): more
  /// splits per row, each a shorter chunk; the rule is 4.
  std::optional<int> split_programs_per_sm;
  /// Bytes of rows one launch pair of the split-row kernels covers (1 MiB to 1 GiB), so that the second
  /// kernel finds them in the L2 the first filled; the rule is kL2ReusePercent (80%) of the L2.
  std::optional<std::int64_t> split_group_bytes;
  /// Rows each program of the split LayerNorm's second kernel normalizes (1, 2 or 4; at most the group's
  /// rows that share the offset of their windows into a vector, split_combine_rows): the program reads its
  /// chunk of w and b once for all of them, where one row a program reads them once a row (element by
  /// element for rows through windows). The rule is 1: measured on the few-rows shapes, rows through
  /// windows gained up to 0.03 x copy and whole-vector half rows lost up to 0.13 (bench/NOTES.md); the
  /// LayerNorm tuner's space holds 2 and 4.
  std::optional<int> split_combine_rows;
  /// Whether rows whose width is not a whole number of 16-byte vectors are read through aligned windows
  /// (each row from the vector boundary before it, its first and last runs masked); the rule is yes for
  /// the softmax but its packed narrow rows; for LayerNorm, yes for rows of at least 2 KB (norm_peels in
  /// kernels/layernorm/launchers.hpp).
  /// Without, such rows go element by element, neighbouring threads on neighbouring elements.
  std::optional<bool> peel;
  /// Whether narrow rows (whose tile is at most kPackedRowBytes) are held several per program as one 2D
  /// tile; the rule (packed_rows) is yes for tiles under kPackedRowBytes and for rows that are not whole
  /// vectors. Without, each row is a program of its own (one-warp programs packed 8 per thread block).
  std::optional<bool> pack_rows;
  /// Whether packed narrow rows that are not a whole number of 16-byte vectors move through shared memory
  /// (the program's rows as one run of memory, 16 bytes at a time; StagedRows in kernels/rows/programs.hpp)
  /// rather than row by row; the rule (staged_rows) is yes for f32 rows and for f16/bf16 rows of the
  /// narrowest tiles. Packed that way, LayerNorm packs rows of tiles up to 512 bytes as the softmax does.
  std::optional<bool> stage_rows;
  /// Whether packed narrow rows that are not a whole number of 16-byte vectors and are read row by row
  /// (not staged) are written through shared memory: the result scattered to its place in the program's
  /// run, which goes out as whole 16-byte vectors but for its two ends (StagedRows::store); the rule is
  /// staged_stores.
  std::optional<bool> stage_stores;
  /// Whether packed narrow rows' kernels compile the row's width in (KernelOptions::constant_params): the
  /// tile's columns past it, the masks against it and the divisions by it fold away (a 256-column tile of
  /// 151 bf16 columns, LayerNorm: 1000 instructions a program -> 456, 72 registers -> 56), at one compile
  /// per distinct width (then the disk cache). The rule is yes (bench/NOTES.md, "Narrow rows with their
  /// width compiled in").
  std::optional<bool> constant_cols;
  /// Whether LayerNorm's f16/bf16 rows read through windows on one program go to programs that stride
  /// over rows sharing a window's offset, w and b copied once per program into shared memory and read
  /// from there 16 bytes at a time (layernorm_strided_program); the rule (strided_window) is yes for
  /// windows up to kNormStridedMaxCols columns of several pieces, or of one tile of at most 8 KB.
  std::optional<bool> stride_rows;
  /// Whether those strided programs copy each row into shared memory while the row before is normalized
  /// and stored (layernorm_strided_program's AHEAD), so that a program keeps a row in flight through its
  /// arithmetic; the rule (rows_ahead_pays) is yes for windows of at most 8 KB (tune_layernorm's space
  /// holds both).
  std::optional<bool> rows_ahead;
  /// Whether the staged kernels' programs (or clusters) stride over rows through two stages in turn, each
  /// row's chunk copied while the row before is read from the other stage (softmax_staged_strided_program,
  /// layernorm_staged_strided_program), as many as the SMs hold; the rule is no: measured slower than one
  /// row a program on every staged shape (two stages halve the programs an SM; bench/NOTES.md), so the
  /// tuner does not offer it either.
  std::optional<bool> stride_stages;
  /// Whether a call's launches after its first may start while the one before finishes (the split-row
  /// kernels: each group's partials read their rows while the previous group's combine kernel ends, and
  /// each combine kernel's programs are placed while its partials end; LaunchConfig::pdl, sm_90); the
  /// rule is yes. A call's first launch always waits for what the stream ran before it.
  std::optional<bool> overlap_launches;
  /// Whether LayerNorm's rows read through windows, on one program per row or looped, read w and b from
  /// shifted copies that a small kernel writes first (one per offset of a row from its window's start, so
  /// that w and b are read 16 bytes at a time under x's mask rather than element by element); the rule
  /// (shift_affine_pays) is yes for rows of halves, at least 256 of them.
  std::optional<bool> shift_affine;
  /// Whether the looped and split-row kernels' first pass over a row reads it under the L2's evict-last
  /// policy (tl::Cache::evict_last; KernelOptions::l2_evict_last), so that the second pass, or the combine
  /// kernel, finds it in the L2 rather than behind lines read since; the second pass reads it streaming,
  /// which releases it. The rule is yes for the looped kernels (looped_shape), no for the split partials
  /// (split_shape: measured slower, bench/NOTES.md).
  std::optional<bool> keep_rows_in_l2;
};

/// When the automatic choice of a sample row kernel consults the tuner (kernels/tune/tuner.hpp).
enum class TuneMode : std::uint8_t {
  off,        ///< the variant table's rules, nothing timed (the default)
  cached,     ///< a configuration tuned before for the shape's bucket (in memory or on disk), else the rules
  first_use,  ///< as cached, and a bucket met for the first time is tuned on that call's input first
};

/// Where and how a sample row kernel runs.
struct RowOptions {
  Backend backend = Backend::automatic;  ///< GPU, interpreter, or by TILEFUSE_INTERPRET
  void* stream = nullptr;                ///< CUstream for GPU launches (null: the default stream)
  Tuning tuning;                         ///< knobs for sweeps; unset: each kernel's rule
  TuneMode tune = TuneMode::off;         ///< whether RowVariant::automatic consults the tuner
};

/// The variants of a row-kernel family.
enum class RowVariant : std::uint8_t {
  automatic,    ///< chosen from the family's variant table by the row width, dtype and target
  one_program,  ///< one program per row, the row in registers (read once; up to 16384 columns)
  looped,       ///< one program per row looping over it (any width; reads twice)
  split,        ///< each row split over programs of two kernels, partials in caller scratch (reads twice)
  cluster,      ///< each row over a thread-block cluster in registers (read once; sm_90)
  staged,       ///< each row staged through shared memory (read once; clusters for wider rows, sm_90)
  /// each row staged over a group of programs resident at once, max and sum combined through global
  /// memory (read once; one cooperative launch per wave of rows the GPU's shared memory holds)
  resident,
};

/// Name of a variant ("one_program", "looped", ...).
const char* variant_name(RowVariant v);

/// One entry of a family's variant table.
struct VariantInfo {
  RowVariant variant;
  const char* entry;      ///< the launcher that runs it ("softmax_looped"), as errors name it
  const char* summary;    ///< what it does, for tables and docs
  int reads;              ///< times each input element is read from memory (1 or 2)
  bool needs_scratch;     ///< the caller passes scratch (split-row partials)
  bool needs_clusters;    ///< rows past one program need thread-block clusters (sm_90)
  std::int64_t max_cols;  ///< widest row it takes (columns); 0: any width
  /// Whether the automatic choice takes it for `rows` rows of `cols` on `opt.backend` (null: never
  /// automatic). The table is in order of preference: the first entry that fits runs.
  bool (*fits)(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt);
};

/// VariantInfo::fits of the variant the automatic choice falls back to: it takes every row.
bool always_fits(std::int64_t rows, std::int64_t cols, int element_bytes, const RowOptions& opt);

/// The entry of `variant` in a family's variant table; throws std::invalid_argument naming the family
/// when the table has none.
const VariantInfo& find_variant(std::span<const VariantInfo> table, RowVariant variant, const char* family);
/// The automatic choice: the first entry of `table` whose `fits` holds for `rows` rows of `cols` elements
/// of `element_bytes` on `opt.backend` (the table's last entry when none does).
RowVariant first_fitting(std::span<const VariantInfo> table, std::int64_t rows, std::int64_t cols, int element_bytes,
                         const RowOptions& opt);

}  // namespace tilefuse::kernels
