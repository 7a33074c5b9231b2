// IR -> CUDA C++ source for a launch of one thread block per program. Produces a string only: no CUDA
// headers are needed to generate it, and the output is deterministic (golden tests compare it). What the
// program means for this specialization (layouts, vector widths, folded masks) comes from
// passes::analyze; the generator spells it out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/ir/ir.hpp"
#include "backend/passes/analysis/analysis.hpp"

namespace tilefuse::codegen {

/// What code generation is told beyond the IR and its analysis.
struct Options {
  int num_warps = 4;  ///< threads per program = 32 * num_warps
  /// Programs packed into one thread block along axis 0 (one warp each; needs num_warps == 1). Above 1,
  /// the kernel takes one extra trailing int parameter: the number of programs along axis 0.
  int programs_per_block = 1;
  /// Programs per SM the register allocation must allow (becomes __launch_bounds__'s minimum blocks, up
  /// to 32); 0: none.
  int min_programs_per_sm = 0;
  /// Programs (thread blocks) per cluster along axis 0, for cluster reductions; 1: no clusters.
  int cluster_size = 1;
  /// Cluster reductions combine over groups of co-resident programs through global memory
  /// (KernelOptions::resident_groups): the kernel takes five more trailing parameters, after the
  /// packed-program count if any: the group workspace (prelude/group.cuh) as `unsigned* tf_group_count`
  /// and `unsigned* tf_group_next` (this launch's arrival counts and the next one's) and `float*
  /// tf_group_values`, then `int tf_group` (programs per group along axis 0) and `int tf_group_slots`
  /// (the counts in each array).
  bool resident_groups = false;
  /// Programs with 2D tiles: buffers per shared-memory copy a loop's dots read (KernelOptions::num_stages).
  int num_stages = 2;
  /// Debug bounds checks (TILEFUSE_DEBUG_BOUNDS=1): every global access is checked against its argument's
  /// element count (bounds.hpp). The kernel takes two more trailing parameters, after the packed-program
  /// count if any: `TfCounts tf_counts` (each parameter's element count, by value) and `TfFault* tf_fault`.
  bool bounds_checks = false;
  /// Tile division rounds correctly (IEEE) instead of through div.full.f32 (KernelOptions::precise_division).
  bool precise_division = false;
  /// Pipelined loads of row-major matrix blocks in kernels on warpgroup MMA are copied by TMA, and a last
  /// store of such a block goes out through TMA (KernelOptions::tma; see Generated::tensor_maps).
  bool tma = true;
  /// The value of each scalar parameter compiled in as a constant (KernelOptions::constant_params), by
  /// parameter index; nullopt or past the end: read from the kernel's argument.
  std::vector<std::optional<std::int64_t>> constants;
  /// Accesses with Cache::evict_last take the L2's evict-last policy; false: they go as Cache::normal
  /// (KernelOptions::l2_evict_last).
  bool l2_evict_last = true;
};

/// The most tensor maps a kernel takes (further loads keep cp.async, stores go from registers); the
/// runtime holds as many per launch.
inline constexpr std::size_t kMaxTensorMaps = 8;

/// A 2D tensor map a kernel takes for its TMA copies or store: the matrix at pointer parameter
/// `pointer_param`, `rows_param` rows of `cols_param` elements (the row stride too), read or written in
/// boxes of `box_rows` x `box_cols` with 128-byte swizzle. The kernel takes it as a trailing `const __grid_constant__ tf_tmap`
/// parameter, after every other; the runtime encodes it from the launch's arguments.
struct TensorMap {
  int pointer_param = 0;
  int rows_param = 0;
  int cols_param = 0;
  int box_rows = 0;
  int box_cols = 0;
  ir::DType dtype = ir::DType::bf16;
};

/// A global access a bounds-checked kernel may report (Generated::access_sites).
struct AccessSite {
  std::string what;     ///< "load", "store" or "copy"
  std::string ir;       ///< the instruction as the IR prints it, with its source location
  bool masked = false;  ///< whether the access has a mask
};

/// A generated kernel: its source and the dynamic shared memory one thread block needs.
struct Generated {
  std::string source;
  std::int64_t shared_bytes = 0;
  /// Some dot runs on warpgroup MMA (wgmma): the kernel must be compiled for sm_90a, not sm_90.
  bool warpgroup_mma = false;
  /// The tensor maps of its TMA copies, in parameter order (empty: none).
  std::vector<TensorMap> tensor_maps;
  /// With bounds checks: the checked accesses by site number, each "load|store|copy <IR> [file:line]"
  /// followed by whether it is masked, for the runtime's error message.
  std::vector<AccessSite> access_sites;
};

/// The kernel for `fn` (as cuda_source) and the shared memory it needs: its stages (times the programs
/// a block packs), or for programs with 2D tiles the buffers of dot operands and the scratch of layout
/// conversions and reductions. Throws std::invalid_argument, saying what to shrink, when the tiles a
/// loop carries cannot fit in a thread's registers.
Generated generate(const ir::Function& fn, const passes::Analysis& analysis, const Options& options);

/// The extern "C" symbol of the kernel generated for `fn`.
std::string kernel_symbol(const ir::Function& fn);

/// CUDA C++ source of `fn`: a __global__ function named kernel_symbol(fn), one comment per IR statement.
/// `analysis` is passes::analyze(fn, 32 * options.num_warps, divisibility). Throws std::invalid_argument
/// for IR the generator cannot lower (bad num_warps, ops not supported with 2D tiles).
std::string cuda_source(const ir::Function& fn, const passes::Analysis& analysis, const Options& options);

}  // namespace tilefuse::codegen
