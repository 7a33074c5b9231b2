// The rules that size the sample row kernels from the row, the dtype, the target and the tuning knobs:
// warps and registers per program, programs per SM, how a wide row splits over programs or a cluster.
// The measurements behind each rule are in bench/NOTES.md.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "backend/runtime/program.hpp"
#include "backend/runtime/target.hpp"
#include "kernels/rows/options.hpp"

namespace tilefuse::kernels {

/// Percent of the SM's L1/shared array that every row kernel asks for as shared memory unless
/// Tuning::shared_carveout says otherwise: 100, the most shared memory (the L1 keeps 28 KB of sm_90's
/// 256). Measured for the staged kernels (bench/NOTES.md, staged kernels' knobs: the driver's choice no
/// faster) and over the LayerNorm sweep, whose w and b are read again for every row (H100, bench/NOTES.md
/// "The carveout"): the driver's choice (-1, shared memory as the resident programs need it, the rest L1)
/// the same (worst 0.55, median 0.88 both), 0 (the most L1) as low as 0.26, where shared memory then
/// limits the programs per SM.
inline constexpr int kRowCarveout = 100;

/// Everything about a sample kernel's KernelOptions but its parameter names: the key under which its
/// Kernel is made once.
struct KernelShape {
  int warps = 4;          ///< KernelOptions::num_warps
  int min_programs = 0;   ///< KernelOptions::min_programs_per_sm
  int cluster = 1;        ///< KernelOptions::cluster_size
  int carveout = kRowCarveout;  ///< KernelOptions::shared_carveout
  bool groups = false;    ///< KernelOptions::resident_groups
  bool min_programs_unless_spilling = false;  ///< KernelOptions::min_programs_unless_spilling
  bool evict_last = true;  ///< KernelOptions::l2_evict_last
  /// The parameter KernelOptions::constant_params compiles in; empty: none.
  std::string_view constant;
  friend auto operator<=>(const KernelShape&, const KernelShape&) = default;
  /// The KernelOptions of this shape with parameters named `params`.
  KernelOptions options(std::span<const char* const> params) const;
};

/// Throws std::invalid_argument naming the first field of `tuning` out of its range (see Tuning).
void validate(const Tuning& tuning);

/// Warps per program for a row tile of `block` elements when each thread holds `per_thread` of them;
/// 1 to 32 warps.
int row_warps(std::int64_t block, int per_thread);

/// Row elements per thread for programs that hold a row tile of `block` elements of `element_bytes` in
/// registers: 64 bytes per thread (16 f32 or 32 f16/bf16: four 16-byte accesses in flight each), but at
/// least two warps per program where the row allows it; or Tuning::row_elements. Programs have at most 32
/// warps, so a tile of 32768 holds 32 elements a thread.
int row_elements_per_thread(const Tuning& tuning, int element_bytes, std::int64_t block);

/// A row kernel for a row tile of `block` elements of `element_bytes`, asking for room for
/// `resident_rule` threads per SM (0: none) unless Tuning::resident_threads says otherwise.
KernelShape row_shape(const Tuning& tuning, int element_bytes, std::int64_t block, int resident_rule = 0);

/// Programs of `warps` warps per SM that the launch bounds ask room for: Tuning::resident_threads, else
/// `resident_rule`, threads per SM (0: no request), as row_shape asks them.
int resident_programs(const Tuning& tuning, int resident_rule, int warps);

/// A kernel that loops over a row in pieces of `block`: 16 elements per thread for every dtype (the
/// 64-byte rule of row_shape is for rows held in registers); its first pass reads evict-last where
/// Tuning::keep_rows_in_l2 allows (the rule: yes).
KernelShape looped_shape(const Tuning& tuning, std::int64_t block);
/// The split-row kernels' shape: looped_shape's, with the partials' reads evict-last only where
/// Tuning::keep_rows_in_l2 asks (the rule: no; measured, bench/NOTES.md).
KernelShape split_shape(const Tuning& tuning, std::int64_t block);

/// Widest row held as pieces that takes the 64-bytes-a-thread rule of row_elements_per_thread; wider
/// ones take 16 warps (pieces_shape).
inline constexpr std::int64_t kWideRowElements = 16384;

/// Past kWideRowElements, a row that row_pieces holds as one tile (32768 columns) takes a program of 32
/// warps that runs alone on its SM: the row's loads and its reductions (two block-wide sums, the
/// normalization) follow one another with no other program to fill DRAM's idle time between. Such a
/// program keeps up only where loading its row at the SM's share of the bandwidth takes at least this
/// long. Measured (bench/NOTES.md): half rows of 29856-32768 columns (58-64 KB: 2.3-2.6 us a row on an
/// H100, 1.6-1.8 us on an H200) ahead of the looped and staged kernels on the H100 and behind them on the
/// H200; f32 rows of 32768 (128 KB, 3.5 us on the H200) ahead on both.
inline constexpr std::int64_t kOneTileMinLoadNs = 2000;
/// Whether a program holding a row of `row_bytes` as one tile alone on its SM keeps DRAM busy on `target`
/// (kOneTileMinLoadNs); true where the bandwidth is unknown (Target::memory_bandwidth 0) and for the
/// interpreter.
bool one_tile_keeps_dram_busy(const Target& target, std::int64_t row_bytes);
/// The one-program rule of both families for rows of `cols` columns read from their start: rows held as
/// pieces (row_pieces) always, rows held as one tile where one_tile_keeps_dram_busy.
bool held_row_keeps_dram_busy(const Target& target, std::int64_t cols, int element_bytes);

/// A row kernel that holds its row as `pieces` tiles of `piece` elements of `element_bytes`: the row's
/// elements per thread (row_elements_per_thread, or past kWideRowElements columns the row / 512 of 16
/// warps) split over the pieces and rounded up to a power of two per piece (at least two warps where the
/// piece allows) set the warps, asking room for `resident_rule` threads per SM as row_shape does; one
/// piece is row_shape.
KernelShape pieces_shape(const Tuning& tuning, int element_bytes, std::int64_t piece, int pieces, int resident_rule = 0);

/// The carveout of the row kernels: Tuning::shared_carveout, else kRowCarveout.
int row_carveout(const Tuning& tuning);

/// A staged kernel of `warps_rule` warps (or Tuning::staged_warps) whose programs hold `stage_bytes` of
/// shared memory: ptxas is asked to fit as many programs per SM as the H100/H200's 228 KB of shared
/// memory holds (each block also takes 1 KB of the driver's), so that registers do not become the tighter
/// limit.
KernelShape staged_shape(const Tuning& tuning, std::int64_t stage_bytes, int warps_rule);

/// Warps of a staged program (the rule staged_shape takes; Tuning::staged_warps overrides it): 2 for rows
/// that are whole vectors, 4 for rows copied through windows (`peel`), whose copy and passes spend more
/// instructions per element at both ends of each chunk. Measured for both families by forcing 2, 4 and 8
/// over the sweep's staged rows (bench/NOTES.md, staged warps).
int staged_warps_rule(bool peel);

/// Programs whose stages take `stage_bytes` each that the H100/H200's 228 KB of shared memory holds on one
/// SM (each block also takes 1 KB of the driver's): what staged_shape asks ptxas to fit.
std::int64_t stages_per_sm(std::int64_t stage_bytes);

/// How a row is spread over a thread-block cluster: `splits` programs of `chunk` columns each.
struct ClusterSplit {
  std::int64_t splits, chunk;
};

/// Checks a cluster kernel's shape and splits each row: `splits` programs (0: the fewest that hold a
/// row, at most `max_piece` columns each; else 1 to `max_splits`, 8 unless a caller allows Hopper's
/// non-portable clusters of up to 16) of chunk columns, a multiple of 8 so that every piece starts 16-byte
/// aligned. Errors name the kernel and, for too wide rows, `alternative`.
ClusterSplit cluster_split(const char* kernel, const char* alternative, std::int64_t rows, std::int64_t cols,
                           std::int64_t splits, std::int64_t max_piece, std::int64_t max_splits = kMaxPortableClusterSize);

/// Checks the `splits` of a split-row kernel (1 to max_splits) and returns each program's chunk: whole
/// pieces of `block` columns, so every piece but a row's last is full and aligned.
std::int64_t split_row_chunk(const char* kernel, std::int64_t cols, std::int64_t splits, std::int64_t max_splits,
                             std::int64_t block);

/// How a split-row launch spreads rows over the GPU: `splits` programs per row, in launches of `group`
/// rows each.
struct SplitPlan {
  std::int64_t splits = 1;
  std::int64_t group = 1;
};

/// Whether the automatic choice splits rows over programs: on a GPU, when the read-once choice would run
/// `programs` (rows x its programs per row) below 2 per SM, and rows are at least two `piece`s wide.
bool few_rows(const Target& target, std::int64_t programs, std::int64_t cols, std::int64_t piece);

/// Percent of the L2 that data a kernel means to read again from there may fill: the rows in flight of
/// the looped kernels (looped_rereads_fit_l2), the group of rows one launch pair of the split kernels
/// covers (split_plan). The rest holds the outputs on their way to memory and what other reads bring in.
/// Measured on the H200 (60 MB): the looped kernels ahead of the staged ones up to 47 MB in flight and
/// behind from 56 MB; split groups of up to 50 MB ahead of 30 MB ones where they take fewer launches, and
/// behind where one filled 96% of the L2 (bench/NOTES.md).
inline constexpr std::int64_t kL2ReusePercent = 80;

/// The split-row plan of the automatic choice: whole `piece`s per program and enough programs for about 4
/// per SM (at most `max_splits` per row); groups of rows that fill at most kL2ReusePercent of the L2
/// (or Tuning::split_group_bytes), so that the second kernel of a group reads its rows again from there,
/// and whose partials fit the library's workspace. In the interpreter: 2 splits, one group.
SplitPlan split_plan(const Target& target, std::int64_t rows, std::int64_t cols, int element_bytes, std::int64_t piece,
                     std::int64_t max_splits, const Tuning& tuning = {});

/// SMs of one GPC on Hopper (at most 18): a thread-block cluster runs on the SMs of one GPC, so a GPC
/// whose program slots are not a multiple of the cluster size leaves some empty, up to a cluster less
/// one per GPC; kernels that stride clusters over rows launch no more clusters than the rest holds
/// (strided_programs, where the driver cannot count resident clusters itself), since a cluster that
/// cannot start with the others runs its rows after them.
inline constexpr int kSmsPerGpc = 18;

/// Threads per SM the looped-kernel rule below counts as resident when Tuning::resident_threads is unset:
/// 1024, what ptxas's 64 registers per thread leave for the looped kernels of whole-vector rows (those
/// of windows take 76-80 and keep 768: the rule counts more rows in flight than run, erring to read once).
inline constexpr int kLoopedResidentThreads = 1024;
/// The most programs Tuning::looped_groups shares a row among.
inline constexpr int kMaxLoopedGroup = 4096;

/// Whether the automatic choice sends rows too wide for one program to the looped kernel (which reads a
/// row twice) rather than to a staged one (which reads it once): when the second pass finds the row in
/// the L2, i.e. the rows in flight at once (the looped programs of `warps` warps resident on every SM,
/// kLoopedResidentThreads or Tuning::resident_threads a SM, at most Tuning::looped_programs_per_sm, and
/// no more than `rows`) times `row_bytes` fill at most kL2ReusePercent of the L2, and the launch fills
/// the GPU (two rows a SM at least). Past that the second pass reads DRAM again and the staged kernel
/// moves fewer bytes. The interpreter (no L2, no SMs): yes, the looped kernels run on every target.
bool looped_rereads_fit_l2(const Target& target, std::int64_t rows, std::int64_t row_bytes, int warps, const Tuning& tuning = {});

/// Programs of a thread-block cluster that share each row of the looped kernels unless
/// Tuning::looped_cluster says otherwise: 1 where one program per row keeps its rows in flight within
/// kL2ReusePercent of the L2 (looped_rereads_fit_l2), where rows are few (fewer than two a SM: a cluster
/// per row would leave SMs idle; the split kernels' class) and without clusters; else the fewest of 2, 4
/// and 8 whose clusters keep few enough rows in flight (8 where none does). The automatic choice sends
/// such rows to the looped kernel only where no staged cluster holds them (LayerNorm's rows of over 512
/// KB; the softmax's past its wide staged plan, softmax_staged_fits): there clusters of 4 and 8 measured
/// +0.06 to +0.09 x copy over one program per row (1186x147408 f32, H100; the softmax's 8 stages of 80 KB
/// a further +0.16); where staged clusters or one program per row take the rows, they lost
/// (bench/NOTES.md, "Looped rows over clusters").
int looped_cluster_rule(const Target& target, std::int64_t rows, std::int64_t row_bytes, int warps, const Tuning& tuning = {});

/// Programs an SM that the stages of the automatic choice's staged clusters of up to 8 must leave
/// (auto_stage_cols): three, what stages of 64 KB leave; such stages beat the looped kernels where stages
/// of 128 KB (one program an SM) lost to them (softmax, bench/NOTES.md), and LayerNorm's rows of 256-512
/// KB, staged in stages of 47-64 KB, ran 0.03-0.04 x copy ahead of looped.
inline constexpr std::int64_t kStagedMinPrograms = 3;

/// Columns of `element_bytes` one staged program of the automatic choice holds: the widest stage of whole
/// kStageGranule columns that leaves kStagedMinPrograms programs an SM (stages_per_sm; 16384 f32 or 32768
/// half columns), or Tuning::stage_bytes where larger, at most kStageMaxCols.
std::int64_t auto_stage_cols(int element_bytes, const Tuning& tuning);

/// Programs an SM that the stages of a staged softmax must leave where its rows are wider than 8 of
/// auto_stage_cols' stages (auto_stage_split's plan), and the waves of such programs its launch must run:
/// forced onto those rows, 8 stages of 80-96 KB (two an SM) gained 0.08-0.16 x copy over the looped and
/// split kernels where the launch ran several waves, and drew or lost under two (H100, bench/NOTES.md
/// "Staged stages counted in programs an SM, and waves").
inline constexpr std::int64_t kStagedWidePrograms = 2;
inline constexpr std::int64_t kStagedWideMinWaves = 2;

/// Columns of one stage of a staged family whose own stage is `stage_bytes`: Tuning::stage_bytes where
/// set, at most kStageMaxCols.
std::int64_t stage_piece(const Tuning& tuning, std::int64_t stage_bytes, int element_bytes);

/// Columns of each program's chunk of a row of `cols` over `splits` programs: whole multiples of 8, so
/// that every chunk of a whole-vector row starts 16-byte aligned.
std::int64_t cluster_chunk(std::int64_t cols, std::int64_t splits);

/// Whether a staged program copies its chunk of `chunk` columns from the vector boundary before it: where
/// the family's rule `peel` says so and the chunk's window fits a stage of `max_stage` columns.
bool stage_windowed(std::int64_t chunk, int element_bytes, bool peel, std::int64_t max_stage);

/// How a staged launch whose splits are left to it holds rows of `cols`: `splits` programs a row, each
/// with a stage of `stage_cols` (whole kStageGranule columns, what with_stage compiles).
struct StageSplit {
  std::int64_t splits, stage_cols;
};

/// The plan of a staged launch whose splits are left to it (staged_plan): the fewest programs of at most
/// `piece` columns, up to 8; past 8 pieces a cluster of 8 where its stages leave kStagedWidePrograms an
/// SM, else of 16 (kMaxClusterSize, stages up to kClusterStageMaxCols; rows past 16 of those are refused
/// by cluster_split). `peel`: the family's window rule for the row (stage_windowed).
StageSplit auto_stage_split(std::int64_t cols, int element_bytes, std::int64_t piece, bool peel);

/// Whether a staged kernel whose programs hold up to `piece` columns takes rows of `cols` on `target`:
/// one program, or a cluster of up to 8 where the target runs clusters.
bool stages_hold(const Target& target, std::int64_t cols, std::int64_t piece);

/// The automatic choice between a family's staged kernel and its looped one (pieces of `loop_block`,
/// looped_shape) for rows of `row_bytes` too wide for one program: staged where the family's rule says its
/// stages hold the row (`staged_holds`: stages_hold, and for the softmax its wide plan) and the looped
/// kernel's second pass would not find its rows in the L2 (looped_rereads_fit_l2).
bool staged_over_looped(const Target& target, std::int64_t rows, std::int64_t row_bytes, bool staged_holds, std::int64_t loop_block,
                        const Tuning& tuning);

/// Rows a program of the split LayerNorm's second kernel normalizes over groups of `group_rows` rows (the
/// last of `last_group_rows`) whose windows share their offset into a vector every `step` rows (a vector's
/// elements for rows through windows, else 1): Tuning::split_combine_rows (the rule: 1), halved until
/// every offset class of a group holds that many rows and the programs' spare slots (which normalize a
/// row again) are at most an eighth of the group.
int split_combine_rows(const Tuning& tuning, std::int64_t group_rows, std::int64_t last_group_rows, int step);

/// Programs along the first axis of that kernel's launch over `group_rows` rows, `rows` a program, rows
/// `step` apart in a program (layernorm_combine_rows_program): program q = j * step + c takes rows c + (j *
/// rows + i) * step, and every program has at least its first row.
std::int64_t split_combine_programs(std::int64_t group_rows, int step, int rows);

/// Whether every row of `cols` elements of `element_bytes` is a whole number of 16-byte vectors (each row
/// then starts on a vector boundary wherever the matrix does).
bool whole_vectors(std::int64_t cols, int element_bytes);

/// Whether rows of `cols` elements of `element_bytes` are read through aligned windows (RowWindow in
/// kernels/rows/programs.hpp): rows that are not a whole number of 16-byte vectors, when Tuning::peel (or,
/// unset, the family's rule `by_default`) says so. Rows that are start at a vector boundary wherever the
/// matrix does.
bool peeled(const Tuning& tuning, std::int64_t cols, int element_bytes, bool by_default = true);

/// Widest row tile (bytes) the narrow-row kernels hold several of per program: a one-warp program of a
/// tile this wide holds one 16-byte vector a lane.
inline constexpr std::int64_t kPackedRowBytes = 512;

/// Whether a row tile of `width` columns of `element_bytes` may go several to a program (the tile, a power
/// of two, at most kPackedRowBytes).
bool packable_rows(std::int64_t width, int element_bytes);

/// Whether rows of `cols` elements of `element_bytes`, whose tile is `width` columns (the row, or its
/// aligned window), go several to a program: where packable_rows, as Tuning::pack_rows says; unset, where
/// a one-warp program per row would hold less than one 16-byte vector a lane (tiles under
/// kPackedRowBytes), or where the rows are not whole vectors (one to a program, the row's ends go element
/// by element).
/// Measured for both families (H200, bench/NOTES.md "Which narrow rows to pack"): packed LayerNorm rows of
/// 256-byte tiles 0.2 x copy faster, aligned rows of 512-byte tiles 0.1 slower.
bool packed_rows(const Tuning& tuning, std::int64_t width, std::int64_t cols, int element_bytes);

/// Row tile bytes (a power of two) at or under which a packed program (8 KB of rows over 128 threads,
/// kRowsPerProgram, packed_shape) has a thread for each of its rows.
inline constexpr std::int64_t kThreadRowBytes = 8192 / 128;

/// Whether packed rows of `cols` elements of `element_bytes` move through shared memory (StagedRows):
/// rows that are not a whole number of 16-byte vectors, when Tuning::stage_rows says so; unset, f32 rows
/// (row by row they move 4 bytes per lane; staged, 16), and half rows whose tile has a thread per row
/// (kThreadRowBytes) or, for a family without per-column operands (`column_operands` false: the
/// softmax, whose gathered tile holds whole rows per thread, passes: thread_lines_layout), a row over
/// two threads (one shuffle per reduction). Row by row, such rows write partial sectors that hold the
/// L2 busy; wider half rows measured slower staged (H200, bench/NOTES.md "Narrow rows through shared
/// memory", "Narrow rows copied into the stage").
bool staged_rows(const Tuning& tuning, std::int64_t cols, int element_bytes, bool column_operands);

/// Whether packed rows of `cols` elements of `element_bytes` read row by row are written through shared
/// memory (Tuning::stage_stores; unset: no): rows that are not a whole number of 16-byte vectors, whose
/// element-by-element stores write partial sectors.
bool staged_stores(const Tuning& tuning, std::int64_t cols, int element_bytes);

/// How a family's one-program launcher holds narrow rows several to a program (packed_plan).
struct PackedRows {
  std::int64_t width = 0;     ///< columns the tile holds: the row's, or its aligned window's (`peeled`)
  bool staged = false;        ///< the program's rows as one run through shared memory (staged_rows)
  bool peeled = false;        ///< each row through its aligned window (RowBlock's PEEL)
  bool by_element = false;    ///< read row by row element by element: not staged, not peeled, not whole vectors
  bool staged_store = false;  ///< read by element, written through shared memory (staged_stores)
};

/// The packed plan of both families for rows of `cols` elements of `element_bytes`, or nullopt where
/// they go one to a program (packed_rows). `peel` is the family's window rule for the rows (peeled,
/// norm_peeled): where it holds, rows not staged are tested for packing at their window's width;
/// `peel_packed` says whether packed rows then go through their windows (the softmax's rule reads its
/// packed rows from their own starts: a window's two end runs go lane by lane in every row, measured
/// slower, bench/NOTES.md "narrow rows in lane-spaced runs"). `column_operands`: as staged_rows.
std::optional<PackedRows> packed_plan(const Tuning& tuning, std::int64_t cols, int element_bytes, bool column_operands, bool peel,
                                      bool peel_packed);

/// The narrow-row kernels' shape: four warps (a program holds 8 KB of rows, kRowsPerProgram),
/// `resident_rule` threads per SM unless Tuning::resident_threads says otherwise (0: ptxas's choice), and
/// the row width, parameter `width_param`, compiled in where Tuning::constant_cols says so.
KernelShape packed_shape(const Tuning& tuning, std::string_view width_param, int resident_rule = 0);

/// Columns the aligned window of a row of `cols` elements of `element_bytes` spans at most: the row and
/// the up to one vector less one element before it.
std::int64_t window_cols(std::int64_t cols, int element_bytes);

/// Programs a row kernel that strides over its rows (`for row in [pid, rows) by programs`) is launched
/// with: one per row, or with Tuning::looped_programs_per_sm = k at most k per SM of a GPU, so that fewer
/// rows are in flight and a second pass finds more of its row in L2.
std::int64_t strided_row_programs(std::int64_t rows, const RowOptions& opt);

}  // namespace tilefuse::kernels
