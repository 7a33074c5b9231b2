// Analyses of an optimized function for one specialization (threads per program, what the arguments
// reveal about divisibility and alignment). Each analysis is a file of its own; analyze() runs them all
// and hands code generation their results as plain data, so that the generator only spells out what was
// decided here: how tiles spread over threads, which accesses move 16 bytes at once, which masks fold.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/ir/ir.hpp"
#include "backend/passes/analysis/tile_layout.hpp"

namespace tilefuse::passes {

/// How a 1D tile of n elements is spread over a program's threads: thread t holds `per_thread` elements
/// in runs of `vector` contiguous ones; element e of thread t is tile index
/// (e / vector) * threads * vector + t * vector + e % vector. When n < threads, threads t >= n hold none.
struct TileLayout {
  int n = 1;
  int threads = 1;
  int per_thread = 1;
  int vector = 1;
};


/// What is known about an integer or pointer value: runs of `contiguity` consecutive elements each step by
/// one, and the first element of each run is divisible by `divisibility` (for pointers: its byte address);
/// `uniform` values are equal across the whole tile (scalars, splats).
struct AxisInfo {
  std::int64_t contiguity = 1;
  std::int64_t divisibility = 1;
  bool uniform = false;
  /// Known range of an integer value (every element), when `bounded`.
  bool bounded = false;
  std::int64_t min = 0, max = 0;
  /// A comparison that holds for every element (an index tile against a bound it never reaches).
  bool always_true = false;
  /// Elements are equal within aligned blocks of `constancy` (a power of two): `index < bound` with the
  /// bound a multiple of the block is all true or all false over each such block.
  std::int64_t constancy = 1;
  /// The scalar whose value every element repeats (a scalar itself, or a splat of it); -1 for others.
  ir::ValueId source = -1;
  /// When `below` >= 0: every element is at most the scalar `below` minus `headroom` (a loop's induction
  /// variable against its end, and that plus a bounded non-negative tile), so `x < below` holds when
  /// headroom >= 1.
  ir::ValueId below = -1;
  std::int64_t headroom = 0;
  /// Whether every element provably lies in [0, n) (a stage gather's or scatter's offsets inside a stage
  /// of n elements).
  bool within(std::int64_t n) const { return bounded && min >= 0 && max < n; }
};

/// AxisInfo for every value, given the divisibility (integers) or byte alignment (pointers) of each parameter.
/// An integer parameter's divisibility above 16 also bounds it from below: the runtime records more than 16
/// only for positive arguments (see Specialization), so such an argument is at least its divisibility.
std::vector<AxisInfo> analyze_axis_info(const ir::Function& fn, const std::vector<int>& param_divisibility);

/// Elements of `bytes` each that an access through pointers with axis info `info` provably moves at once:
/// runs of that many contiguous elements at an address divisible by their bytes, 16 bytes at most (the
/// rule of both the 1D layouts and the 2D loads' layouts).
int provable_run(const AxisInfo& info, int bytes);

/// Layout choice for every 1D tile size in `fn` with `threads` threads: runs as long as the widest access
/// of that size that `axis` proves contiguous and aligned (at most 16 bytes; stage accesses always 16).
std::map<std::int64_t, TileLayout> choose_layouts(const ir::Function& fn, int threads, const std::vector<AxisInfo>& axis);

/// How a vector run of a masked access is tested against its mask.
enum class RunMask : std::uint8_t {
  none,        ///< no mask to test (none given, or it holds everywhere)
  first_lane,  ///< the mask is constant over each run: its first lane decides (false: skip the run)
  last_lane,   ///< `contiguous index < uniform bound`: the run's last lane is its largest index
  every_lane,  ///< anything else: every lane of the run
};

/// How one memory access is lowered.
struct AccessPlan {
  bool masked = false;   ///< it has a mask that is not known to hold everywhere
  int vector = 1;        ///< elements moved per access (1: element by element)
  RunMask run = RunMask::none;  ///< global accesses of vector > 1: how a run is tested
  bool inside = false;   ///< stage accesses: the offset keeps the whole tile inside the stage
  bool whole = false;    ///< stage accesses: the tile lies wholly inside or wholly outside (one test)
};

/// A 1D mask that is an interval of a stepping index: element i is on where lo + lo_plus <= index[i] <
/// hi + hi_plus, with uniform bounds (`lo` or `hi` -1: no such bound). Code generation computes each run's
/// bits at once from the index at the run's first element (intervals.cpp).
struct IntervalMask {
  ir::ValueId index = -1;  ///< the index tile, stepping by one within each run of the layout; -1: not an interval
  ir::ValueId lo = -1;     ///< the lower bound (a scalar or a splat), or -1
  ir::ValueId hi = -1;     ///< the upper bound (exclusive), or -1
  int lo_plus = 0;         ///< added to lo (`index > lo` is `index >= lo + 1`)
  int hi_plus = 0;         ///< added to hi (`index <= hi` is `index < hi + 1`)
};

/// Where a value of a program with 2D tiles lives (tile_homes.cpp).
enum class Where : std::uint8_t {
  scalar,     ///< a scalar: one register, the same in every thread
  lazy,       ///< computed where it is used, in the layout the use needs (indices, masks, broadcasts)
  registers,  ///< in registers, in `layout`
  shared,     ///< a load that only feeds dot operands: copied straight to shared memory, never to registers
};
/// The home of one value.
struct TileHome {
  Where where = Where::scalar;
  TileLayout2 layout;  ///< for Where::registers
};

/// Everything code generation needs to know about a function for one specialization.
struct Analysis {
  int threads = 32;                                 ///< threads per program
  std::map<std::int64_t, TileLayout> layouts;       ///< by tile size
  std::vector<AxisInfo> axis;                       ///< by value
  std::vector<int> compare_run;                     ///< by value: comparisons equal over runs of this many lanes (else 1)
  std::vector<int> root;                            ///< by value: the pointer parameter a pointer derives from (-1)
  std::vector<bool> written;                        ///< by parameter: something stores through it
  std::vector<bool> only_stored;                    ///< by value: every use stores it (the store may round it)
  std::vector<bool> stage_owned;                    ///< by stage: each thread reads back only what it wrote
  std::unordered_map<const ir::Instr*, AccessPlan> access;  ///< by load, store and stage access
  std::vector<IntervalMask> interval;               ///< by value: masks held as bits (1D functions)
  bool matrix = false;                              ///< the function has 2D tiles (tile_homes.cpp plans it)
  /// Dots may run on sm_90's warpgroup MMA (wgmma): tile_homes gives dot results the warp grid it needs
  /// (16 rows per warp, four warps over 64 rows), and code generation uses it where the operands allow.
  bool warpgroup_mma = false;
  std::vector<TileHome> home;                       ///< by value, for matrix functions
  /// By parameter: the launch value compiled into the kernel (KernelOptions::constant_params), if any.
  std::vector<std::optional<std::int64_t>> constants;

  /// The layout of a 1D tile of type `t`.
  const TileLayout& layout(const ir::ValueType& t) const { return layouts.at(t.dims[0]); }
  /// The plan of memory access `in` (an instruction of the analyzed function).
  const AccessPlan& plan(const ir::Instr& in) const { return access.at(&in); }
};

/// Pointer roots and written parameters (pointers.cpp).
void find_pointer_roots(const ir::Function& fn, Analysis& a);
/// Values whose every use is the value operand of a store or stage_store (uses.cpp).
std::vector<bool> values_only_stored(const ir::Function& fn);
/// Stages whose every access moves tiles of one size P at offsets divisible by P (stages.cpp).
std::vector<bool> stages_owned(const ir::Function& fn, const std::vector<AxisInfo>& axis);
/// Access plans and comparison runs from the layouts and axis info (access.cpp).
void plan_accesses(const ir::Function& fn, Analysis& a);

/// Masks of 1D tiles that are intervals of a stepping index (intervals.cpp): comparisons of an index that
/// steps by one within each run of its layout with a uniform bound, and the and of a lower and an upper
/// one, for tiles of 2 to 32 elements a thread whose comparison is not already constant over each run
/// (compare_run). Needs the layouts, axis info and compare_run.
std::vector<IntervalMask> find_interval_masks(const ir::Function& fn, const Analysis& a);

/// Homes of every value of a function with 2D tiles (tile_homes.cpp): dot results in tensor-core
/// layouts, loads and stores blocked, what derives from them in theirs, index and mask arithmetic lazy.
void plan_tiles(const ir::Function& fn, Analysis& a);
/// The layout in which the pure op `in`, computed in layout `l`, reads its operand: expand the slice
/// without its new dimension, broadcast `l` without the broadcast dimensions, trans the transposed
/// layout, elementwise ops `l` itself. Code generation reads operands so, and the tile planner plans
/// loads toward it (tile_homes.cpp).
TileLayout2 operand_layout(const ir::Function& fn, const ir::Instr& in, const TileLayout2& l);
/// The layout a lazy or scalar-fed 2D or 1D value of type `t` takes by default (blocked, 16-byte runs).
TileLayout2 default_layout(const ir::ValueType& t, int warps);
/// The blocked layout of a tile of type `t` loaded by accesses of `run` elements at once
/// (blocked_layout's runs; 0 or the full 16 bytes: default_layout).
TileLayout2 access_layout(const ir::ValueType& t, int run, int warps);

/// Runs every analysis of `fn` for `threads` threads per program and the parameters' divisibility;
/// `warpgroup_mma`: the target has sm_90's warpgroup MMA and the program may use it.
/// `param_constants`: by parameter, the value compiled into the kernel, if any (Analysis::constants).
Analysis analyze(const ir::Function& fn, int threads, const std::vector<int>& param_divisibility, bool warpgroup_mma = false,
                 std::vector<std::optional<std::int64_t>> param_constants = {});

/// The warp grid {warps along m, warps along n} of a dot's [m, n] result for warpgroup MMA over `warps`
/// warps: 16 rows per warp, so each group of four consecutive warps holds 64 whole rows (one m64 wgmma)
/// and at most 256 columns; {0, 0} when the result does not spread that way (or `whole_rows` asks for
/// every row in one warp and it would take more than one warp across).
std::pair<int, int> warpgroup_grid(int m, int n, int warps, bool whole_rows);
/// Whether `l` is a dot result's layout with such a grid (16 rows per warp, warps along m in fours).
bool on_warpgroups(const TileLayout2& l);

}  // namespace tilefuse::passes
